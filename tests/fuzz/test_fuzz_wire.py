"""Generated msgpack frames against the real gateway (ROUTER) and the device's client (DEALER),
over real ZeroMQ sockets on loopback."""
import asyncio
import itertools
import time

import msgpack
import pytest
import zmq
from hypothesis import given
from hypothesis import strategies as st

from cloud_fallback.backends.echo import EchoBackend
from cloud_fallback.gateway import Gateway
from edge_runtime.cloud_link.zmq_client import ZmqCloudClient
from edge_runtime.errors import CloudUnavailableError
from edge_runtime.protocol import (MESSAGE_TYPES, Chunk, Done, Error, Ping, Pong, ProtocolError,
                                   Request, decode, encode)
from edge_runtime.protocol.messages import PING_WANTS_LOAD
from edge_runtime.types import GenerationParams, Message
from tests.cloud_fixtures import FakeGateway, fast_cloud_config, stream_words
from tests.fuzz.fuzz_support import assert_no_errors, fuzz_settings

FIELDS = sorted({f for cls in MESSAGE_TYPES.values() for f in cls.__dataclass_fields__}
                | {"role", "content", "max_new_tokens", "temperature", "top_p", "top_k",
                   "repetition_penalty", "seed", "stop_at_sentence"})
leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 63), 2 ** 64 - 1),
                 st.floats(), st.text(max_size=20), st.binary(max_size=20),
                 st.sampled_from([0, 1, -1, 1.0, "", "user", "system", "x", "stop"]))
values = st.recursive(leaf, lambda kids: st.one_of(
    st.lists(kids, max_size=3),
    st.dictionaries(st.sampled_from(FIELDS), kids, max_size=4)), max_leaves=10)
bodies = st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=8)), values,
                         max_size=6)
versions = st.one_of(st.just(1), st.sampled_from([1.0, 0, 2, True, "1", None]))
types = st.one_of(st.sampled_from(sorted(MESSAGE_TYPES)), st.text(max_size=8))


@st.composite
def frames(draw, rid: str | None = None) -> bytes:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(max_size=200))
    if kind == 1:                                   # a valid frame, mutated
        good = bytearray(encode(Request(rid or "r", time.time() + 5,
                                        (Message("user", "hi there"),))))
        for _ in range(draw(st.integers(1, 4))):
            good[draw(st.integers(0, len(good) - 1))] = draw(st.integers(0, 255))
        return bytes(good[:draw(st.integers(1, len(good)))])
    body = draw(bodies)
    if rid is not None and draw(st.booleans()):
        body["id"] = rid
    return msgpack.packb([draw(versions), draw(types), body], use_bin_type=True)


def _decodes_or_protocol_error(data: bytes) -> None:
    try:
        decode(data)
    except ProtocolError:
        pass


@fuzz_settings(200)
@given(data=frames())
def test_decode_raises_only_protocol_errors(data):
    _decodes_or_protocol_error(data)


# -- the gateway ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gateway():
    with Gateway(EchoBackend(), "tcp://127.0.0.1:0", workers=2, queue_size=8) as gw:
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(gw.endpoint)
        yield gw, sock
        sock.close(0)
        ctx.term()


_nonces = itertools.count(1)


def _until(sock, want, limit_s: float = 15.0):
    """Receive until ``want(msg)``; other replies (to the junk) are dropped."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if sock.poll(100):
            frames = sock.recv_multipart()
            assert len(frames) == 1
            msg = decode(frames[0])            # the gateway only ever sends valid frames
            if want(msg):
                return msg
    raise AssertionError("the gateway did not answer in time")


@fuzz_settings(150)
@given(junk=st.lists(st.lists(frames(), min_size=1, max_size=3), min_size=1, max_size=4))
def test_the_gateway_survives_generated_frames_and_keeps_serving(gateway, caplog, junk):
    gw, sock = gateway
    for multipart in junk:
        sock.send_multipart(multipart)
    nonce = next(_nonces) | PING_WANTS_LOAD
    sock.send(encode(Ping(nonce)))
    assert isinstance(_until(sock, lambda m: isinstance(m, Pong) and m.nonce == nonce), Pong)
    rid = f"ok-{nonce}"
    sock.send(encode(Request(rid, time.time() + 10, (Message("user", "still here"),),
                             GenerationParams(max_new_tokens=8))))
    pieces = []
    last = _until(sock, lambda m: getattr(m, "id", None) == rid and (
        pieces.append(m.text) if isinstance(m, Chunk) else isinstance(m, (Done, Error))))
    assert isinstance(last, Done) and "".join(pieces) == "still here"
    assert not gw.stopped
    assert_no_errors(caplog)


# -- the device's client -------------------------------------------------------------------

@pytest.fixture(scope="module")
def client_side():
    loop = asyncio.new_event_loop()
    gw = FakeGateway()
    loop.run_until_complete(gw.__aenter__())
    # short: a generated reply that never ends is waited out (this bounds each example)
    client = ZmqCloudClient(fast_cloud_config(gw.endpoint, first_token_timeout_ms=150.0,
                                              stall_timeout_ms=150.0))
    loop.run_until_complete(client.start())
    yield loop, gw, client
    loop.run_until_complete(client.close())
    loop.run_until_complete(gw.stop())
    loop.close()


async def _ask(client) -> list[str]:
    return [p async for p in client.stream([Message("user", "why?")],
                                           GenerationParams(max_new_tokens=8), 3.0)]


RID = "RID-placeholder"       # replaced by the real request id when the frames are sent


@fuzz_settings(50)
@given(templates=st.lists(frames(RID), max_size=4), answer=st.integers(0, 3))
def test_the_client_takes_generated_frames_as_an_answer_or_a_typed_error(client_side, caplog,
                                                                        templates, answer):
    loop, gw, client = client_side
    placeholder = msgpack.packb(RID)

    async def replies(gw, peer, req):
        for data in templates:
            await gw.send_raw(peer, data.replace(placeholder, msgpack.packb(req.id)))
        if answer:                                      # mostly a proper answer after it
            await gw.send(peer, Chunk(req.id, 0, "ok"))
            await gw.send(peer, Done(req.id))

    gw.on_request = replies
    try:
        pieces = loop.run_until_complete(_ask(client))
        assert all(isinstance(p, str) for p in pieces)
    except CloudUnavailableError as exc:
        assert exc.code and exc.message
    gw.on_request = stream_words
    assert loop.run_until_complete(_ask(client)) == ["hello", " cloud", " world"]
    assert_no_errors(caplog)

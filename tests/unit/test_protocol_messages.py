"""Round-trip every wire message type (by introspection) and fuzz the decoder."""
from __future__ import annotations

import dataclasses
import math
import random
import typing

import msgpack
import pytest

from edge_runtime import protocol
from edge_runtime.protocol import (MESSAGE_TYPES, PROTOCOL_VERSION, Chunk, Ping, Pong,
                                   ProtocolError, Request, decode, encode)
from edge_runtime.protocol.messages import PING_WANTS_LOAD
from edge_runtime.types import GenerationParams, Message


def _sample(typ, name: str, rng: random.Random):
    """A non-default value of ``typ`` for field ``name``."""
    origin = typing.get_origin(typ)
    if typ is str:
        return f"{name}-é✓-{rng.randint(0, 9999)}"
    if typ is bool:
        return True
    if typ is int:
        return rng.randint(1, 2**40)
    if typ is float:
        return rng.uniform(1.0, 2e9)
    if origin is typing.Literal:
        return typing.get_args(typ)[-1]
    if origin is tuple:
        (item,) = [a for a in typing.get_args(typ) if a is not Ellipsis]
        return tuple(_sample(item, name, rng) for _ in range(3))
    if dataclasses.is_dataclass(typ):
        hints = typing.get_type_hints(typ)
        return typ(**{f.name: _sample(hints[f.name], f.name, rng) for f in dataclasses.fields(typ)})
    raise AssertionError(f"no sample for {typ!r}")


def _instance(cls, seed: int = 0):
    return _sample(cls, cls.__name__, random.Random(seed))


@pytest.mark.parametrize("cls", sorted(MESSAGE_TYPES.values(), key=lambda c: c.TYPE),
                         ids=lambda c: c.TYPE)
def test_every_message_type_round_trips(cls):
    msg = _instance(cls)
    frame = encode(msg)
    back = decode(frame)
    assert type(back) is cls
    assert back == msg
    assert msgpack.unpackb(frame)[:2] == [PROTOCOL_VERSION, cls.TYPE]


def test_vocabulary_is_complete_and_exported():
    exported = [getattr(protocol, name) for name in protocol.__all__]
    assert all(cls in exported for cls in MESSAGE_TYPES.values())
    assert set(MESSAGE_TYPES) == {"request", "chunk", "done", "error", "cancel", "ping", "pong"}
    for cls in MESSAGE_TYPES.values():
        assert cls.__dataclass_params__.frozen, cls


def test_optional_fields_take_defaults_when_absent():
    frame = msgpack.packb([PROTOCOL_VERSION, "request",
                           {"id": "r1", "deadline": 5, "messages": [{"role": "user", "content": "hi"}]}])
    msg = decode(frame)
    assert msg == Request(id="r1", deadline=5.0, messages=(Message("user", "hi"),),
                          params=GenerationParams(), model="")
    assert isinstance(msg.deadline, float)


def test_pong_carries_the_gateways_load_and_an_old_pong_still_decodes():
    pong = Pong(PING_WANTS_LOAD | 7, queued=3, active=4, capacity=8, prefill_ms=42.5,
                service_ms=812.0)
    assert decode(encode(pong)) == pong
    old = decode(msgpack.packb([PROTOCOL_VERSION, "pong", {"nonce": 7}]))   # older gateway
    assert old == Pong(7) == Pong(7, 0, 0, 0, 0.0, 0.0)
    assert isinstance(decode(msgpack.packb([PROTOCOL_VERSION, "pong", {
        "nonce": 1, "prefill_ms": 5}])).prefill_ms, float)


def test_pong_load_times_may_be_non_finite_but_must_be_numbers():
    """Nonsense load must not make a heartbeat unreadable: the receiver validates it."""
    nan = decode(encode(Pong(1, prefill_ms=float("nan"), service_ms=float("inf"))))
    assert math.isnan(nan.prefill_ms) and nan.service_ms == float("inf")
    neg = decode(encode(Pong(1, queued=-5, active=2**40, capacity=-1)))
    assert (neg.queued, neg.active, neg.capacity) == (-5, 2**40, -1)
    for body, fragment in (({"nonce": 1, "service_ms": "fast"}, "service_ms"),
                           ({"nonce": 1, "queued": 1.5}, "queued"),
                           ({"nonce": 1, "capacity": True}, "capacity")):
        with pytest.raises(ProtocolError, match=fragment):
            decode(msgpack.packb([PROTOCOL_VERSION, "pong", body]))


@pytest.mark.parametrize("envelope, fragment", [
    ([PROTOCOL_VERSION + 1, "ping", {"nonce": 1}], "version"),
    ([0, "ping", {"nonce": 1}], "version"),
    ([True, "ping", {"nonce": 1}], "version"),
    ([PROTOCOL_VERSION, "teleport", {}], "unknown message type"),
    ([PROTOCOL_VERSION, "ping"], "envelope"),
    ({"v": 1}, "envelope"),
    ([PROTOCOL_VERSION, "ping", {"nonce": "1"}], "nonce"),
    ([PROTOCOL_VERSION, "ping", {"nonce": True}], "nonce"),
    ([PROTOCOL_VERSION, "ping", {}], "missing"),
    ([PROTOCOL_VERSION, "ping", {"nonce": 1, "extra": 2}], "unknown field"),
    ([PROTOCOL_VERSION, "chunk", {"id": "a", "seq": 1.5, "text": "x"}], "seq"),
    ([PROTOCOL_VERSION, "chunk", {"id": b"a", "seq": 1, "text": "x"}], "id"),
    ([PROTOCOL_VERSION, "request", {"id": "a", "deadline": float("nan"), "messages": []}], "deadline"),
    ([PROTOCOL_VERSION, "request", {"id": "a", "deadline": 1, "messages": [{"role": "robot",
                                                                           "content": "x"}]}], "role"),
    ([PROTOCOL_VERSION, "request", {"id": "a", "deadline": 1, "messages": "hi"}], "messages"),
    ([PROTOCOL_VERSION, "request", {"id": "a", "deadline": 1, "messages": [],
                                    "params": {"top_k": "40"}}], "top_k"),
])
def test_invalid_envelopes_raise_protocol_error(envelope, fragment):
    with pytest.raises(ProtocolError) as err:
        decode(msgpack.packb(envelope, use_bin_type=True))
    assert fragment in str(err.value)


def test_version_mismatch_has_its_own_code_and_hint():
    with pytest.raises(ProtocolError) as err:
        decode(msgpack.packb([PROTOCOL_VERSION + 1, "ping", {"nonce": 1}]))
    assert err.value.code == "protocol_version"
    assert err.value.hint


def test_oversized_frame_is_rejected_before_parsing():
    with pytest.raises(ProtocolError, match="limit"):
        decode(b"\x93" + b"\x00" * (protocol.MAX_FRAME_BYTES + 1))


def test_encode_refuses_non_messages():
    with pytest.raises(TypeError):
        encode(Message("user", "hi"))  # type: ignore[arg-type]


def _mutations(rng: random.Random, frame: bytes) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:
        return frame[: rng.randrange(len(frame))]                       # truncated
    if kind == 1:
        b = bytearray(frame)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)                  # bit rot
        return bytes(b)
    if kind == 2:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))  # noise
    if kind == 3:
        return frame + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))  # trailing
    junk = rng.choice([None, 1, -1, 2.5, "x", b"x", [], {}, [1, 2], {"id": [1]}, 2**63,
                       msgpack.ExtType(5, b"x"), [[[]]]])
    env = msgpack.unpackb(frame, raw=False)
    body = env[2]
    if body and rng.random() < 0.7:
        body[rng.choice(sorted(body))] = junk                            # wrong field type
    else:
        env[rng.randrange(3)] = junk                                     # wrong envelope part
    return msgpack.packb(env, use_bin_type=True)


def test_fuzzed_frames_only_ever_raise_protocol_error():
    rng = random.Random(1234)
    frames = [encode(_instance(cls, seed)) for cls in MESSAGE_TYPES.values() for seed in range(3)]
    decoded = rejected = 0
    for _ in range(6000):
        bad = _mutations(rng, rng.choice(frames))
        try:
            msg = decode(bad)
        except ProtocolError:
            rejected += 1
        else:
            decoded += 1
            assert type(msg) in MESSAGE_TYPES.values()
            # whatever decodes is a valid message (compared as bytes: a NaN load time is
            # not equal to itself)
            assert encode(decode(encode(msg))) == encode(msg)
    assert rejected > 4000


def test_deeply_nested_and_non_bytes_input_raise_protocol_error():
    with pytest.raises(ProtocolError):
        decode(b"\x91" * 100_000)
    with pytest.raises(ProtocolError):
        decode("not bytes")  # type: ignore[arg-type]
    assert decode(encode(Ping(nonce=7))) == Ping(nonce=7)
    assert decode(bytearray(encode(Chunk("a", 0, "x")))) == Chunk("a", 0, "x")

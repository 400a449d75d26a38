"""ZmqCloudClient against a scriptable in-process ROUTER (tests/cloud_fixtures.FakeGateway)."""
from __future__ import annotations

import asyncio
import random

import pytest

from edge_runtime.clock import FakeClock
from benchmarks.cloud.drills import garbage_frames
from edge_runtime.cloud_link.zmq_client import ZmqCloudClient
from edge_runtime.errors import CloudUnavailableError, ConfigError
from edge_runtime.protocol import Cancel, Chunk, Done, Error, Ping, Request
from edge_runtime.types import GenerationParams, Message
from tests.cloud_fixtures import (FakeGateway, fast_cloud_config, free_tcp_endpoint,
                                  stream_words, wait_until)

pytestmark = pytest.mark.timeout(30)

ASK = [Message("user", "why is the sky blue?")]
PARAMS = GenerationParams(max_new_tokens=16)


async def collect(client: ZmqCloudClient, deadline_s: float = 2.0) -> list[str]:
    return [piece async for piece in client.stream(ASK, PARAMS, deadline_s)]


async def test_streams_an_answer_and_reports_up():
    async with FakeGateway() as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint), model="m1") as client:
            assert client.state == "up" and client.available
            assert await collect(client) == ["hello", " cloud", " world"]
            assert client.rtt_ms is not None and client.rtt_ms >= 0
    (req,) = gw.of_type(Request)
    assert req.messages == tuple(ASK) and req.params == PARAMS and req.model == "m1"


async def test_request_carries_an_absolute_deadline_from_the_injected_clock():
    clock = FakeClock(start=1_800_000_000.0)
    async with FakeGateway() as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint), clock) as client:
            await collect(client, deadline_s=2.5)
    assert gw.of_type(Request)[0].deadline == pytest.approx(1_800_000_002.5)


async def test_no_gateway_means_down_at_start_and_an_immediate_error():
    client = ZmqCloudClient(fast_cloud_config(free_tcp_endpoint()))
    await client.start()
    try:
        assert client.state == "down"
        assert not client.available
        with pytest.raises(CloudUnavailableError, match="cloud link down"):
            await collect(client)
    finally:
        await client.close()


async def test_stream_before_start_raises():
    client = ZmqCloudClient(fast_cloud_config(free_tcp_endpoint()))
    with pytest.raises(CloudUnavailableError, match="not started"):
        await collect(client)


async def test_disabled_cloud_is_down_without_connecting():
    client = ZmqCloudClient(fast_cloud_config(free_tcp_endpoint(), enabled=False))
    await client.start()
    assert client.state == "down" and "cloud.enabled" in client.down_reason
    with pytest.raises(CloudUnavailableError):
        await collect(client)
    await client.close()


async def test_slow_first_token_fails_then_late_pieces_are_dropped_and_cancel_is_sent():
    release = asyncio.Event()

    async def slow_then_fast(gw, peer, req):
        if len(gw.of_type(Request)) == 1:          # the first request answers too late
            await release.wait()
            await gw.send(peer, Chunk(req.id, 0, "LATE"))
            await gw.send(peer, Done(req.id))
        else:
            await gw.send(peer, Chunk(req.id, 0, "fresh"))
            await gw.send(peer, Done(req.id))

    async with FakeGateway(slow_then_fast) as gw:
        cfg = fast_cloud_config(gw.endpoint, first_token_timeout_ms=150)
        async with ZmqCloudClient(cfg) as client:
            with pytest.raises(CloudUnavailableError, match="no first token within 150 ms"):
                await collect(client)
            first_id = gw.of_type(Request)[0].id
            await wait_until(lambda: [c.id for c in gw.of_type(Cancel)] == [first_id])
            release.set()                            # the late answer now arrives
            await asyncio.sleep(0.05)
            assert await collect(client) == ["fresh"]
            assert client.state == "up"              # a slow answer is not a dead link


async def test_gateway_error_reply_raises_with_code_and_retryable():
    async def overloaded(gw, peer, req):
        await gw.send(peer, Error(req.id, "overloaded", "all workers busy", True))

    async with FakeGateway(overloaded) as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint)) as client:
            with pytest.raises(CloudUnavailableError, match="gateway error: overloaded") as err:
                await collect(client)
            assert err.value.retryable is True
            assert client.state == "up"
    assert not gw.of_type(Cancel)       # the gateway ended it itself: nothing to cancel


async def test_error_after_some_pieces_raises_mid_stream():
    async def half(gw, peer, req):
        await gw.send(peer, Chunk(req.id, 0, "partial"))
        await gw.send(peer, Error(req.id, "backend_error", "model crashed"))

    async with FakeGateway(half) as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint)) as client:
            pieces = []
            with pytest.raises(CloudUnavailableError, match="model crashed"):
                async for piece in client.stream(ASK, PARAMS, 2.0):
                    pieces.append(piece)
            assert pieces == ["partial"]


async def test_deadline_during_the_stream_raises_and_cancels():
    async def trickle(gw, peer, req):
        for i in range(100):
            await gw.send(peer, Chunk(req.id, i, "."))
            await asyncio.sleep(0.05)

    async with FakeGateway(trickle) as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint)) as client:
            pieces = []
            with pytest.raises(CloudUnavailableError, match="deadline exceeded"):
                async for piece in client.stream(ASK, PARAMS, 1.0):
                    pieces.append(piece)
            assert 0 < len(pieces) < 100
            await wait_until(lambda: len(gw.of_type(Cancel)) == 1)


async def test_stalled_stream_raises():
    async def stall(gw, peer, req):
        await gw.send(peer, Chunk(req.id, 0, "one"))
        await asyncio.sleep(10)

    async with FakeGateway(stall) as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint), stall_timeout_ms=150) as client:
            with pytest.raises(CloudUnavailableError, match="stalled"):
                await collect(client, deadline_s=5.0)


async def test_out_of_order_piece_is_a_gateway_error():
    async def skip(gw, peer, req):
        await gw.send(peer, Chunk(req.id, 1, "two"))

    async with FakeGateway(skip) as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint)) as client:
            with pytest.raises(CloudUnavailableError, match="piece 1 arrived when 0"):
                await collect(client)


async def test_caller_stopping_early_sends_cancel():
    async with FakeGateway() as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint)) as client:
            gen = client.stream(ASK, PARAMS, 2.0)
            assert await gen.__anext__() == "hello"
            await gen.aclose()
            await wait_until(lambda: len(gw.of_type(Cancel)) == 1)
            assert gw.of_type(Cancel)[0].id == gw.of_type(Request)[0].id


async def test_concurrent_streams_never_mix_pieces():
    async def echo_id(gw, peer, req):
        for i in range(5):
            await gw.send(peer, Chunk(req.id, i, req.messages[0].content))
            await asyncio.sleep(0)
        await gw.send(peer, Done(req.id))

    async with FakeGateway(echo_id) as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint)) as client:
            async def ask(tag: str) -> list[str]:
                return [p async for p in client.stream([Message("user", tag)], PARAMS, 2.0)]
            results = await asyncio.gather(*(ask(f"q{i}") for i in range(8)))
    assert results == [[f"q{i}"] * 5 for i in range(8)]


async def test_malformed_frames_from_the_gateway_are_ignored():
    async def junk_first(gw, peer, req):
        await gw.send_raw(peer, b"\xc1garbage")
        await gw.send(peer, Chunk(req.id, 0, "ok"))
        await gw.send(peer, Done(req.id))

    async with FakeGateway(junk_first) as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint)) as client:
            assert await collect(client) == ["ok"]


async def test_gateway_killed_mid_stream_raises_link_down():
    started = asyncio.Event()

    async def one_then_hang(gw, peer, req):
        await gw.send(peer, Chunk(req.id, 0, "first"))
        started.set()
        await asyncio.sleep(30)

    gw = FakeGateway(one_then_hang)
    await gw.__aenter__()
    client = ZmqCloudClient(fast_cloud_config(gw.endpoint, first_token_timeout_ms=20_000),
                            stall_timeout_ms=20_000)
    await client.start()
    try:
        pieces = []

        async def consume():
            async for piece in client.stream(ASK, PARAMS, 20.0):
                pieces.append(piece)

        task = asyncio.create_task(consume())
        await started.wait()
        await wait_until(lambda: pieces == ["first"])
        await gw.stop()                                      # the gateway dies
        with pytest.raises(CloudUnavailableError, match="cloud link down"):
            await task
        assert pieces == ["first"]
        assert client.state == "down" and not client.available
    finally:
        await client.close()


async def test_heartbeats_drive_state_down_and_back_up():
    clock = FakeClock()
    async with FakeGateway() as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint, health_interval_s=0.1),
                                  clock) as client:
            assert client.state == "up"
            gw.answer_pings = False                      # the gateway hangs
            # two pings it left unanswered: no pong to an earlier one is still on its way (one
            # arriving after the clock's jump would reset the silence: a CI run failed so)
            before = len(gw.of_type(Ping))
            await wait_until(lambda: len(gw.of_type(Ping)) >= before + 2)
            clock.advance(10.0)                          # 100 heartbeat intervals of silence
            await wait_until(lambda: client.state == "down")
            assert "no reply from the gateway" in client.down_reason
            assert not client.available
            with pytest.raises(CloudUnavailableError, match="cloud link down"):
                await collect(client)
            gw.answer_pings = True                       # it recovers
            await wait_until(lambda: client.state == "up")
            assert await collect(client) == ["hello", " cloud", " world"]


async def test_reconnects_when_the_gateway_comes_back_on_the_same_port():
    endpoint = free_tcp_endpoint()
    client = ZmqCloudClient(fast_cloud_config(endpoint))
    await client.start()
    try:
        assert client.state == "down"
        async with FakeGateway(endpoint=endpoint):
            await wait_until(lambda: client.state == "up")
            assert await collect(client) == ["hello", " cloud", " world"]
    finally:
        await client.close()


@pytest.mark.parametrize("endpoint", ["tcp://10.1.2.3:5555", "tcp://*:5555",
                                      "tcp://cloud.example.com:5555"])
async def test_non_loopback_without_curve_is_refused(endpoint):
    client = ZmqCloudClient(fast_cloud_config(endpoint))
    with pytest.raises(ConfigError, match="cloud.server_public_key"):
        await client.start()
    assert not client.available


async def test_non_loopback_with_allow_insecure_starts():
    client = ZmqCloudClient(fast_cloud_config("tcp://192.0.2.1:5555", allow_insecure=True,
                                              connect_timeout_ms=50))
    await client.start()
    try:
        assert client.state in ("down", "unknown")
    finally:
        await client.close()


async def test_junk_multipart_messages_from_the_gateway_never_break_the_client():
    async def junk_then_answer(gw, peer, req):
        rng = random.Random(3)
        for _ in range(300):
            await gw._sock.send_multipart([peer, *garbage_frames(rng)])
        await stream_words(gw, peer, req)

    async with FakeGateway(junk_then_answer) as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint)) as client:
            assert await collect(client) == ["hello", " cloud", " world"]
            assert client.state == "up"

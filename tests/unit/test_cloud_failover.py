"""FailoverCloudClient: several gateways, retry before the first piece, circuit breakers."""
from __future__ import annotations

import asyncio

import pytest

from edge_runtime.cloud_link.failover import FailoverCloudClient
from edge_runtime.errors import CloudUnavailableError, ConfigError
from edge_runtime.protocol import ERR_OVERLOADED, Cancel, Chunk, Done, Error, Request
from edge_runtime.types import GenerationParams, Message
from tests.cloud_fixtures import FakeGateway, fast_cloud_config, free_tcp_endpoint, wait_until

pytestmark = pytest.mark.timeout(30)

ASK = [Message("user", "why is the sky blue?")]
PARAMS = GenerationParams(max_new_tokens=16)


def answering(text: str):
    async def handler(gw, peer, req):
        await gw.send(peer, Chunk(req.id, 0, text))
        await gw.send(peer, Done(req.id, 1, 1, "stop"))
    return handler


async def overloaded(gw, peer, req):
    await gw.send(peer, Error(req.id, ERR_OVERLOADED, "queue full", True))


def client_for(*endpoints: str, **kw) -> FailoverCloudClient:
    cfg = fast_cloud_config(endpoints[0], first_token_timeout_ms=300)
    return FailoverCloudClient.from_config(cfg, endpoints, **kw)


async def collect(client, deadline_s: float = 2.0) -> str:
    return "".join([p async for p in client.stream(ASK, PARAMS, deadline_s)])


async def test_requests_are_spread_over_the_gateways():
    async with FakeGateway(answering("a")) as a, FakeGateway(answering("b")) as b:
        async with client_for(a.endpoint, b.endpoint) as client:
            assert client.state == "up"
            answers = await asyncio.gather(*(collect(client) for _ in range(6)))
    assert sorted(set(answers)) == ["a", "b"]
    assert len(a.of_type(Request)) + len(b.of_type(Request)) == 6


async def test_a_down_gateway_is_skipped():
    async with FakeGateway(answering("b")) as b:
        async with client_for(free_tcp_endpoint(), b.endpoint) as client:
            assert client.available
            assert [await collect(client) for _ in range(3)] == ["b", "b", "b"]


async def test_overloaded_gateway_is_retried_elsewhere_with_one_answer():
    async with FakeGateway(overloaded) as a, FakeGateway(answering("b")) as b:
        async with client_for(a.endpoint, b.endpoint) as client:
            answers = [await collect(client) for _ in range(4)]
            assert answers == ["b"] * 4
            assert client.retries >= 1


async def test_slow_gateway_loses_and_its_late_answer_is_never_mixed_in():
    async def slow(gw, peer, req):
        await asyncio.sleep(0.6)                  # after the 300 ms first-token timeout
        await answering("late")(gw, peer, req)

    async with FakeGateway(slow) as a, FakeGateway(answering("b")) as b:
        async with client_for(a.endpoint, b.endpoint, max_attempts=2) as client:
            client._next = 0                      # make the slow gateway the first choice
            assert await collect(client, 3.0) == "b"
            await wait_until(lambda: a.of_type(Cancel))      # the slow attempt was cancelled
            await asyncio.sleep(0.5)              # its late pieces arrive and are dropped
            assert await collect(client, 3.0) == "b"


async def test_failure_after_a_piece_is_raised_not_retried():
    async def half(gw, peer, req):
        await gw.send(peer, Chunk(req.id, 0, "half"))
        await gw.send(peer, Error(req.id, "backend_error", "boom", True))

    async with FakeGateway(half) as a, FakeGateway(answering("b")) as b:
        async with client_for(a.endpoint, b.endpoint) as client:
            client._next = 0
            pieces = []
            with pytest.raises(CloudUnavailableError, match="boom"):
                async for p in client.stream(ASK, PARAMS, 2.0):
                    pieces.append(p)
            assert pieces == ["half"] and not b.of_type(Request)


async def test_breaker_opens_and_keeps_requests_off_a_failing_gateway():
    async with FakeGateway(overloaded) as a, FakeGateway(answering("b")) as b:
        async with client_for(a.endpoint, b.endpoint, breaker_failures=2,
                              breaker_reset_s=60.0) as client:
            for _ in range(6):
                client._next = 0                  # a first: equal predictions, round robin
                for m in client._members:         # (b's fast answers would make it preferred)
                    m.first_piece_s.value, m.answer_s.value = 0.3, 1.0
                assert await collect(client) == "b"
            assert len(a.of_type(Request)) == 2          # then the circuit opened
            assert client.endpoint_states()[a.endpoint]["breaker"] == "open"


async def test_all_gateways_failing_raises_one_clear_error():
    async with FakeGateway(overloaded) as a:
        async with client_for(a.endpoint, free_tcp_endpoint(), max_attempts=3) as client:
            with pytest.raises(CloudUnavailableError, match="no gateway answered"):
                await collect(client)


async def test_nothing_reachable_is_down():
    async with client_for(free_tcp_endpoint(), free_tcp_endpoint()) as client:
        assert client.state == "down" and not client.available
        with pytest.raises(CloudUnavailableError, match="no gateway"):
            await collect(client)


def test_single_endpoint_config_still_works_and_empty_is_refused():
    cfg = fast_cloud_config("tcp://127.0.0.1:5999")
    client = FailoverCloudClient.from_config(cfg)
    assert list(client.endpoint_states()) == ["tcp://127.0.0.1:5999"]
    with pytest.raises(ConfigError, match="no cloud endpoints"):
        FailoverCloudClient([])


class _Scripted:
    """A CloudClient stand-in whose every stream fails with ``exc`` before any piece."""

    state, available, down_reason, rtt_ms = "up", True, "", None

    def __init__(self, exc: Exception) -> None:
        self.exc, self.calls = exc, 0

    def fresh_load(self):
        return None

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def stream(self, messages, params, deadline_s):
        self.calls += 1
        raise self.exc
        yield ""                                   # pragma: no cover - makes it a generator


async def test_own_send_queue_congestion_does_not_open_the_breaker():
    from edge_runtime.cloud_link.zmq_client import CONGESTED
    congested = _Scripted(CloudUnavailableError("cloud link congested", code=CONGESTED))
    client = FailoverCloudClient([("tcp://a", congested)], breaker_failures=2,
                                 retry_backoff_s=0.001)
    for _ in range(3):
        with pytest.raises(CloudUnavailableError):
            await collect(client)
    assert client.endpoint_states()["tcp://a"]["breaker"] == "closed" and congested.calls == 9


async def test_non_retryable_gateway_error_is_raised_at_once():
    bad = _Scripted(CloudUnavailableError("gateway error: bad_request: no such model",
                                          retryable=False))
    other = _Scripted(CloudUnavailableError("unused"))
    client = FailoverCloudClient([("tcp://a", bad), ("tcp://b", other)])
    client._next = 0
    with pytest.raises(CloudUnavailableError, match="bad_request"):
        await collect(client)
    assert (bad.calls, other.calls) == (1, 0)


async def test_caller_stopping_early_cancels_at_the_gateway_at_once():
    async def endless(gw, peer, req):
        for i in range(1000):
            await gw.send(peer, Chunk(req.id, i, "x"))
            await asyncio.sleep(0.01)

    async with FakeGateway(endless) as a:
        async with client_for(a.endpoint) as client:
            stream = client.stream(ASK, PARAMS, 5.0)
            assert await stream.__anext__() == "x"
            await stream.aclose()
            await wait_until(lambda: a.of_type(Cancel), timeout_s=2.0)

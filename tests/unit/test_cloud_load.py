"""Gateway load in the heartbeat: parsed and validated by ZmqCloudClient, turned into a
first-token prediction (and the gateway choice) by FailoverCloudClient."""
from __future__ import annotations

import logging
import math

import pytest

from cloud_fallback.backends.echo import EchoBackend
from cloud_fallback.gateway import Gateway
from edge_runtime.clock import FakeClock
from edge_runtime.cloud_link.failover import FailoverCloudClient
from edge_runtime.cloud_link.zmq_client import GatewayLoad, ZmqCloudClient
from edge_runtime.protocol import Pong
from edge_runtime.protocol.messages import PING_WANTS_LOAD
from edge_runtime.types import GenerationParams, Message
from tests.cloud_fixtures import FakeGateway, fast_cloud_config, wait_until

pytestmark = pytest.mark.timeout(30)

ASK = [Message("user", "why is the sky blue?")]
PARAMS = GenerationParams(max_new_tokens=16)
GOOD = Pong(PING_WANTS_LOAD | 1, queued=3, active=4, capacity=8, prefill_ms=50.0,
            service_ms=800.0)
NONSENSE = [Pong(2, queued=-1, capacity=8), Pong(2, active=100_001, capacity=8),
            Pong(2, capacity=4097), Pong(2, capacity=8, prefill_ms=float("nan")),
            Pong(2, capacity=8, service_ms=float("inf")), Pong(2, capacity=8, prefill_ms=-1.0),
            Pong(2, capacity=8, service_ms=11 * 60_000.0)]


def link(clock: FakeClock, interval_s: float = 0.5) -> ZmqCloudClient:
    return ZmqCloudClient(fast_cloud_config("tcp://127.0.0.1:5999",
                                            health_interval_s=interval_s), clock)


# -- ZmqCloudClient: parse and validate ---------------------------------------------------------

def test_a_pong_sets_rtt_and_load_until_it_is_three_beats_old():
    clock = FakeClock()
    client = link(clock)
    client._ping_sent[GOOD.nonce] = clock.monotonic()
    clock.advance(0.002)
    client._on_pong(GOOD)
    assert client.rtt_ms == pytest.approx(2.0)
    assert client.load == GatewayLoad(3, 4, 8, 0.05, 0.8, clock.monotonic())
    assert client.fresh_load() == client.load
    clock.advance(1.5)                                    # 3 x 0.5 s: still fresh
    assert client.fresh_load() is not None
    clock.advance(0.01)
    assert client.fresh_load() is None and client.load is not None


def test_a_pong_of_an_older_gateway_is_no_load_report():
    client = link(FakeClock())
    client._on_pong(Pong(1))
    assert client.load is None and client.fresh_load() is None
    assert client.bad_load_reports == 0


@pytest.mark.parametrize("pong", NONSENSE, ids=repr)
def test_nonsense_load_is_ignored_and_counted(pong):
    client = link(FakeClock())
    client._on_pong(GOOD)
    good = client.load
    client._on_pong(pong)
    assert client.load == good                            # the last good one stays
    assert client.bad_load_reports == 1


def test_nonsense_load_warns_at_most_once_a_minute(caplog):
    clock = FakeClock()
    client = link(clock)
    with caplog.at_level(logging.WARNING, "edge_runtime.cloud_link.zmq_client"):
        for pong in NONSENSE:
            client._on_pong(pong)
            clock.advance(1.0)
        assert len(caplog.records) == 1 and "nonsense load" in caplog.text
        clock.advance(60.0)
        client._on_pong(NONSENSE[0])
    assert len(caplog.records) == 2
    assert f"{len(NONSENSE) - 1} more since the last warning" in caplog.records[1].getMessage()
    assert client.bad_load_reports == len(NONSENSE) + 1 and client.load is None


class NonsenseGateway(FakeGateway):
    """A FakeGateway whose every Pong reports impossible load."""

    async def send(self, peer: bytes, msg: object) -> None:
        if isinstance(msg, Pong):
            msg = Pong(msg.nonce, queued=-3, active=2, capacity=8, prefill_ms=float("nan"),
                       service_ms=1e12)
        await super().send(peer, msg)


async def test_a_gateway_reporting_nonsense_keeps_serving_and_predictions_fall_back():
    async with NonsenseGateway() as gw:
        cfg = fast_cloud_config(gw.endpoint, health_interval_s=0.05)
        async with FailoverCloudClient.from_config(cfg) as client:
            zc = client._members[0].client
            await wait_until(lambda: zc.bad_load_reports >= 3)
            assert zc.state == "up" and zc.load is None
            pieces = [p async for p in client.stream(ASK, PARAMS, 2.0)]
            assert "".join(pieces) == "hello cloud world"
            ttft, reason = client.predict_ttft_s()
            assert math.isfinite(ttft) and "no load report" in reason


async def test_a_real_gateway_reports_its_workers_and_the_prediction_uses_them():
    with Gateway(EchoBackend(), "tcp://127.0.0.1:0", workers=3) as gw:
        cfg = fast_cloud_config(gw.endpoint, health_interval_s=0.05)
        async with FailoverCloudClient.from_config(cfg) as client:
            zc = client._members[0].client
            await wait_until(lambda: zc.fresh_load() is not None)
            assert zc.load.capacity == 3 and zc.bad_load_reports == 0
            assert [p async for p in client.stream(ASK, PARAMS, 2.0)]
            await wait_until(lambda: zc.fresh_load().service_s > 0)
            ttft, reason = client.predict_ttft_s()
            assert 0 < ttft < 0.3 and "0/3 busy" in reason and "rtt" in reason


# -- FailoverCloudClient: prediction and choice ---------------------------------------------------

class FakeLink:
    """A CloudClient stand-in with a settable load; its streams take ``first_s`` (fake clock)
    to the first piece."""

    state, available, down_reason = "up", True, ""

    def __init__(self, clock: FakeClock, load: GatewayLoad | None = None,
                 rtt_ms: float | None = None, first_s: float = 0.0) -> None:
        self.clock, self.load, self.rtt_ms, self.first_s = clock, load, rtt_ms, first_s
        self.calls = 0

    def fresh_load(self) -> GatewayLoad | None:
        return self.load

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def stream(self, messages, params, deadline_s):
        self.calls += 1
        self.clock.advance(self.first_s)
        yield "x"


def load(queued: int = 0, active: int = 0, capacity: int = 8, prefill_s: float = 0.05,
         service_s: float = 0.8) -> GatewayLoad:
    return GatewayLoad(queued, active, capacity, prefill_s, service_s, 0.0)


def test_prediction_from_the_reported_load():
    clock = FakeClock()
    client = FailoverCloudClient([("tcp://a", FakeLink(clock, load(3, 4), rtt_ms=0.3))], clock)
    ttft, reason = client.predict_ttft_s()
    assert ttft == pytest.approx(0.0003 + 0.05)           # a worker is free: no queue wait
    assert reason == "cloud ttft ~50 ms (tcp://a: 3 queued, 4/8 busy, rtt 0.3 ms)"


def test_a_full_gateway_adds_the_queue_wait():
    clock = FakeClock()
    client = FailoverCloudClient([("tcp://a", FakeLink(clock, load(10, 8), rtt_ms=1.0))], clock)
    # 18 ahead on 8 workers: 11 must finish first, one every 0.8 / 8 s
    assert client.predict_ttft_s()[0] == pytest.approx(0.001 + 0.05 + 11 / 8 * 0.8)


def test_requests_sent_since_the_last_heartbeat_count():
    clock = FakeClock()
    client = FailoverCloudClient([("tcp://a", FakeLink(clock, load(0, 0)))], clock)
    client._members[0].in_flight = 20                     # the report still says idle
    ttft, reason = client.predict_ttft_s()
    assert ttft == pytest.approx(0.05 + 13 / 8 * 0.8)
    assert "20 in flight from here" in reason and "rtt unknown" in reason


def test_without_a_usable_report_the_observed_times_are_used():
    clock = FakeClock()
    old = FakeLink(clock)                                 # an older gateway: no load
    unknown = FakeLink(clock, load(capacity=0))           # capacity unknown
    client = FailoverCloudClient([("tcp://old", old), ("tcp://unknown", unknown)], clock)
    ttft, reason = client.predict_ttft_s()
    assert ttft == pytest.approx(0.3) and "no load report" in reason
    for m in client._members:
        m.in_flight = 2                                   # capacity 1, 1.0 s per answer
    assert client.predict_ttft_s()[0] == pytest.approx(0.3 + 2 * 1.0)


def test_unknown_gateway_times_are_filled_in_from_observation():
    clock = FakeClock()
    client = FailoverCloudClient(
        [("tcp://a", FakeLink(clock, load(8, 0, prefill_s=0.0, service_s=0.0)))], clock)
    assert client.predict_ttft_s()[0] == pytest.approx(0.3 + 1 / 8 * 1.0)


def test_nothing_usable_is_infinite():
    clock = FakeClock()
    down = FakeLink(clock, load())
    down.available, down.state, down.down_reason = False, "down", "connection refused"
    client = FailoverCloudClient([("tcp://a", down)], clock)
    ttft, reason = client.predict_ttft_s()
    assert ttft == math.inf
    assert reason == "no gateway available (tcp://a: connection refused)"


def test_an_open_breaker_takes_a_gateway_out_of_the_prediction():
    clock = FakeClock()
    fast, slow = FakeLink(clock, load()), FakeLink(clock, load(20, 8))
    client = FailoverCloudClient([("tcp://fast", fast), ("tcp://slow", slow)], clock,
                                 breaker_failures=1)
    assert "tcp://fast" in client.predict_ttft_s()[1]
    client._members[0].breaker.failure()
    ttft, reason = client.predict_ttft_s()
    assert "tcp://slow" in reason and ttft > 1.0


async def test_requests_go_to_the_lowest_prediction_then_fewest_in_flight_then_round_robin():
    clock = FakeClock()
    busy, idle = FakeLink(clock, load(20, 8)), FakeLink(clock, load(0, 1))
    client = FailoverCloudClient([("tcp://busy", busy), ("tcp://idle", idle)], clock)
    for _ in range(3):
        assert [p async for p in client.stream(ASK, PARAMS, 2.0)] == ["x"]
    assert (busy.calls, idle.calls) == (0, 3)
    busy.load = load(0, 1)                                # now equal: alternate
    for _ in range(4):
        [p async for p in client.stream(ASK, PARAMS, 2.0)]
    assert (busy.calls, idle.calls) == (2, 5)


async def test_streams_feed_the_observed_first_piece_and_answer_times():
    clock = FakeClock()
    client = FailoverCloudClient([("tcp://a", FakeLink(clock, first_s=0.1))], clock)
    [p async for p in client.stream(ASK, PARAMS, 2.0)]
    member = client._members[0]
    assert member.first_piece_s.value == pytest.approx(0.3 + 0.2 * (0.1 - 0.3))
    assert member.answer_s.value == pytest.approx(1.0 + 0.2 * (0.1 - 1.0))
    assert client.predict_ttft_s()[0] == pytest.approx(member.first_piece_s.value)


def test_a_nonsense_report_leaves_the_last_good_load_until_it_goes_stale():
    clock = FakeClock()
    zc = link(clock)
    source = FakeLink(clock)
    source.fresh_load = zc.fresh_load                     # the real parsing and freshness
    client = FailoverCloudClient([("tcp://a", source)], clock)
    zc._on_pong(GOOD)
    zc._on_pong(NONSENSE[3])                              # NaN prefill: ignored
    assert zc.bad_load_reports == 1
    assert client.predict_ttft_s()[0] == pytest.approx(0.05)
    clock.advance(2.0)                                    # > 3 heartbeats: unknown
    ttft, reason = client.predict_ttft_s()
    assert ttft == pytest.approx(0.3) and "no load report" in reason

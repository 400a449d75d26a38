"""The gateway (in-process, loopback) with scripted backends, driven by a raw DEALER peer."""
from __future__ import annotations

import threading
import time

import msgpack
import pytest

from cloud_fallback.backends.echo import EchoBackend
from cloud_fallback.gateway import Gateway
from cloud_fallback.load import LoadMeter
from edge_runtime.clock import FakeClock
from edge_runtime.errors import ConfigError
from edge_runtime.protocol import Cancel, Chunk, Done, Ping, Pong, Request, encode
from edge_runtime.protocol.messages import PING_WANTS_LOAD
from edge_runtime.types import GenerationParams, Message
from tests.cloud_fixtures import Peer

pytestmark = pytest.mark.timeout(30)


class GateBackend:
    """Yields "a", then waits for ``release`` (watching ``cancel``), then yields "b"."""

    model_name = "gate"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.saw_cancel = threading.Event()

    def generate(self, messages, params, cancel):
        self.started.set()
        yield "a"
        while not self.release.wait(0.01):
            if cancel.cancelled:
                self.saw_cancel.set()
                return
        yield "b"

    def close(self) -> None:
        pass


class BrokenBackend:
    model_name = ""

    def generate(self, messages, params, cancel):
        if messages[-1].content == "boom":
            raise RuntimeError("weights corrupted")
        yield "fine"


def req(rid: str, text: str = "one two three", deadline_in: float = 5.0, clock=None,
        **params) -> Request:
    now = (clock or time).time()
    return Request(rid, now + deadline_in, (Message("user", text),), GenerationParams(**params))


@pytest.fixture
def echo_gateway():
    with Gateway(EchoBackend(), "tcp://127.0.0.1:0") as gw:
        peer = Peer(gw.endpoint)
        yield gw, peer
        peer.close()


def test_ping_is_answered_with_pong(echo_gateway):
    _, peer = echo_gateway
    peer.send(Ping(42))
    assert peer.recv() == Pong(42)


def test_streams_chunks_then_done(echo_gateway):
    _, peer = echo_gateway
    peer.send(req("r1"))
    assert peer.answer("r1") == [Chunk("r1", 0, "one"), Chunk("r1", 1, " two"),
                                 Chunk("r1", 2, " three"), Done("r1", 0, 3, "stop")]


def test_token_cap_reports_length(echo_gateway):
    _, peer = echo_gateway
    peer.send(req("r1", "a b c d e", max_new_tokens=2))
    out = peer.answer("r1")
    assert [m.text for m in out[:-1]] == ["a", " b"]
    assert out[-1] == Done("r1", 0, 2, "length")


def test_malformed_frames_are_ignored_and_service_continues(echo_gateway):
    _, peer = echo_gateway
    peer.sock.send(b"\xc1not msgpack")
    peer.sock.send(b"")
    peer.sock.send_multipart([b"two", b"frames"])
    peer.sock.send(encode(Chunk("x", 0, "a client must not send chunks")))
    peer.send(Ping(1))
    assert peer.recv() == Pong(1)


def test_request_already_past_its_deadline_is_rejected(echo_gateway):
    _, peer = echo_gateway
    peer.send(req("late", deadline_in=-1.0))
    (err,) = peer.answer("late")
    assert err.code == "deadline_exceeded" and not err.retryable


def test_unknown_model_and_duplicate_id_are_bad_requests():
    backend = GateBackend()
    with Gateway(backend, "tcp://127.0.0.1:0") as gw:
        peer = Peer(gw.endpoint)
        peer.send(Request("m", time.time() + 5, (Message("user", "x"),), model="other"))
        (err,) = peer.answer("m")
        assert err.code == "bad_request" and "'other'" in err.message
        peer.send(req("dup"))
        assert peer.recv() == Chunk("dup", 0, "a")
        peer.send(req("dup"))
        (err,) = peer.answer("dup")
        assert err.code == "bad_request" and "already in progress" in err.message
        backend.release.set()
        assert peer.answer("dup") == [Chunk("dup", 1, "b"), Done("dup", 0, 2, "stop")]
        peer.close()


def test_deadline_passing_mid_stream_cancels_the_backend():
    clock = FakeClock(start=time.time())
    backend = GateBackend()
    with Gateway(backend, "tcp://127.0.0.1:0", clock=clock) as gw:
        peer = Peer(gw.endpoint)
        peer.send(req("r", deadline_in=2.0, clock=clock))
        assert peer.recv() == Chunk("r", 0, "a")
        clock.advance(3.0)
        (err,) = peer.answer("r")
        assert err.code == "deadline_exceeded"
        assert backend.saw_cancel.wait(5)
        peer.send(Ping(9))
        assert peer.recv() == Pong(9)        # nothing else of "r" came before it
        peer.close()


def test_cancel_stops_a_running_request_without_a_reply():
    backend = GateBackend()
    with Gateway(backend, "tcp://127.0.0.1:0") as gw:
        peer = Peer(gw.endpoint)
        peer.send(req("r"))
        assert peer.recv() == Chunk("r", 0, "a")
        peer.send(Cancel("r"))
        assert backend.saw_cancel.wait(5)
        backend.release.set()
        peer.send(Ping(1))
        assert peer.recv() == Pong(1)
        peer.close()


def test_full_queue_answers_overloaded():
    backend = GateBackend()
    with Gateway(backend, "tcp://127.0.0.1:0", workers=1, queue_size=1) as gw:
        peer = Peer(gw.endpoint)
        peer.send(req("running"))
        assert peer.recv() == Chunk("running", 0, "a")     # the only worker is busy
        peer.send(req("queued"))
        peer.send(req("rejected"))
        (err,) = peer.answer("rejected")
        assert err.code == "overloaded" and err.retryable
        backend.release.set()
        assert peer.answer("running")[-1] == Done("running", 0, 2, "stop")
        assert peer.answer("queued")[-1] == Done("queued", 0, 2, "stop")
        peer.close()


def test_backend_failure_is_an_error_reply_and_the_worker_survives():
    with Gateway(BrokenBackend(), "tcp://127.0.0.1:0") as gw:
        peer = Peer(gw.endpoint)
        peer.send(req("bad", "boom"))
        (err,) = peer.answer("bad")
        assert err.code == "backend_error" and "weights corrupted" in err.message
        peer.send(req("good", "hi"))
        assert peer.answer("good") == [Chunk("good", 0, "fine"), Done("good", 0, 1, "stop")]
        peer.close()


def test_stop_answers_in_flight_requests_with_shutting_down():
    backend = GateBackend()
    gw = Gateway(backend, "tcp://127.0.0.1:0")
    gw.start()
    peer = Peer(gw.endpoint)
    try:
        peer.send(req("r"))
        assert peer.recv() == Chunk("r", 0, "a")
        gw.stop()
        (err,) = peer.answer("r")
        assert err.code == "shutting_down" and err.retryable
        assert backend.saw_cancel.wait(5)
        assert gw.stopped
    finally:
        peer.close()


@pytest.mark.parametrize("bind", ["tcp://0.0.0.0:5555", "tcp://*:5555", "tcp://eth0:5555"])
def test_non_loopback_bind_without_curve_is_refused(bind):
    with pytest.raises(ConfigError, match="CURVE"):
        Gateway(EchoBackend(), bind)


def test_unbindable_address_is_a_config_error():
    with Gateway(EchoBackend(), "tcp://127.0.0.1:0") as gw:
        with pytest.raises(ConfigError, match="cannot bind"):
            Gateway(EchoBackend(), gw.endpoint).start()


def test_requests_asking_for_too_many_tokens_are_capped():
    with Gateway(EchoBackend(), "tcp://127.0.0.1:0", max_new_tokens=2) as gw:
        peer = Peer(gw.endpoint)
        peer.send(req("r", "a b c d", max_new_tokens=100))
        out = peer.answer("r")
        assert [m.text for m in out[:-1]] == ["a", " b"] and out[-1].finish_reason == "length"
        peer.close()


# -- load in the Pong --------------------------------------------------------------------------

def load_pong(peer: Peer, nonce: int) -> Pong:
    """Ask for the load; skip whatever else arrives first."""
    peer.send(Ping(PING_WANTS_LOAD | nonce))
    while True:
        msg = peer.recv()
        if isinstance(msg, Pong) and msg.nonce == PING_WANTS_LOAD | nonce:
            return msg


def test_pong_reports_queue_workers_and_measured_times():
    backend = GateBackend()
    with Gateway(backend, "tcp://127.0.0.1:0", workers=2, queue_size=8) as gw:
        peer = Peer(gw.endpoint)
        idle = load_pong(peer, 1)
        assert (idle.queued, idle.active, idle.capacity) == (0, 0, 2)
        assert idle.prefill_ms == idle.service_ms == 0.0            # nothing measured yet
        for rid in ("r1", "r2", "r3", "r4", "r5"):
            peer.send(req(rid))
        first = {peer.recv().id for _ in range(2)}                 # both workers started
        assert len(first) == 2
        busy = load_pong(peer, 2)
        assert (busy.queued, busy.active, busy.capacity) == (3, 2, 2)
        assert busy.prefill_ms > 0 and busy.service_ms == 0.0
        backend.release.set()
        ended = set()
        while len(ended) < 5:
            msg = peer.recv()
            if isinstance(msg, Done):
                ended.add(msg.id)
        end = time.monotonic() + 5
        while (done := load_pong(peer, 3)).active and time.monotonic() < end:
            time.sleep(0.01)                    # a worker records just after its Done
        assert (done.queued, done.active) == (0, 0)
        assert done.service_ms >= done.prefill_ms > 0
        peer.close()


def test_a_bare_ping_gets_a_bare_pong_for_older_devices(echo_gateway):
    _, peer = echo_gateway
    peer.send(Ping(5))
    assert msgpack.unpackb(peer.sock.recv())[2] == {"nonce": 5}   # no load fields at all


def test_load_meter_ewmas_and_concurrent_updates():
    meter = LoadMeter(alpha=0.5)
    assert meter.snapshot() == (0, 0.0, 0.0)
    meter.started()
    meter.first_piece(100.0)                 # the first sample sets the average
    meter.finished(400.0)
    meter.started()
    meter.first_piece(200.0)
    meter.finished(None)                     # cancelled: no service time
    assert meter.snapshot() == (0, 150.0, 400.0)
    meter.first_piece(0.0)                   # measured, never reported as "unknown"
    assert meter.snapshot()[1] > 0

    def hammer() -> None:
        for _ in range(2000):
            meter.started()
            meter.first_piece(10.0)
            meter.finished(20.0)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert meter.snapshot()[0] == 0


def test_warm_up_measures_the_backend_so_the_first_pong_reports_times():
    gw = Gateway(EchoBackend(delay_s=0.005), "tcp://127.0.0.1:0", workers=2)
    assert gw.pong(1 | PING_WANTS_LOAD).prefill_ms == 0.0      # unknown before
    assert gw.warm_up()
    pong = gw.pong(1 | PING_WANTS_LOAD)
    assert pong.prefill_ms > 0 and pong.service_ms >= pong.prefill_ms
    assert pong.active == 0 and pong.capacity == 2


class UnreachableBackend(EchoBackend):
    def generate(self, messages, params, cancel):
        raise ConnectionRefusedError("no server on 127.0.0.1:8000")


def test_a_failed_warm_up_still_serves_with_unknown_times():
    gw = Gateway(UnreachableBackend(), "tcp://127.0.0.1:0")
    assert not gw.warm_up()
    assert gw.pong(1 | PING_WANTS_LOAD).prefill_ms == 0.0

"""Gateway robustness: junk floods are counted and rate-limited in the log; a stop while a
worker is stuck in the backend never hangs."""
from __future__ import annotations

import logging
import threading
import time

import pytest

from cloud_fallback.backends.echo import EchoBackend
from cloud_fallback.gateway import Gateway
from benchmarks.cloud.drills import fuzz_gateway
from edge_runtime.protocol import Done, Request
from edge_runtime.types import GenerationParams, Message
from tests.cloud_fixtures import Peer

pytestmark = pytest.mark.timeout(30)


def test_junk_flood_is_counted_logged_once_and_service_continues(caplog):
    with Gateway(EchoBackend(), "tcp://127.0.0.1:0") as gw:
        with caplog.at_level(logging.WARNING, logger="cloud_fallback.gateway"):
            assert fuzz_gateway(gw.endpoint, messages=500) == 0     # junk gets no reply
        peer = Peer(gw.endpoint)
        try:
            peer.send(Request("ok", time.time() + 5, (Message("user", "still here"),)))
            assert isinstance(peer.answer("ok")[-1], Done)
        finally:
            peer.close()
        assert gw.malformed_count >= 500
    junk_lines = [r for r in caplog.records if "ignoring" in r.getMessage()]
    assert 1 <= len(junk_lines) <= 3               # one per second at most, not 500


class StuckBackend:
    """Blocks (ignoring cancel, like a hung HTTP read) until ``release``, then fails."""

    model_name = ""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()

    def generate(self, messages, params, cancel):
        self.started.set()
        self.release.wait(10)
        raise RuntimeError("the server hung up")
        yield ""                                   # pragma: no cover

    def close(self) -> None:
        pass


def test_stop_while_a_worker_is_stuck_does_not_hang_the_worker(caplog):
    backend = StuckBackend()
    gw = Gateway(backend, "tcp://127.0.0.1:0")
    before = set(threading.enumerate())
    gw.start()
    mine = [t for t in threading.enumerate() if t not in before]
    peer = Peer(gw.endpoint)
    try:
        peer.send(Request("r", time.time() + 30, (Message("user", "x"),), GenerationParams()))
        assert backend.started.wait(5)
        stopper = threading.Thread(target=gw.stop, kwargs={"timeout_s": 5.0})
        stopper.start()
        time.sleep(0.2)                 # the I/O thread is gone; the worker is still stuck
        backend.release.set()           # now the worker hands over its Error: must not block
        stopper.join(10)
        assert not stopper.is_alive()
        assert mine and not [t for t in mine if t.is_alive()]
        assert "did not stop" not in caplog.text      # every thread ended on its own
    finally:
        backend.release.set()
        peer.close()

"""The edge-cloud gateway: a ZeroMQ ROUTER that serves wire-protocol requests from a backend.

Threads: one I/O thread owns every socket that faces the network (ROUTER) and an inproc
PULL "outbox"; ``workers`` worker threads each take a job from a bounded queue, run
``backend.generate`` and push the frames they produce into the outbox over their own
inproc PUSH socket. Every terminal decision (Done, Error, cancel, deadline) is made or
filtered in the I/O thread, so a request gets exactly one terminal message and nothing
after it.

Load: every Pong that asks for it (``PING_WANTS_LOAD``) carries the requests queued, the
ones generating, the capacity (= workers) and EWMAs of the time from a worker starting a
request to its first piece and to its whole answer (workers measure, under a lock; the
I/O thread reads), so a device can predict its first-token time here.

Use from Python (tests)::

    with Gateway(EchoBackend(), "tcp://127.0.0.1:0") as gw:
        endpoint = gw.endpoint          # the port actually bound
"""
from __future__ import annotations

import dataclasses
import logging
import queue
import signal
import threading
from dataclasses import dataclass, field
from collections.abc import Callable, Iterator
from typing import Any

import zmq

from edge_runtime import systemd
from edge_runtime.clock import SYSTEM_CLOCK, Clock
from edge_runtime.errors import ConfigError
from edge_runtime.protocol import (ERR_BACKEND, ERR_BAD_REQUEST, ERR_DEADLINE, ERR_OVERLOADED,
                                   ERR_SHUTTING_DOWN, Cancel, Chunk, Done, Error, Ping, Pong,
                                   ProtocolError, Request, decode, encode)
from edge_runtime.protocol.messages import PING_WANTS_LOAD, WireMessage
from edge_runtime.types import CancelToken, GenerationParams, Message

from .backends.base import Backend
from .load import LoadMeter
from .security import CurveServer, endpoint_is_loopback

log = logging.getLogger(__name__)

_TICK_MS = 20              # I/O loop poll period: bounds deadline-watchdog lateness
_MAX_BATCH = 256           # frames handled per socket per tick (keeps both sockets served)


class _Stopping(Exception):
    """Raised inside a worker when the gateway stops while it is handing over a frame."""


@dataclass
class _Job:
    peer: bytes
    request: Request
    cancel: CancelToken = field(default_factory=CancelToken)


class Gateway:
    """Serve ``backend`` on ``bind`` (a ZeroMQ endpoint; port 0 picks a free port).

    ``workers``: concurrent generations (1 for a single model session; the backend's
    ``capacity`` for a batching or remote one); it is the ``capacity`` Pongs report;
    ``queue_size``: requests waiting for a worker before new ones get ``overloaded``;
    ``max_new_tokens``: cap on a request's ``params.max_new_tokens`` (bounds work per request);
    ``curve``: CURVE keys and client allow-list (required off loopback unless
    ``allow_insecure``).
    """

    def __init__(self, backend: Backend, bind: str = "tcp://127.0.0.1:5555", *,
                 workers: int = 1, queue_size: int = 8, max_new_tokens: int = 512,
                 clock: Clock = SYSTEM_CLOCK, curve: CurveServer | None = None,
                 allow_insecure: bool = False) -> None:
        if workers < 1 or queue_size < 1:
            raise ConfigError("gateway workers and queue size must be >= 1",
                              hint="pass --workers N and --queue-size N with N >= 1")
        if curve is None and not allow_insecure and not endpoint_is_loopback(bind):
            raise ConfigError(f"refusing to serve {bind} without CURVE: the address is not "
                              "loopback", hint="pass --curve-secret-key-file (and "
                              "--allow-client-key), or --allow-insecure on a trusted network")
        self.backend = backend
        self._bind = bind
        self._workers_n = workers
        self._max_new_tokens = max_new_tokens
        self._clock = clock
        self._curve = curve
        self._jobs: queue.Queue[_Job] = queue.Queue(maxsize=queue_size)
        self.load = LoadMeter()
        self._active: dict[tuple[bytes, str], _Job] = {}      # I/O thread only
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._threads: list[threading.Thread] = []
        self._ctx: zmq.Context | None = None
        self._router: zmq.Socket | None = None
        self._outbox: zmq.Socket | None = None
        self._outbox_addr = f"inproc://edge-cloud-outbox-{id(self):x}"
        self.endpoint = ""
        self.malformed_count = 0          # bad messages received (I/O thread writes)
        self._malformed_reported = 0
        self._malformed_logged_at = float("-inf")
        self._handlers: dict[type, Callable[[bytes, Any], None]] = {
            Request: self._on_request, Cancel: self._on_cancel, Ping: self._on_ping}

    # -- lifecycle ---------------------------------------------------------------------------

    def warm_up(self, rounds: int = 2) -> bool:
        """Answer a short prompt ``rounds`` times before serving, so the first heartbeats
        report measured prefill and answer times instead of "unknown" (devices would
        otherwise fall back to a guess and keep away until they learn). False (logged) when
        the backend failed: the gateway still serves, and reports times once measured."""
        msgs = (Message("system", "You are a helpful voice assistant."),
                Message("user", "Say hello in one short sentence."))
        params = GenerationParams(max_new_tokens=24, temperature=0.0)
        try:
            for _ in range(rounds):
                start_m = self._clock.monotonic()
                first_ms: float | None = None
                for piece in self.backend.generate(msgs, params, CancelToken()):
                    if first_ms is None and piece:
                        first_ms = (self._clock.monotonic() - start_m) * 1000.0
                if first_ms is not None:
                    self.load.first_piece(first_ms)
                self.load.started()
                self.load.finished((self._clock.monotonic() - start_m) * 1000.0)
        except Exception as exc:  # a backend that is not reachable yet: serve anyway
            log.warning("warm-up failed (%s: %s); serving without measured times",
                        type(exc).__name__, exc)
            return False
        _, prefill_ms, service_ms = self.load.snapshot()
        log.info("warmed up: first piece %.0f ms, answer %.0f ms", prefill_ms, service_ms)
        return True

    def start(self) -> str:
        """Bind and start the threads; returns the bound endpoint (e.g. ``tcp://127.0.0.1:40123``)."""
        self._ctx = zmq.Context()
        router = self._ctx.socket(zmq.ROUTER)
        router.setsockopt(zmq.LINGER, 0)
        router.setsockopt(zmq.SNDHWM, 10_000)
        router.setsockopt(zmq.RCVHWM, 1_000)
        router.setsockopt(zmq.MAXMSGSIZE, 2 << 20)   # the protocol caps frames at 1 MiB
        router.setsockopt(zmq.ROUTER_HANDOVER, 1)     # a reconnecting device keeps its identity
        if self._curve is not None:
            self._curve.apply(self._ctx, router)
        try:
            router.bind(self._bind)
        except zmq.ZMQError as exc:
            router.close(0)
            self._close_context()
            raise ConfigError(f"cannot bind {self._bind}: {exc}",
                              hint="pick a free port or another --bind address") from exc
        self.endpoint = router.getsockopt_string(zmq.LAST_ENDPOINT)
        outbox = self._ctx.socket(zmq.PULL)
        outbox.setsockopt(zmq.LINGER, 0)
        outbox.bind(self._outbox_addr)
        self._router, self._outbox = router, outbox
        self._threads = [threading.Thread(target=self._io_loop, name="edge-cloud-io", daemon=True)]
        self._threads += [threading.Thread(target=self._worker_loop, name=f"edge-cloud-worker-{i}",
                                           daemon=True) for i in range(self._workers_n)]
        for t in self._threads:
            t.start()
        self._ready.wait(5.0)
        log.info("edge-cloud serving on %s (backend %s, %d worker(s), queue %d)", self.endpoint,
                 type(self.backend).__name__, self._workers_n, self._jobs.maxsize)
        return self.endpoint

    @property
    def stopped(self) -> bool:
        """True once ``stop`` was called or the I/O loop died."""
        return self._stop.is_set()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Answer in-flight requests with ``shutting_down``, stop threads, close sockets."""
        if self._stop.is_set():
            return
        self._stop.set()
        for t in self._threads:
            t.join(timeout_s)
            if t.is_alive():
                log.warning("thread %s did not stop within %.1f s", t.name, timeout_s)
        self._close_context()
        log.info("edge-cloud on %s stopped", self.endpoint)

    def _close_context(self) -> None:
        if self._ctx is not None:
            if self._curve is not None:
                self._curve.stop()
            self._ctx.destroy(linger=0)
            self._ctx = None

    def __enter__(self) -> Gateway:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- I/O thread --------------------------------------------------------------------------

    def _io_loop(self) -> None:
        assert self._router is not None and self._outbox is not None
        poller = zmq.Poller()
        poller.register(self._router, zmq.POLLIN)
        poller.register(self._outbox, zmq.POLLIN)
        self._ready.set()
        try:
            while not self._stop.is_set():
                events = dict(poller.poll(_TICK_MS))
                if self._router in events:
                    self._drain(self._router, self._on_frames)
                if self._outbox in events:
                    self._drain(self._outbox, self._on_outbox)
                self._expire()
            for job in list(self._active.values()):
                self._finish(job, Error(job.request.id, ERR_SHUTTING_DOWN,
                                        "the gateway is shutting down", retryable=True))
        except Exception:  # the loop must never die silently
            log.exception("edge-cloud I/O loop failed; stopping")
            self._stop.set()
        finally:
            self._router.close(0)
            self._outbox.close(0)

    @staticmethod
    def _drain(sock: zmq.Socket, handle: Callable[[list[bytes]], None]) -> None:
        for _ in range(_MAX_BATCH):
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            handle(frames)

    def _on_frames(self, frames: list[bytes]) -> None:
        if len(frames) != 2:
            self._malformed("ignoring a message of %d frames (expected identity + 1 frame)",
                            len(frames))
            return
        peer, data = frames
        try:
            msg = decode(data)
        except ProtocolError as exc:
            self._malformed("ignoring a malformed frame from peer %s: %s", peer.hex(), exc)
            return
        handler = self._handlers.get(type(msg))
        if handler is None:
            self._malformed("ignoring a %s from peer %s: not a client message", type(msg).TYPE,
                            peer.hex())
            return
        try:
            handler(peer, msg)
        except Exception as exc:   # one odd message must never stop the I/O loop
            log.warning("a %s from peer %s could not be handled: %s: %s", type(msg).TYPE,
                        peer.hex(), type(exc).__name__, exc, exc_info=True)
            if isinstance(msg, Request):
                self._active.pop((peer, msg.id), None)
                self._send(peer, Error(msg.id, ERR_BAD_REQUEST,
                                       f"the request could not be handled ({type(exc).__name__})",
                                       False))

    def _malformed(self, fmt: str, *args: object) -> None:
        """Count a bad message; log at most one WARNING per second (a junk flood must not
        flood the log), with how many were not logged since."""
        self.malformed_count += 1
        now = self._clock.monotonic()
        if now - self._malformed_logged_at >= 1.0:
            suppressed = self.malformed_count - self._malformed_reported - 1
            self._malformed_logged_at, self._malformed_reported = now, self.malformed_count
            log.warning(fmt + (" (and %d more bad messages not logged)" if suppressed else ""),
                        *args, *((suppressed,) if suppressed else ()))

    def _send(self, peer: bytes, msg: WireMessage) -> None:
        assert self._router is not None        # sends happen on the running I/O thread
        try:
            self._router.send_multipart([peer, encode(msg)], zmq.NOBLOCK)
        except zmq.Again:   # peer's queue full (slow or gone): ROUTER would drop it anyway
            log.debug("dropped a %s for slow peer %s", type(msg).__name__, peer.hex())

    def _on_ping(self, peer: bytes, msg: Ping) -> None:
        if not msg.nonce & PING_WANTS_LOAD:     # an older device: its decoder wants a bare Pong
            self._send(peer, Pong(msg.nonce))
            return
        self._send(peer, self.pong(msg.nonce))

    def pong(self, nonce: int) -> Pong:
        """A Pong with the current load (``queued`` may count a few cancelled jobs that a
        worker has not skipped yet)."""
        active, prefill_ms, service_ms = self.load.snapshot()
        return Pong(nonce, queued=self._jobs.qsize(), active=active, capacity=self._workers_n,
                    prefill_ms=prefill_ms, service_ms=service_ms)

    def _on_cancel(self, peer: bytes, msg: Cancel) -> None:
        job = self._active.pop((peer, msg.id), None)
        if job is not None:
            job.cancel.cancel()
            log.debug("request %s cancelled by the client", msg.id)

    def _on_request(self, peer: bytes, req: Request) -> None:
        def reject(code: str, text: str, retryable: bool) -> None:
            log.info("request %s rejected: %s (%s)", req.id, code, text)
            self._send(peer, Error(req.id, code, text, retryable))

        served = getattr(self.backend, "model_name", "")
        if (peer, req.id) in self._active:
            return reject(ERR_BAD_REQUEST, f"request id {req.id} is already in progress", False)
        if not req.messages or req.params.max_new_tokens < 1:
            return reject(ERR_BAD_REQUEST, "a request needs at least one message and "
                          "params.max_new_tokens >= 1", False)
        if req.model and served and req.model != served:
            return reject(ERR_BAD_REQUEST, f"model {req.model!r} is not served here "
                          f"(this gateway serves {served!r})", False)
        late_s = self._clock.time() - req.deadline
        if late_s >= 0:
            return reject(ERR_DEADLINE, f"deadline passed {late_s * 1000:.0f} ms before the "
                          "request was queued (check both clocks with NTP)", False)
        if self._stop.is_set():
            return reject(ERR_SHUTTING_DOWN, "the gateway is shutting down", True)
        if req.params.max_new_tokens > self._max_new_tokens:
            req = dataclasses.replace(req, params=dataclasses.replace(
                req.params, max_new_tokens=self._max_new_tokens))
        job = _Job(peer, req)
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            return reject(ERR_OVERLOADED, f"all {self._workers_n} worker(s) busy and "
                          f"{self._jobs.maxsize} request(s) queued", True)
        self._active[(peer, req.id)] = job

    def _on_outbox(self, frames: list[bytes]) -> None:
        peer, rid, data, terminal = frames
        job = self._active.get((peer, rid.decode()))
        if job is None:            # cancelled, expired or shut down: the reply was sent already
            return
        assert self._router is not None
        try:
            self._router.send_multipart([peer, data], zmq.NOBLOCK)
        except zmq.Again:
            log.debug("dropped a frame of request %s for slow peer %s", job.request.id, peer.hex())
        if terminal == b"1":
            del self._active[(peer, job.request.id)]

    def _finish(self, job: _Job, reply: Error) -> None:
        job.cancel.cancel()
        self._active.pop((job.peer, job.request.id), None)
        self._send(job.peer, reply)

    def _expire(self) -> None:
        if not self._active:
            return
        now = self._clock.time()
        for job in [j for j in self._active.values() if j.request.deadline <= now]:
            log.info("request %s passed its deadline; cancelling it", job.request.id)
            self._finish(job, Error(job.request.id, ERR_DEADLINE,
                                    "the deadline passed before the answer was complete", False))

    # -- worker threads ----------------------------------------------------------------------

    def _worker_loop(self) -> None:
        assert self._ctx is not None
        push = self._ctx.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        push.connect(self._outbox_addr)
        try:
            while not self._stop.is_set():
                try:
                    job = self._jobs.get(timeout=0.1)
                except queue.Empty:
                    continue
                if job.cancel.cancelled:         # answered while it waited in the queue
                    continue
                try:
                    self._run(job, push)
                except Exception:                # e.g. the outbox is gone at shutdown
                    log.exception("worker failed on request %s", job.request.id)
        finally:
            push.close(0)

    def _run(self, job: _Job, push: zmq.Socket) -> None:
        req = job.request
        rid = req.id.encode()

        def emit(msg: WireMessage, terminal: bool) -> None:
            frames = [job.peer, rid, encode(msg), b"1" if terminal else b"0"]
            while True:   # never drop a frame while serving; never block once stopping
                try:
                    push.send_multipart(frames, zmq.NOBLOCK)
                    return
                except zmq.Again:
                    if self._stop.is_set():
                        raise _Stopping() from None
                    push.poll(100, zmq.POLLOUT)

        pieces = 0
        gen: Iterator[str] | None = None
        start_m = self._clock.monotonic()
        service_ms: float | None = None
        self.load.started()
        try:
            gen = iter(self.backend.generate(req.messages, req.params, job.cancel))
            for piece in gen:
                if job.cancel.cancelled:
                    return
                if piece:
                    if not pieces:
                        self.load.first_piece((self._clock.monotonic() - start_m) * 1000.0)
                    emit(Chunk(req.id, pieces, piece), False)
                    pieces += 1
            if job.cancel.cancelled:
                return
            service_ms = (self._clock.monotonic() - start_m) * 1000.0
            emit(Done(req.id, *self._usage(req, pieces)), True)
        except _Stopping:
            log.debug("request %s dropped: the gateway is stopping", req.id)
        except Exception as exc:   # a backend failure answers this request, never kills the worker
            if self._stop.is_set():
                return
            log.warning("request %s failed in the backend: %s", req.id, exc)
            emit(Error(req.id, ERR_BACKEND, f"{type(exc).__name__}: {exc}",
                       bool(getattr(exc, "retryable", False))), True)
        finally:
            self.load.finished(service_ms)
            close = getattr(gen, "close", None)
            if close is not None:
                close()

    def _usage(self, req: Request, pieces: int) -> tuple[int, int, str]:
        """(prompt_tokens, completion_tokens, finish_reason) for Done; informative only."""
        try:
            usage = getattr(self.backend, "last_usage", lambda: None)()
            if usage is not None:
                return int(usage[0]), int(usage[1]), str(usage[2])
            count = getattr(self.backend, "prompt_tokens", None)
            prompt = int(count(req.messages)) if count is not None else 0
        except Exception:  # a usage failure must not fail a finished answer
            log.debug("usage of request %s unavailable", req.id, exc_info=True)
            prompt = 0
        return prompt, pieces, "length" if pieces >= req.params.max_new_tokens else "stop"


def serve(gateway: Gateway, *, ready: Callable[[str], None] | None = None) -> None:
    """Run ``gateway`` until SIGTERM or SIGINT (main thread only), then stop it cleanly.

    ``ready`` is called with the bound endpoint once the gateway accepts requests.
    """
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set())
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        endpoint = gateway.start()
        if ready is not None:
            ready(endpoint)
        while not stop.wait(0.5):
            if gateway.stopped:      # the I/O loop died: exit non-zero via the caller
                raise RuntimeError("the gateway I/O loop stopped unexpectedly; see the log")
            systemd.watchdog_ping()  # no-op outside systemd
    finally:
        gateway.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)

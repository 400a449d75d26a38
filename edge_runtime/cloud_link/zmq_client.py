"""The device's client of the edge-cloud gateway: one asyncio DEALER socket.

A receive task routes gateway messages by request id to per-request bounded queues; a
monitor task follows the TCP connection (connected, lost, refused, CURVE handshake
failed); a heartbeat task sends a Ping every ``cloud.health_interval_s`` and declares
the link down after ``missed_heartbeats`` intervals without any message from the gateway.

Link state: "unknown" until the first Pong or failure, then "up" (a message arrived) or
"down" (connection refused/lost, heartbeats missed, nothing connected when sending).
While "down", :meth:`ZmqCloudClient.stream` fails at once, so the caller answers locally
without waiting; a reconnect is noticed within milliseconds (handshake event → Ping).

Load (kept by :class:`~.gateway_load.LoadReports`): each Ping asks for the gateway's load
(``PING_WANTS_LOAD``) and each Pong's figures
become :attr:`ZmqCloudClient.load` (a :class:`GatewayLoad`) once validated; a nonsense
report (negative, NaN/inf, absurdly large) is ignored and counted in
``bad_load_reports`` (a WARNING at most once a minute), and the link stays up.
:meth:`ZmqCloudClient.fresh_load` is the load while it is at most ``LOAD_MAX_AGE_BEATS``
heartbeat intervals old (None otherwise, or for a gateway that reports none).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import AsyncGenerator, Sequence
from typing import cast

import zmq
import zmq.asyncio
from zmq.utils.monitor import parse_monitor_message

from ..clock import SYSTEM_CLOCK, Clock
from ..config import CloudConfig
from ..errors import CloudUnavailableError, ConfigError
from ..protocol import (Cancel, Chunk, Done, Error, Ping, Pong, ProtocolError, Request, decode,
                        encode)
from ..protocol.messages import PING_WANTS_LOAD, WireMessage
from ..types import GenerationParams, Message
from .gateway_load import LOAD_MAX_AGE_BEATS, GatewayLoad, LoadReports
from .keys import endpoint_is_loopback, load_keypair, load_public_key

log = logging.getLogger(__name__)

CONGESTED = "cloud_congested"          # error code: our own send queue is full (not the gateway)
_WAKE = object()                       # queue marker: look at _Pending.failure
_ABANDONED_IDS = 512                   # remembered ids of failed requests (late chunks: DEBUG)
_HANDSHAKE_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                     | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)

class _Pending:
    """The receive side of one request: a bounded queue plus an out-of-band failure."""

    def __init__(self, size: int) -> None:
        self.queue: asyncio.Queue[object] = asyncio.Queue(maxsize=size)
        self.failure: str | None = None

    def put(self, msg: object) -> None:
        try:
            self.queue.put_nowait(msg)
        except asyncio.QueueFull:
            self.fail(f"more than {self.queue.maxsize} unread pieces (the reader is stuck)")

    def fail(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
            with contextlib.suppress(asyncio.QueueFull):
                self.queue.put_nowait(_WAKE)


class ZmqCloudClient:
    """``CloudClient`` over ZeroMQ (see module doc).

    ``model``: the model name sent with each request ("" = the gateway's default);
    ``stall_timeout_ms``: longest gap between two chunks once streaming (default
    ``cfg.first_token_timeout_ms``); ``queue_size``: unread pieces kept per request;
    ``missed_heartbeats``: intervals of silence before the link is declared down.
    """

    def __init__(self, cfg: CloudConfig, clock: Clock = SYSTEM_CLOCK, *, model: str = "",
                 stall_timeout_ms: float | None = None, queue_size: int = 256,
                 missed_heartbeats: float = 2.0) -> None:
        self.cfg = cfg
        self._clock = clock
        self._model = model
        self._stall_s = (stall_timeout_ms if stall_timeout_ms is not None
                         else cfg.first_token_timeout_ms) / 1000.0
        self._queue_size = queue_size
        self._silence_s = max(missed_heartbeats, 1.0) * cfg.health_interval_s
        self._state = "unknown"
        self._reason = "not started"
        self._state_known = asyncio.Event()
        self._connected = False
        self._ctx: zmq.asyncio.Context | None = None
        self._sock: zmq.asyncio.Socket | None = None
        self._tasks: list[asyncio.Task] = []
        self._pending: dict[str, _Pending] = {}
        self._abandoned: deque[str] = deque(maxlen=_ABANDONED_IDS)
        self._last_seen = 0.0
        self._nonce = 0
        self._ping_sent: dict[int, float] = {}
        self.rtt_ms: float | None = None       # last heartbeat round trip
        self._loads = LoadReports(cfg.endpoint)

    # -- state -------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        """"up", "down" or "unknown"."""
        return self._state

    @property
    def available(self) -> bool:
        """False when the link is known to be down (callers then stay local without waiting)."""
        return self._state != "down" and self._sock is not None

    @property
    def down_reason(self) -> str:
        """Why the link is down (or was last down), e.g. ``"connection refused"``."""
        return self._reason

    @property
    def load(self) -> GatewayLoad | None:
        """The last valid load report (see ``fresh_load``)."""
        return self._loads.load

    @property
    def bad_load_reports(self) -> int:
        """Pongs whose load figures were nonsense."""
        return self._loads.bad_reports

    def fresh_load(self) -> GatewayLoad | None:
        """The last valid load report while it is at most ``LOAD_MAX_AGE_BEATS`` heartbeat
        intervals old; None when older, or when the gateway reports no load (an older
        release)."""
        return self._loads.fresh(self._clock.monotonic(),
                                 LOAD_MAX_AGE_BEATS * self.cfg.health_interval_s)

    def _mark_up(self) -> None:
        self._last_seen = self._clock.monotonic()
        if self._state != "up":
            log.info("cloud link up (%s)", self.cfg.endpoint)
            self._state = "up"
            self._state_known.set()

    def _mark_down(self, reason: str, *, override: bool = False) -> None:
        """Declare the link down. The first reason of a down period is kept (later ones are
        usually consequences, e.g. "lost" after a refused handshake) unless ``override``."""
        if self._state != "down" or override:
            self._reason = reason
        if self._state != "down":
            log.warning("cloud link down: %s", reason)
            self._state = "down"
            self._state_known.set()
        for pending in self._pending.values():
            pending.fail(f"cloud link down: {reason}")

    # -- lifecycle ---------------------------------------------------------------------------

    def _check_security(self) -> None:
        if (not endpoint_is_loopback(self.cfg.endpoint) and not self.cfg.server_public_key
                and not self.cfg.allow_insecure):
            raise ConfigError(
                f"cloud.endpoint {self.cfg.endpoint} is not loopback and cloud.server_public_key "
                "is empty: the link would be unauthenticated and unencrypted",
                hint="set cloud.server_public_key to the gateway's Z85 public key (and "
                     "cloud.client_secret_key_file), or cloud.allow_insecure=true on a "
                     "trusted network")

    def _make_socket(self) -> zmq.asyncio.Socket:
        assert self._ctx is not None
        sock = self._ctx.socket(zmq.DEALER)
        # a stable identity across reconnects, so the gateway routes Cancel to the right jobs
        sock.setsockopt(zmq.ROUTING_ID, b"edge-" + uuid.uuid4().bytes)
        interval_ms = int(self.cfg.health_interval_s * 1000)
        for opt, value in ((zmq.LINGER, 0), (zmq.IMMEDIATE, 1), (zmq.SNDHWM, 1000),
                           (zmq.RCVHWM, 10_000), (zmq.RECONNECT_IVL, 100),
                           (zmq.RECONNECT_IVL_MAX, 2000), (zmq.MAXMSGSIZE, 2 << 20),
                           (zmq.CONNECT_TIMEOUT, max(1, int(self.cfg.connect_timeout_ms))),
                           (zmq.HEARTBEAT_IVL, max(100, interval_ms)),
                           (zmq.HEARTBEAT_TIMEOUT, max(200, 2 * interval_ms))):
            sock.setsockopt(opt, value)
        if self.cfg.server_public_key:
            sock.curve_serverkey = load_public_key(self.cfg.server_public_key)
            if self.cfg.client_secret_key_file:
                sock.curve_publickey, sock.curve_secretkey = load_keypair(
                    self.cfg.client_secret_key_file)
            else:
                log.info("no cloud.client_secret_key_file: using a throw-away CURVE client key "
                         "(gateways with a client allow-list will refuse it)")
                sock.curve_publickey, sock.curve_secretkey = zmq.curve_keypair()
        return sock

    async def start(self, wait: bool = True) -> None:
        """Connect and start the background tasks. With ``wait``, return once the state is
        known or after ``cfg.connect_timeout_ms`` (then the state is "down").
        Raises ``ConfigError`` for an insecure off-loopback endpoint or bad key settings."""
        if self._sock is not None:
            return
        if not self.cfg.enabled:
            self._mark_down("disabled by cloud.enabled=false")
            return
        self._check_security()
        self._ctx = zmq.asyncio.Context()
        try:
            self._sock = self._make_socket()
            monitor = self._sock.get_monitor_socket(
                zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED
                | zmq.EVENT_CONNECT_RETRIED | _HANDSHAKE_FAILED)
            self._sock.connect(self.cfg.endpoint)
        except (zmq.ZMQError, ConfigError) as exc:
            await self.close()
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"cannot use cloud.endpoint {self.cfg.endpoint!r}: {exc}",
                              hint="use tcp://HOST:PORT") from exc
        self._last_seen = self._clock.monotonic()
        self._tasks = [asyncio.create_task(self._receive_loop(), name="cloud-link-recv"),
                       asyncio.create_task(self._monitor_loop(monitor), name="cloud-link-monitor"),
                       asyncio.create_task(self._heartbeat_loop(), name="cloud-link-heartbeat")]
        for task in self._tasks:
            task.add_done_callback(self._task_ended)
        if wait:
            try:
                await asyncio.wait_for(self._state_known.wait(), self.cfg.connect_timeout_ms / 1e3)
            except asyncio.TimeoutError:
                self._mark_down(f"no answer from {self.cfg.endpoint} within "
                                f"{self.cfg.connect_timeout_ms:.0f} ms")

    async def close(self) -> None:
        """Stop the tasks, fail in-flight streams and close the socket (idempotent)."""
        if self._sock is not None:
            # Stop the monitor while its reader is still alive: libzmq's I/O thread sends
            # monitor events with a blocking send under a lock, so closing the reader first
            # can deadlock it (and then us, on that lock).
            with contextlib.suppress(zmq.ZMQError):
                self._sock.disable_monitor()
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for pending in self._pending.values():
            pending.fail("cloud link closed")
        if self._sock is not None:
            self._sock.close(0)
            self._sock = None
        if self._ctx is not None:
            self._ctx.destroy(linger=0)
            self._ctx = None
        self._connected = False
        if self._state != "down":
            self._state, self._reason = "down", "closed"

    async def __aenter__(self) -> ZmqCloudClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- background tasks --------------------------------------------------------------------

    def _task_ended(self, task: asyncio.Task) -> None:
        if task.cancelled() or task.exception() is None:
            return
        log.error("cloud link task %s failed", task.get_name(), exc_info=task.exception())
        self._mark_down(f"client task {task.get_name()} failed: {task.exception()!r}",
                        override=True)

    def _send_nowait(self, msg: WireMessage) -> bool:
        """Send without blocking; False when no connection can take it (IMMEDIATE + HWM)."""
        if self._sock is None:
            return False
        try:
            # resolves at once with NOBLOCK; zmq.asyncio returns an asyncio.Future (the stubs
            # say only Awaitable)
            fut = cast("asyncio.Future[object]", self._sock.send(encode(msg), zmq.NOBLOCK))
        except zmq.ZMQError as exc:
            log.debug("send failed: %s", exc)
            return False
        err = fut.exception() if fut.done() else None
        if isinstance(err, zmq.ZMQError):     # Again: no connection (IMMEDIATE) or HWM reached
            return False
        if err is not None:
            raise err
        return True

    async def _receive_loop(self) -> None:
        assert self._sock is not None
        while True:
            data = await self._sock.recv()
            try:
                msg = decode(data)
            except ProtocolError as exc:
                log.warning("ignoring a malformed frame from the gateway: %s", exc)
                continue
            self._mark_up()
            if isinstance(msg, Pong):
                self._on_pong(msg)
                continue
            rid = getattr(msg, "id", None)
            pending = self._pending.get(msg.id) if isinstance(msg, (Chunk, Done, Error)) else None
            if pending is not None:
                pending.put(msg)
            elif rid in self._abandoned:
                log.debug("dropping a late %s for abandoned request %s", type(msg).TYPE, rid)
            else:
                log.debug("dropping a %s for unknown request %s", type(msg).TYPE, rid)

    def _on_pong(self, msg: Pong) -> None:
        """Round trip and load from a Pong. Nonsense load is counted and ignored (the last
        valid report stays); a Pong without load (older gateway) changes nothing."""
        now = self._clock.monotonic()
        sent = self._ping_sent.pop(msg.nonce, None)
        if sent is not None:
            self.rtt_ms = (now - sent) * 1000.0
        self._loads.on_pong(msg, now)

    async def _monitor_loop(self, monitor: zmq.asyncio.Socket) -> None:
        try:
            while True:
                event = parse_monitor_message(await monitor.recv_multipart())
                kind = event["event"]
                if kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                    self._connected = True
                    self._ping()                      # confirm it is an edge-cloud that answers
                elif kind == zmq.EVENT_DISCONNECTED:
                    self._connected = False
                    self._mark_down(f"connection to {self.cfg.endpoint} lost")
                elif kind == zmq.EVENT_CONNECT_RETRIED and not self._connected:
                    self._mark_down(f"cannot connect to {self.cfg.endpoint}")
                elif kind & _HANDSHAKE_FAILED:
                    self._connected = False
                    self._mark_down("CURVE/ZMTP handshake with the gateway failed (check "
                                    "cloud.server_public_key and that the gateway allows this "
                                    "device's public key)", override=True)
        finally:
            monitor.close(0)

    def _ping(self) -> None:
        self._nonce += 1
        nonce = self._nonce | PING_WANTS_LOAD
        if self._send_nowait(Ping(nonce)):
            self._ping_sent[nonce] = self._clock.monotonic()
            while len(self._ping_sent) > 8:           # keep only recent outstanding pings
                self._ping_sent.pop(next(iter(self._ping_sent)))

    async def _heartbeat_loop(self) -> None:
        while True:
            if self._connected:
                self._ping()
            silent_s = self._clock.monotonic() - self._last_seen
            if silent_s > self._silence_s and self._state != "down":
                self._mark_down(f"no reply from the gateway for {silent_s:.1f} s "
                                f"(heartbeat every {self.cfg.health_interval_s:g} s)")
            await asyncio.sleep(self.cfg.health_interval_s)

    # -- requests ----------------------------------------------------------------------------

    async def stream(self, messages: Sequence[Message], params: GenerationParams,
                     deadline_s: float) -> AsyncGenerator[str, None]:
        """Yield the answer's text pieces. Raises ``CloudUnavailableError`` ("cloud link
        down: …", "no first token within N ms", "stream stalled …", "deadline exceeded …",
        "gateway error: CODE: …") before or during the stream; after it raises (or the caller
        stops iterating) the request is cancelled and late pieces are dropped."""
        if self._sock is None:
            raise CloudUnavailableError("cloud link down: " + (
                self._reason if self._state == "down" else "client not started"),
                hint="call start() first")
        if self._state == "down":
            raise CloudUnavailableError(f"cloud link down: {self._reason}")
        if deadline_s <= 0:
            raise CloudUnavailableError(f"deadline exceeded ({deadline_s * 1e3:.0f} ms) before "
                                        "the request was sent")
        rid = uuid.uuid4().hex
        start_m = self._clock.monotonic()
        deadline_m = start_m + deadline_s
        first_m = min(deadline_m, start_m + self.cfg.first_token_timeout_ms / 1000.0)
        pending = self._pending[rid] = _Pending(self._queue_size)
        finished = False
        try:
            req = Request(rid, self._clock.time() + deadline_s, tuple(messages), params,
                          self._model)
            if not self._send_nowait(req):
                if self._connected:
                    raise CloudUnavailableError("cloud link congested: the send queue is full",
                                                code=CONGESTED)
                self._mark_down(f"not connected to {self.cfg.endpoint}")
                raise CloudUnavailableError(f"cloud link down: {self._reason}")
            seq = 0
            last_m = start_m
            while True:
                if pending.failure is not None:
                    raise CloudUnavailableError(pending.failure)
                now = self._clock.monotonic()
                limit, why = (
                    (first_m, f"no first token within {(first_m - start_m) * 1e3:.0f} ms")
                    if seq == 0 else
                    min((deadline_m, f"deadline exceeded ({deadline_s * 1e3:.0f} ms)"),
                        (last_m + self._stall_s,
                         f"stream stalled: no piece for {self._stall_s * 1e3:.0f} ms")))
                if seq == 0 and first_m >= deadline_m:
                    why = f"deadline exceeded ({deadline_s * 1e3:.0f} ms) before the first token"
                try:   # a piece already queued needs no timer (wait_for costs a task)
                    item = pending.queue.get_nowait()
                except asyncio.QueueEmpty:
                    try:
                        item = await asyncio.wait_for(pending.queue.get(), max(0.0, limit - now))
                    except asyncio.TimeoutError:
                        raise CloudUnavailableError(why) from None
                if isinstance(item, Chunk):
                    if item.seq != seq:
                        raise CloudUnavailableError(f"gateway error: piece {item.seq} arrived "
                                                    f"when {seq} was expected")
                    seq += 1
                    last_m = self._clock.monotonic()
                    yield item.text
                elif isinstance(item, Done):
                    finished = True
                    return
                elif isinstance(item, Error):
                    finished = True          # the gateway already stopped: no Cancel needed
                    raise CloudUnavailableError(f"gateway error: {item.code}: {item.message}",
                                                retryable=item.retryable)
        finally:
            self._pending.pop(rid, None)
            if not finished:
                self._abandoned.append(rid)
                with contextlib.suppress(Exception):
                    self._send_nowait(Cancel(rid))

"""Connection hygiene of the daemon's HTTP server: read timeouts, a connection cap, quiet logs.

aiohttp holds a connection as long as the client likes: a client that connects and says
nothing, trickles its headers or sends one byte of a declared body keeps a socket and a
task forever. :class:`GuardedRunner` (an ``aiohttp.web.AppRunner``) closes them:

- **idle** (``server.idle_timeout_s``): no request in progress and no complete request
  received (aiohttp's keep-alive timer, which also runs from the moment of connecting);
- **header** (``server.header_timeout_s``): request line and headers must arrive within
  this many seconds of their first byte; a ``408`` is written, then the socket closed;
- **body** (``server.body_timeout_s``): :func:`read_body` gives a route this long to
  receive the whole body (``RequestTimeoutError`` -> 408);
- **cap** (``server.max_connections``): a connection beyond the cap gets ``503`` at once.

Metrics: ``edge_http_connections_open``, ``edge_http_connections_rejected_total`` and
``edge_http_timeouts_total{kind=header|body|idle}``.

Logging: aiohttp's low-level server logs a malformed request at ERROR with the parser's
message, which can quote the raw request bytes (a transcript). :class:`QuietServerLogger`
logs client faults at INFO without the bytes (DEBUG keeps the details); only faults on
the server's side stay at ERROR.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestHandler, RequestPayloadError
from aiohttp.web_server import Server
from prometheus_client import CollectorRegistry, Counter, Gauge

from .limits import RequestLimits, RequestTimeoutError, check_body_size

log = logging.getLogger(__name__)

_408 = (b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\n"
        b"Content-Length: 37\r\n\r\nrequest headers not received in time\n")
_503 = (b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n"
        b"Content-Type: text/plain\r\nContent-Length: 29\r\n\r\ntoo many open connections; 1s\n")
# request[WS_KEY]: the prepared WebSocketResponse of a /v1/stream request
WS_KEY: Any = (web.RequestKey("websocket", web.WebSocketResponse)
               if hasattr(web, "RequestKey") else "edge_runtime.websocket")


class ConnectionGuard:
    """The limits and the counters shared by every connection of one server."""

    def __init__(self, *, header_timeout_s: float = 10.0, body_timeout_s: float = 30.0,
                 idle_timeout_s: float = 60.0, max_connections: int = 256,
                 registry: CollectorRegistry | None = None) -> None:
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.max_connections = max_connections
        self.open = 0
        self.rejected = 0
        self.timeouts = {"header": 0, "body": 0, "idle": 0}
        registry = registry or CollectorRegistry()
        self._open = Gauge("edge_http_connections_open", "Open HTTP connections.",
                           registry=registry)
        self._rejected = Counter("edge_http_connections_rejected", "Connections refused "
                                 "because server.max_connections were open.",
                                 registry=registry)
        self._timeouts = Counter("edge_http_timeouts", "Connections or requests closed for "
                                 "reading too slowly, by kind.", ["kind"], registry=registry)
        for kind in ("header", "body", "idle"):
            self._timeouts.labels(kind)

    @classmethod
    def from_config(cls, server_cfg: Any, registry: CollectorRegistry | None = None
                    ) -> ConnectionGuard:
        return cls(header_timeout_s=server_cfg.header_timeout_s,
                   body_timeout_s=server_cfg.body_timeout_s,
                   idle_timeout_s=server_cfg.idle_timeout_s,
                   max_connections=server_cfg.max_connections, registry=registry)

    def opened(self) -> bool:
        """Count a new connection; False (and counted as rejected) when at the cap."""
        if self.open >= self.max_connections:
            self.rejected += 1
            self._rejected.inc()
            return False
        self.open += 1
        self._open.set(self.open)
        return True

    def closed(self) -> None:
        self.open = max(0, self.open - 1)
        self._open.set(self.open)

    def timed_out(self, kind: str) -> None:
        self.timeouts[kind] += 1
        self._timeouts.labels(kind).inc()
        log.info("closed a connection: the client sent its request %s too slowly "
                 "(server.%s_timeout_s)", "headers" if kind == "header" else kind, kind)


GUARD_KEY = web.AppKey("connection_guard", ConnectionGuard)
LIMITS_KEY = web.AppKey("request_limits", RequestLimits)   # the edge policy in force


class QuietServerLogger(logging.LoggerAdapter):
    """The ``logger`` of aiohttp's request handler: client faults at INFO, no raw bytes."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        super().__init__(logger or logging.getLogger("aiohttp.server"), {})

    def _client_fault(self, kwargs: dict) -> BaseException | None:
        exc = kwargs.get("exc_info")
        if isinstance(exc, (HttpProcessingError, RequestPayloadError, ConnectionError)):
            return exc
        return None

    def exception(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        exc = self._client_fault(kwargs)
        if exc is None:
            self.logger.error(msg, *args, **{"exc_info": True, **kwargs})
            return
        self.logger.debug(msg, *args, **kwargs)
        if isinstance(exc, ConnectionError):      # the client went away: DEBUG only
            return
        status = getattr(exc, "code", None) or getattr(exc, "status", "")
        self.logger.info("rejected a malformed HTTP request (%s %s)", type(exc).__name__,
                         status)

    def error(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        if self._client_fault(kwargs) is not None:
            self.exception(msg, *args, **kwargs)
        else:
            self.logger.error(msg, *args, **kwargs)


class _GuardedHandler(RequestHandler):
    __slots__ = ("_guard", "_counted", "_header_timer")

    def __init__(self, manager: Server, *, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._guard = guard
        self._counted = False
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self._guard.opened():
            assert isinstance(transport, asyncio.Transport)
            transport.write(_503)
            transport.close()
            log.info("refused a connection: server.max_connections (%d) are open",
                     self._guard.max_connections)
            return
        self._counted = True
        super().connection_made(transport)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._cancel_header_timer()
        if not self._counted:           # refused at connect: aiohttp never saw it
            return
        self._counted = False
        self._guard.closed()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # bytes while start() waits for a request are the start of the next request's head
        waiting = self._waiter is not None and not self._waiter.done()
        before = self._request_count
        super().data_received(data)
        if self._request_count != before:
            self._cancel_header_timer()
        elif waiting and data and self._header_timer is None and not self._force_close:
            self._header_timer = self._loop.call_later(self._guard.header_timeout_s,
                                                       self._on_header_timeout)

    def _on_header_timeout(self) -> None:
        self._header_timer = None
        if self._waiter is None or self._waiter.done() or self.transport is None:
            return
        self._guard.timed_out("header")
        self.transport.write(_408)
        self.force_close()

    def _process_keepalive(self) -> None:
        if self._header_timer is not None:     # a request's head is arriving: its own timer
            self._keepalive_handle = None
            return
        was = self._force_close
        super()._process_keepalive()
        if self._force_close and not was:
            self._guard.timed_out("idle")

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None


class _GuardedServer(Server):
    def __init__(self, handler: Any, *, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(_checked_expect(handler), **kwargs)
        self.guard = guard

    def __call__(self) -> RequestHandler:
        return _GuardedHandler(self, guard=self.guard, loop=self._loop, **self._kwargs)


def _checked_expect(handler: Any) -> Any:
    """aiohttp answers an unknown ``Expect`` before any middleware, and fails with a 500
    on one that is not UTF-8: answer 417 here, for every route."""
    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        expect = request.headers.get("Expect")
        if expect is not None and expect.strip().lower() != "100-continue":
            return web.json_response({"error": {
                "code": "bad_input", "stage": "api", "message": "unsupported Expect header",
                "hint": "send no Expect header, or Expect: 100-continue",
                "retryable": False}}, status=417)
        return await handler(request)
    return handle


class GuardedRunner(web.AppRunner):
    """An ``AppRunner`` whose connections obey ``app[GUARD_KEY]`` (see the module doc)."""

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        guard = app[GUARD_KEY]
        kwargs.setdefault("keepalive_timeout", guard.idle_timeout_s)
        kwargs.setdefault("lingering_time", min(2.0, guard.body_timeout_s))
        kwargs.setdefault("logger", QuietServerLogger())
        kwargs.setdefault("access_log", None)
        kwargs.setdefault("auto_decompress", False)   # compressed bodies are refused (415)
        # a client that goes away cancels its handler: decoding stops, nothing is logged
        kwargs.setdefault("handler_cancellation", True)
        super().__init__(app, **kwargs)

    async def _make_server(self) -> Server:
        plain = await super()._make_server()
        # the same server aiohttp built (handler, request factory, kwargs), guarded
        server = _GuardedServer(plain.request_handler, request_factory=plain.request_factory,
                                handler_cancellation=plain.handler_cancellation,
                                loop=plain._loop, guard=self._app[GUARD_KEY], **plain._kwargs)
        return server


async def read_body(request: web.Request, limit: int, *, what: str = "request body",
                    hint: str = "send less or raise server.max_body_bytes") -> bytes:
    """The whole body, at most ``limit`` bytes and within ``server.body_timeout_s``."""
    check_body_size(request.content_length, limit, what=what, hint=hint)
    guard = request.app.get(GUARD_KEY)
    timeout = guard.body_timeout_s if guard is not None else 30.0

    async def read() -> bytes:
        parts, size = [], 0
        while chunk := await request.content.read(1 << 16):
            size += len(chunk)
            check_body_size(size, limit, what=what, hint=hint)
            parts.append(chunk)
        return b"".join(parts)

    try:
        return await asyncio.wait_for(read(), timeout)
    except asyncio.TimeoutError:
        if guard is not None:
            guard.timed_out("body")
        raise RequestTimeoutError(f"{what} did not arrive within {timeout:g} s",
                                  hint="send the whole body at once, or raise "
                                       "server.body_timeout_s") from None

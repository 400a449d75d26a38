"""`edge-runtime serve`: one process, asyncio, HTTP API on loopback by default.

POST /v1/ask  {"text": "..."}   -> the answer object (DESIGN.md "Contracts");
              with "stream": true, NDJSON pieces then that object (api/ask_stream.py)
POST /v1/chat/completions, GET /v1/models -> the OpenAI-compatible API (api/openai_compat.py)
GET  /healthz                   -> {"status": "ok" | "degraded", ...}
GET  /metrics                   -> Prometheus text format

Every request body is checked against the edge policy (``limits.py``) before a stage sees
it; connections obey the read timeouts and the cap of ``http_guard.py``.
"""
from __future__ import annotations

import asyncio
import collections
import hmac
import logging
import math
import signal

from aiohttp import WSCloseCode, web
from aiohttp.web_protocol import RequestPayloadError

from . import systemd as systemd_notify
from .config import Config
from .api import openai_compat
from .errors import BadInputError, EdgeError, OverloadedError
from .http_guard import GUARD_KEY, LIMITS_KEY, WS_KEY, ConnectionGuard, GuardedRunner, read_body
from .limits import (RequestLimits, RequestTimeoutError, check_budget_ms,
                     check_content_encoding, check_session, check_text, parse_json_object)
from .runtime import Runtime
from .types import CancelToken

log = logging.getLogger(__name__)

RUNTIME_KEY = web.AppKey("runtime", Runtime)
ANNOUNCE_KEY = web.AppKey("announcements", collections.deque)


class UnauthorizedError(EdgeError):
    code, stage, http_status = "unauthorized", "api", 401


def _error(exc: EdgeError) -> web.Response:
    headers = None
    if isinstance(exc, OverloadedError):
        headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))}
    resp = web.json_response({"error": exc.to_dict()}, status=exc.http_status, headers=headers)
    if isinstance(exc, RequestTimeoutError):     # the rest of the body may still trickle in
        resp.force_close()
    return resp


@web.middleware
async def auth_and_errors(request: web.Request, handler):
    try:
        _check_token(request)
        if request.method in ("POST", "PUT", "PATCH"):
            check_content_encoding(request.headers.get("Content-Encoding"))
        return await handler(request)
    except EdgeError as exc:
        if _websocket_started(request):
            return await _close_websocket(request, exc.one_line())
        if isinstance(exc, UnauthorizedError) and openai_compat.owns(request.path):
            return openai_compat.unauthorized()
        return _error(exc)
    except web.HTTPException:
        raise
    except (ConnectionError, RequestPayloadError) as exc:   # the client left or sent junk
        log.debug("client fault on %s: %s: %s", request.path, type(exc).__name__, exc)
        if _websocket_started(request):
            return await _close_websocket(request, None)
        return _error(BadInputError("the request body could not be read (the client "
                                    "disconnected or sent a malformed body)", stage="api"))
    except Exception:  # the daemon keeps serving; the log has the traceback
        log.exception("unhandled error in %s", request.path)
        if _websocket_started(request):       # after the 101: never write an HTTP response
            return await _close_websocket(request, "internal error; see the daemon log")
        return web.json_response({"error": {"code": "internal", "stage": "api", "message":
                                  "internal error; see the daemon log", "hint": None,
                                  "retryable": True}}, status=500)


def token_ok(request: web.Request) -> bool:
    """The API's one token rule: with ``server.token`` set, every route but /healthz needs
    ``Authorization: Bearer <token>``."""
    token = request.app[RUNTIME_KEY].cfg.server.token
    if not token or request.path == "/healthz":
        return True
    # headers are decoded as UTF-8 with surrogateescape: encode back the same way
    given = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
    return hmac.compare_digest(given, f"Bearer {token}".encode())


def _check_token(request: web.Request) -> None:
    if not token_ok(request):
        raise UnauthorizedError("missing or wrong bearer token",
                                hint="send Authorization: Bearer <server.token>")


def _websocket_started(request: web.Request) -> bool:
    ws = request.get(WS_KEY)
    return ws is not None and ws.prepared


async def _close_websocket(request: web.Request, message: str | None) -> web.StreamResponse:
    """An error after the WebSocket handshake: an ``error`` event and a clean close."""
    ws = request[WS_KEY]
    if not ws.closed:
        try:
            if message is not None:
                await ws.send_json({"type": "error", "error": {
                    "code": "internal", "stage": "api", "message": message, "hint": None,
                    "retryable": True}})
            await ws.close(code=WSCloseCode.INTERNAL_ERROR if message else WSCloseCode.OK)
        except (ConnectionError, RuntimeError):
            log.debug("stream client went away before the close")
    return ws


async def ask(request: web.Request) -> web.StreamResponse:
    rt = request.app[RUNTIME_KEY]
    limits = request.app[LIMITS_KEY]
    payload = parse_json_object(await read_body(request, limits.max_body_bytes), limits,
                                required=("text",))
    text = check_text(payload["text"], limits)
    budget = check_budget_ms(payload.get("budget_ms"), limits)
    session = check_session(payload.get("session"))
    stream = payload.get("stream", False)
    if not isinstance(stream, bool):
        raise BadInputError('"stream" must be true or false')
    if stream:
        from .api.ask_stream import stream_ask
        return await stream_ask(request, rt.pipeline, text, budget_ms=budget, session=session)
    cancel = CancelToken()
    try:
        result = await rt.pipeline.ask(text, cancel=cancel, budget_ms=budget, session=session)
    except asyncio.CancelledError:          # the client went away: stop decoding
        cancel.cancel()
        raise
    return web.json_response(result.to_dict())


async def announcements(request: web.Request) -> web.Response:
    """Finished timers not yet announced (each is returned once), oldest first."""
    pending = request.app[ANNOUNCE_KEY]
    out = list(pending)
    pending.clear()
    out += request.app[RUNTIME_KEY].finished_timers()
    out += await request.app[RUNTIME_KEY].run_due()
    return web.json_response({"announcements": out})


async def healthz(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME_KEY]
    rt.refresh_gauges()
    health = rt.health()
    from .voice.api import VOICE_KEY
    service = request.app.get(VOICE_KEY)
    if service is None:
        health["voice"] = "disabled"
    else:
        health["voice"] = "ok" if service.stack is not None else "unavailable"
    health["microphone"] = service.listener.health() if service and service.listener else "off"
    health["gpu"] = rt.accel.health() if rt.accel is not None else {"status": "off"}
    return web.json_response(health)


async def metrics(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME_KEY]
    rt.refresh_gauges()
    return web.Response(body=rt.metrics.render(),
                        headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


def make_app(rt: Runtime, *, voice: bool | None = None) -> web.Application:
    """The API; voice routes (/v1/audio, /v1/stream) unless ``voice.enabled`` is off."""
    app = web.Application(middlewares=[auth_and_errors],
                          client_max_size=rt.cfg.server.max_body_bytes)
    app[RUNTIME_KEY] = rt
    app[ANNOUNCE_KEY] = collections.deque(maxlen=32)
    app[LIMITS_KEY] = RequestLimits.from_config(rt.cfg)
    app[GUARD_KEY] = ConnectionGuard.from_config(rt.cfg.server, rt.metrics.registry)
    app.router.add_post("/v1/ask", ask)
    app.router.add_get("/v1/announcements", announcements)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    if rt.cfg.voice.enabled if voice is None else voice:
        from .voice.api import add_voice_routes
        add_voice_routes(app, rt)
    openai_compat.add_openai_routes(app, rt)
    return app


async def serve(cfg: Config) -> None:
    """Run until SIGTERM/SIGINT; models load off the event loop before readiness."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # Loading models (and, on a first start, building TensorRT engines) may outlast the unit's
    # TimeoutStartSec: EXTEND_TIMEOUT_USEC keeps systemd waiting, up to device.start_timeout_s.
    async with systemd_notify.extending_start(
            cfg.device.start_timeout_s,
            status_text="starting: loading models (a first start also builds TensorRT engines)"):
        rt = await loop.run_in_executor(None, Runtime.build, cfg)
        await rt.start()
        runner = GuardedRunner(make_app(rt))  # read timeouts, connection cap, quiet logs
        await runner.setup()                  # (loads the voice models: a VAD engine build)
    site = web.TCPSite(runner, cfg.server.host, cfg.server.port)
    await site.start()
    wyoming = None
    if cfg.wyoming.uri:                   # Home Assistant's voice protocol, same models
        from .voice.api import VOICE_KEY
        from .wyoming import start_wyoming
        try:
            wyoming = await start_wyoming(rt, runner.app.get(VOICE_KEY))
        except BaseException:             # e.g. its port is taken: stop what started
            await runner.cleanup()
            await rt.close()
            raise
    listener = None
    if cfg.voice.microphone:              # the always-on loop, on the same voice models
        from .voice.api import VOICE_KEY
        from .voice.listener import start_listener
        listener = await start_listener(runner.app[VOICE_KEY])
    log.info("edge-runtime ready on http://%s:%d (llm: %s, cloud: %s)", cfg.server.host,
             cfg.server.port, rt.stages.llm.device if rt.stages.llm else "unavailable",
             rt.stages.cloud.state if rt.stages.cloud else "disabled")
    systemd_notify.ready(f"serving on {cfg.server.host}:{cfg.server.port}")
    watchdog = systemd_notify.watchdog_interval_s()
    app = runner.app
    try:
        while not stop.is_set():
            tick = (watchdog / 2) if watchdog else 5.0
            timer_in = rt.next_timer_in_s()        # wake when the next timer rings
            try:
                await asyncio.wait_for(stop.wait(), timeout=min(tick, timer_in + 0.05)
                                       if timer_in is not None else tick)
            except asyncio.TimeoutError:
                pass
            for text in rt.finished_timers() + await rt.run_due():
                log.info("a timer finished (announced on /v1/announcements)")
                log.debug("timer finished: %s", text)   # its name came from the user
                app[ANNOUNCE_KEY].append(text)
                if listener is not None:          # the room hears it too
                    listener.announce(text)
            # ping only while alive: a stuck LLM thread stops the pings and systemd restarts
            # the daemon; a blocked loop or housekeeping step stops them by not coming here
            systemd_notify.watchdog_beat(rt.liveness())
            # re-probe failed cache tiers even without traffic, off the event loop
            await loop.run_in_executor(None, rt.stages.cache.probe_due)
            rt.refresh_gauges()
    finally:
        log.info("edge-runtime shutting down")
        systemd_notify.stopping()
        if listener is not None:
            await listener.stop()
        if wyoming is not None:
            await wyoming.stop()
        await runner.cleanup()
        await rt.close()

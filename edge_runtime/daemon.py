"""`edge-runtime serve`: one process, asyncio, HTTP API on loopback by default.

POST /v1/ask  {"text": "..."}   -> the answer object (DESIGN.md "Contracts");
              with "stream": true, NDJSON pieces then that object (api/ask_stream.py)
POST /v1/chat/completions, GET /v1/models -> the OpenAI-compatible API (api/openai_compat.py)
GET  /healthz                   -> {"status": "ok" | "degraded", ...}
GET  /metrics                   -> Prometheus text format
"""
from __future__ import annotations

import asyncio
import collections
import hmac
import json
import logging
import math
import signal

from aiohttp import web

from . import systemd as systemd_notify
from .config import Config
from .errors import BadInputError, EdgeError, OverloadedError
from .api import openai_compat
from .runtime import Runtime
from .types import CancelToken

log = logging.getLogger(__name__)

RUNTIME_KEY = web.AppKey("runtime", Runtime)
ANNOUNCE_KEY = web.AppKey("announcements", collections.deque)


def _error(exc: EdgeError) -> web.Response:
    headers = None
    if isinstance(exc, OverloadedError):
        headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))}
    return web.json_response({"error": exc.to_dict()}, status=exc.http_status, headers=headers)


def token_ok(request: web.Request) -> bool:
    """The API's one token rule: with ``server.token`` set, every route but /healthz needs
    ``Authorization: Bearer <token>``."""
    token = request.app[RUNTIME_KEY].cfg.server.token
    if not token or request.path == "/healthz":
        return True
    given = request.headers.get("Authorization", "")
    return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


@web.middleware
async def auth_and_errors(request: web.Request, handler):
    if not token_ok(request):
        if openai_compat.owns(request.path):
            return openai_compat.unauthorized()
        return web.json_response({"error": {"code": "unauthorized", "message":
                                      "missing or wrong bearer token", "stage": "api",
                                      "hint": "send Authorization: Bearer <server.token>",
                                      "retryable": False}}, status=401)
    try:
        return await handler(request)
    except EdgeError as exc:
        return _error(exc)
    except web.HTTPException:
        raise
    except Exception:  # the daemon keeps serving; the log has the traceback
        log.exception("unhandled error in %s", request.path)
        return web.json_response({"error": {"code": "internal", "stage": "api", "message":
                                  "internal error; see the daemon log", "hint": None,
                                  "retryable": True}}, status=500)


async def ask(request: web.Request) -> web.StreamResponse:
    rt = request.app[RUNTIME_KEY]
    body = await _read_body(request, rt.cfg.server.max_body_bytes)
    try:
        payload = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadInputError("request body is not UTF-8 JSON",
                            hint='send {"text": "..."} as application/json') from None
    except json.JSONDecodeError as exc:
        raise BadInputError(f"request body is not valid JSON ({exc.msg} at {exc.pos})",
                            hint='send {"text": "..."}') from None
    if not isinstance(payload, dict) or "text" not in payload:
        raise BadInputError('request body must be an object with a "text" field',
                            hint='send {"text": "..."}')
    budget = payload.get("budget_ms")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float))
                               or budget <= 0):
        raise BadInputError('"budget_ms" must be a positive number of milliseconds')
    session = payload.get("session")
    if session is not None and (not isinstance(session, str) or not 0 < len(session) <= 128):
        raise BadInputError('"session" must be a string of 1..128 characters')
    stream = payload.get("stream", False)
    if not isinstance(stream, bool):
        raise BadInputError('"stream" must be true or false')
    if stream:
        from .api.ask_stream import stream_ask
        return await stream_ask(request, rt.pipeline, payload["text"], budget_ms=budget,
                                session=session)
    cancel = CancelToken()
    try:
        result = await rt.pipeline.ask(payload["text"], cancel=cancel, budget_ms=budget,
                                       session=session)
    except asyncio.CancelledError:          # the client went away: stop decoding
        cancel.cancel()
        raise
    return web.json_response(result.to_dict())


async def _read_body(request: web.Request, limit: int) -> bytes:
    if request.content_length is not None and request.content_length > limit:
        raise BadInputError(f"request body is {request.content_length} bytes, more than "
                            f"{limit}", hint="send less or raise server.max_body_bytes")
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise BadInputError(f"request body is more than {limit} bytes",
                            hint="send less or raise server.max_body_bytes") from None


async def announcements(request: web.Request) -> web.Response:
    """Finished timers not yet announced (each is returned once), oldest first."""
    pending = request.app[ANNOUNCE_KEY]
    out = list(pending)
    pending.clear()
    out += request.app[RUNTIME_KEY].finished_timers()
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
    app.router.add_post("/v1/ask", ask)
    app.router.add_get("/v1/announcements", announcements)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    openai_compat.add_openai_routes(app, rt)
    if rt.cfg.voice.enabled if voice is None else voice:
        from .voice.api import add_voice_routes
        add_voice_routes(app, rt)
    return app


async def serve(cfg: Config) -> None:
    """Run until SIGTERM/SIGINT; models load off the event loop before readiness."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    rt = await loop.run_in_executor(None, Runtime.build, cfg)
    await rt.start()
    runner = web.AppRunner(make_app(rt), access_log=None)
    await runner.setup()
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
    systemd_notify.ready()
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
            for text in rt.finished_timers():
                log.info("timer finished: %s", text)
                app[ANNOUNCE_KEY].append(text)
                if listener is not None:          # the room hears it too
                    listener.announce(text)
            systemd_notify.watchdog_ping()
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

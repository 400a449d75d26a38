"""The OpenAI chat-completions API on the device, through the same pipeline as ``/v1/ask``.

    GET  /v1/models                 -> {"object": "list", "data": [{"id": "edge-runtime", ...}]}
    POST /v1/chat/completions       -> a chat.completion, or with "stream": true server-sent
                                       chat.completion.chunk events, then ``data: [DONE]``

Skills, the answer cache and budget routing (local model or cloud) answer as they do for
``/v1/ask``; how is told in an extension field, ``edge_runtime`` {``route``, ``device``,
``reason``, ``intent``, ``timings_ms``, ``ignored``} on the completion and on the last chunk,
which also carries ``first_token_ms`` (the pipeline's own first-piece time, from its start on
the request) and ``first_chunk_ms`` (when the first content chunk was written, from just
before the pipeline started), so their difference is what streaming adds. Errors have
OpenAI's shape ``{"error": {"message", "type", "param", "code"}}`` and status. The daemon's
bearer-token rule applies (``daemon.auth_and_errors``). Request parsing: ``openai_request``.
"""
from __future__ import annotations

import json
import logging
import math
import uuid
from typing import Any

from aiohttp import web

from ..errors import BadInputError, EdgeError, OverloadedError
from ..http_guard import LIMITS_KEY, read_body
from ..limits import RequestLimits, check_text, parse_json
from ..runtime import Runtime
from ..types import Result
from .http_stream import LazyResponse, serve_stream
from .openai_request import ChatRequest, ChatRequestError, parse_chat_request
from .streaming import AnswerStream, Piece

log = logging.getLogger(__name__)

MODEL_ID = "edge-runtime"
PATHS = ("/v1/chat/completions", "/v1/models")
_RUNTIME = web.AppKey("openai_runtime", Runtime)
_CREATED = web.AppKey("openai_created", int)


def add_openai_routes(app: web.Application, runtime: Runtime) -> None:
    app[_RUNTIME] = runtime
    app[_CREATED] = int(runtime.pipeline.clock.time())
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/v1/models/{model}", get_model)


def owns(path: str) -> bool:
    """Whether ``path`` is served here (its errors then take OpenAI's shape)."""
    return path in PATHS or path.startswith("/v1/models/")


# -- errors ------------------------------------------------------------------------------------
def error_body(message: str, *, type_: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def error_response(exc: EdgeError) -> web.Response:
    status = exc.http_status
    headers = None
    if isinstance(exc, OverloadedError):
        headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))}
    return web.json_response(_error_of(exc), status=status, headers=headers)


def _error_of(exc: EdgeError) -> dict:
    status = exc.http_status
    type_ = "invalid_request_error" if status < 500 else "server_error"
    message = exc.message + (f" ({exc.hint})" if exc.hint else "")
    return error_body(message, type_=type_, code=getattr(exc, "api_code", exc.code),
                      param=getattr(exc, "param", None))


def unauthorized() -> web.Response:
    return web.json_response(error_body(
        "missing or wrong bearer token (send Authorization: Bearer <server.token>)",
        type_="authentication_error", code="invalid_api_key"), status=401)


# -- models ------------------------------------------------------------------------------------
def _model_obj(app: web.Application) -> dict:
    return {"id": MODEL_ID, "object": "model", "created": app[_CREATED],
            "owned_by": "edge-runtime"}


async def list_models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [_model_obj(request.app)]})


async def get_model(request: web.Request) -> web.Response:
    name = request.match_info["model"]
    if name != MODEL_ID:
        return error_response(ChatRequestError(
            f"the model {name!r} does not exist here; this device serves {MODEL_ID!r}",
            param="model", code="model_not_found", status=404))
    return web.json_response(_model_obj(request.app))


# -- chat completions --------------------------------------------------------------------------
async def chat_completions(request: web.Request) -> web.StreamResponse:
    rt = request.app[_RUNTIME]
    session = None
    try:
        req = parse_chat_request(await _read_json(request, rt.cfg.server.max_body_bytes),
                                 (MODEL_ID,))
        check_text(req.text, request.app.get(LIMITS_KEY) or RequestLimits(),
                   field="messages[-1].content")
        session = _seed_session(rt.pipeline, req)
        if req.stream:
            return await _stream(request, rt.pipeline, req, session)
        result = await rt.pipeline.ask(req.text, session=session)
        return web.json_response(_completion(request.app, req, result))
    except EdgeError as exc:
        return error_response(exc)
    except Exception:                      # the daemon keeps serving; the log has the traceback
        log.exception("unhandled error in /v1/chat/completions")
        return web.json_response(error_body("internal error; see the daemon log",
                                            type_="server_error", code="internal"), status=500)
    finally:
        if session is not None and rt.pipeline.conversations is not None:
            rt.pipeline.conversations.forget(session)


async def _read_json(request: web.Request, limit: int) -> Any:
    """The body through the edge policy (``limits.py``): size, read timeout, UTF-8, JSON
    depth, finite numbers; an over-long body is OpenAI's 413."""
    if request.content_length is not None and request.content_length > limit:
        raise ChatRequestError(f"the request body is {request.content_length} bytes, more "
                               f"than {limit}", code="request_too_large", status=413,
                               hint="send a shorter conversation or raise "
                                    "server.max_body_bytes")
    limits = request.app.get(LIMITS_KEY) or RequestLimits()
    example = '{"model": "edge-runtime", "messages": [{"role": "user", "content": "..."}]}'
    raw = await read_body(request, limit)
    try:
        return parse_json(raw, limits, example=example)
    except BadInputError as exc:           # OpenAI's code for a body that is not usable JSON
        raise ChatRequestError(exc.message, code="invalid_json", hint=exc.hint) from None


def _seed_session(pipeline: Any, req: ChatRequest) -> str | None:
    """Earlier turns become a one-request conversation (forgotten when it is answered)."""
    if not req.history or pipeline.conversations is None:
        return None
    session = f"openai:{uuid.uuid4().hex}"
    pipeline.conversations.seed(session, req.history)
    return session


def _extension(result: Result, req: ChatRequest) -> dict:
    return {"route": result.route, "device": result.device, "reason": result.reason,
            "intent": result.intent.to_dict(), "timings_ms": result.timings.to_dict(),
            "ignored": list(req.ignored)}


def _completion(app: web.Application, req: ChatRequest, result: Result) -> dict:
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
            "created": int(app[_RUNTIME].pipeline.clock.time()), "model": req.model,
            "choices": [{"index": 0, "message": {"role": "assistant",
                                                 "content": result.answer},
                         "logprobs": None, "finish_reason": "stop"}],
            "edge_runtime": _extension(result, req)}


class _Chunks:
    """chat.completion.chunk events of one streamed answer."""

    def __init__(self, model: str, created: int) -> None:
        self.head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk",
                     "created": created, "model": model}
        self.role_sent = False

    def event(self, delta: dict, finish: str | None = None, **extra: Any) -> bytes:
        obj = {**self.head, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                         "finish_reason": finish}], **extra}
        return b"data: " + json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n\n"

    def content(self, text: str) -> bytes:
        delta = {"content": text}
        if not self.role_sent:
            self.role_sent = True
            delta = {"role": "assistant", **delta}
        return self.event(delta)


DONE = b"data: [DONE]\n\n"


async def _stream(request: web.Request, pipeline: Any, req: ChatRequest,
                  session: str | None) -> web.StreamResponse:
    clock = pipeline.clock
    t_start = clock.monotonic()             # just before the pipeline starts on it
    chunks = _Chunks(req.model, int(clock.time()))
    out = LazyResponse(request, "text/event-stream; charset=utf-8")
    first_chunk_m: float | None = None

    async def body() -> None:
        nonlocal first_chunk_m
        async with AnswerStream(pipeline, req.text, session=session, clock=clock) as stream:
            async for event in stream:
                if not isinstance(event, Piece):   # RESET: a cloud answer broke off
                    await out.write(chunks.event({}, edge_runtime={"reset": True}))
                    continue
                await out.write(chunks.content(event.text))
                if first_chunk_m is None:
                    first_chunk_m = clock.monotonic()
        ext = _extension(stream.result, req)
        first = stream.result.timings.first_token
        ext["first_token_ms"] = None if first is None else round(first * 1e3, 3)
        ext["first_chunk_ms"] = None if first_chunk_m is None else \
            round((first_chunk_m - t_start) * 1e3, 3)
        delta = {} if chunks.role_sent else {"role": "assistant", "content": ""}
        await out.write(chunks.event(delta, "stop", edge_runtime=ext))

    return await serve_stream(
        out, body, route="/v1/chat/completions", tail=DONE,
        error_event=lambda exc: b"data: " + json.dumps(_error_of(exc)).encode() + b"\n\n")


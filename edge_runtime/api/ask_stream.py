"""``POST /v1/ask`` with ``"stream": true``: the answer as NDJSON, one JSON object a line.

    {"type": "piece", "text": "Light "}
    {"type": "piece", "text": "scatters."}
    {"type": "answer", "transcript": ..., "route": ..., "answer": ..., "timings_ms": ...}

Pieces come as the answer is generated (a skill's or a cache hit's answer is one piece); the
last line is the answer object of the non-streaming call, with ``"type": "answer"`` added.
``{"type": "reset"}`` means the pieces so far are void (a cloud answer failed midway; the
local model answers from the start). An error before the first piece is an ordinary HTTP
error; after it, the last line is ``{"type": "error", "error": {code, message, hint, ...}}``.
"""
from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from .http_stream import LazyResponse, serve_stream
from .streaming import AnswerStream, Piece

CONTENT_TYPE = "application/x-ndjson"


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n"


async def stream_ask(request: web.Request, pipeline: Any, text: Any, *,
                     budget_ms: float | None, session: str | None) -> web.StreamResponse:
    out = LazyResponse(request, CONTENT_TYPE)

    async def body() -> None:
        async with AnswerStream(pipeline, text, budget_ms=budget_ms, session=session,
                                clock=pipeline.clock) as stream:
            async for event in stream:
                await out.write(_line({"type": "piece", "text": event.text}
                                      if isinstance(event, Piece) else {"type": "reset"}))
        await out.write(_line({"type": "answer", **stream.result.to_dict()}))

    return await serve_stream(out, body, route="/v1/ask",
                              error_event=lambda exc: _line({"type": "error",
                                                             "error": exc.to_dict()}))

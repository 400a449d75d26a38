"""A streamed HTTP response whose status line and headers go out with its first write.

Until something is written, the request can still fail with its proper HTTP status (a bad
request, 503 + ``Retry-After`` when the daemon refuses it): the caller raises as for any
other route. Once started, errors travel inside the stream (each format has its own event).
A client that went away shows up as ``ConnectionError`` from :meth:`LazyResponse.write`.
:func:`serve_stream` holds those rules for every streamed route.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from ..errors import EdgeError

log = logging.getLogger(__name__)


class LazyResponse:
    def __init__(self, request: web.Request, content_type: str,
                 headers: dict[str, str] | None = None) -> None:
        self.request = request
        self.response = web.StreamResponse(headers={
            "Content-Type": content_type, "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no", **(headers or {})})

    @property
    def started(self) -> bool:
        return self.response.prepared

    async def write(self, data: bytes) -> None:
        if not self.response.prepared:
            await self.response.prepare(self.request)
        await self.response.write(data)

    async def finish(self) -> web.StreamResponse:
        if not self.response.prepared:
            await self.response.prepare(self.request)
        await self.response.write_eof()
        return self.response


async def serve_stream(out: LazyResponse, body: Callable[[], Awaitable[None]], *, route: str,
                       error_event: Callable[[EdgeError], bytes],
                       tail: bytes = b"") -> web.StreamResponse:
    """Run ``body`` (it writes one answer to ``out``) and end the stream. An ``EdgeError``
    before anything was sent is raised (the HTTP status says it); after, it is logged and
    sent as ``error_event(exc)``. ``tail`` ends every stream that got that far. A client that
    went away (``route`` names it in the log) cancels the answer and ends the response."""
    try:
        try:
            await body()
        except EdgeError as exc:
            if not out.started:
                raise                        # nothing sent yet: the HTTP status says it
            log.info("streamed %s answer failed midway: %s", route, exc.one_line())
            await out.write(error_event(exc))
        if tail:
            await out.write(tail)
        return await out.finish()
    except ConnectionError:
        log.info("a %s stream client went away; its answer was cancelled", route)
        return out.response
    except asyncio.CancelledError:           # the server cancels handlers of gone clients
        log.info("a %s stream client went away; its answer was cancelled", route)
        raise

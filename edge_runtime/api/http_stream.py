"""A streamed HTTP response whose status line and headers go out with its first write.

Until something is written, the request can still fail with its proper HTTP status (a bad
request, 503 + ``Retry-After`` when the daemon refuses it): the caller raises as for any
other route. Once started, errors travel inside the stream (each format has its own event).
A client that went away shows up as ``ConnectionError`` from :meth:`LazyResponse.write`.
"""
from __future__ import annotations

from aiohttp import web


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

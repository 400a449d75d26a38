"""An answer as it is generated: the pipeline's answer sink turned into an async iterator.

    async with AnswerStream(pipeline, text, session=sid) as stream:
        async for event in stream:        # Piece(text) or RESET, in order
            ...
    result = stream.result                # the pipeline's Result, once iteration ended

The pipeline already hands every answer piece to an ``AnswerSink`` as it arrives (one piece
for a skill or a cache hit, the model's pieces for local and cloud answers; ``reset`` when a
cloud answer failed midway and the local model answers from the start). ``AnswerStream`` is
such a sink: it runs ``pipeline.ask`` as a task and yields what the sink received. Pieces that
arrive while the consumer is still writing the previous one are joined into one piece (the
buffer never holds more than the answer the pipeline keeps anyway). A pipeline error is raised
by the iteration after the pieces that came before it. Leaving the ``async with`` early (the
client went away) cancels the request: the local model stops within a token, a cloud
request is closed.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, NamedTuple

from ..clock import SYSTEM_CLOCK, Clock
from ..types import CancelToken, Result

log = logging.getLogger(__name__)


class Piece(NamedTuple):
    text: str


class _Reset:
    """The pieces sent so far are void; the answer starts again."""

    def __repr__(self) -> str:
        return "RESET"


RESET = _Reset()


class AnswerStream:
    """``pipeline.ask(text, ...)`` as an async iterator of :class:`Piece` / :data:`RESET`.

    ``first_piece_m``: ``clock.monotonic()`` when the sink got the first piece (None before).
    """

    def __init__(self, pipeline: Any, text: Any, *, budget_ms: float | None = None,
                 session: str | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self._pipeline = pipeline
        self._args = (text, budget_ms, session)
        self.clock = clock
        self.cancel_token = CancelToken()
        self.first_piece_m: float | None = None
        self._buf: list[str] = []
        self._reset_due = False
        self._sent_any = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._result: Result | None = None

    # -- the sink the pipeline writes to (event loop, never blocks) ---------------------------
    def piece(self, text: str) -> None:
        if self.first_piece_m is None:
            self.first_piece_m = self.clock.monotonic()
        self._buf.append(text)
        self._wake.set()

    def reset(self) -> None:
        self._buf.clear()
        if self._sent_any:
            self._reset_due = True
            self._wake.set()

    # -- the consumer's side -------------------------------------------------------------------
    @property
    def result(self) -> Result:
        if self._result is None:
            raise RuntimeError("the answer is not finished: iterate the stream first")
        return self._result

    async def __aenter__(self) -> AnswerStream:
        text, budget_ms, session = self._args
        self._task = asyncio.ensure_future(self._pipeline.ask(
            text, cancel=self.cancel_token, budget_ms=budget_ms, sink=self, session=session))
        self._task.add_done_callback(lambda _: self._wake.set())
        return self

    def __aiter__(self) -> AnswerStream:
        return self

    async def __anext__(self) -> Piece | _Reset:
        assert self._task is not None, "use AnswerStream in `async with`"
        while True:
            if self._reset_due:
                self._reset_due = False
                self._sent_any = False
                return RESET
            if self._buf:
                text = "".join(self._buf)
                self._buf.clear()
                self._sent_any = True
                return Piece(text)
            if self._task.done():
                self._result = self._task.result()     # raises the pipeline's error
                raise StopAsyncIteration
            self._wake.clear()
            await self._wake.wait()

    async def __aexit__(self, *exc_info: object) -> None:
        task = self._task
        if task is None:
            return
        if not task.done():              # the consumer left early (the client went away):
            self.cancel_token.cancel()   # the local model stops within a token, and the
            task.cancel()                # cloud request is closed (the gateway is told)
            await asyncio.wait({task})   # (raises only if this handler is cancelled itself)
            if not task.cancelled() and task.exception() is not None:
                log.debug("abandoned answer ended with %s", type(task.exception()).__name__)
        elif not task.cancelled():
            task.exception()             # retrieved: raised to the consumer already

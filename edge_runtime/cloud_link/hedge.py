"""Hedging against a slow cloud: race the local model once the budget is spent.

The scheduler sent a request to the cloud because the local model was predicted to miss the
latency budget. If the cloud's first piece has not arrived when the remaining budget runs
out (``hedge_after_s``), waiting longer only makes things worse, so the local model starts
too; whichever produces its first piece first wins and the other is cancelled (its async
generator is closed: the cloud client sends ``Cancel``, the local engine stops within a
token). Only the winner's pieces reach the sink, so the user hears exactly one answer.

If the cloud fails before its first piece, local starts at once; if the cloud wins and then
fails mid-stream, the sink is reset and the local model answers from the start.

Used by :class:`edge_runtime.scheduler.responders.CloudResponder` (and its hedged
variant), which passes ``can_hedge`` so the local model joins the race only while its
queue can take one more request.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Literal, Protocol
from collections.abc import AsyncIterator, Callable

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import CloudUnavailableError
from ..types import CancelToken

log = logging.getLogger(__name__)

CloudFactory = Callable[[], AsyncIterator[str]]
LocalFactory = Callable[[CancelToken], AsyncIterator[str]]


class Sink(Protocol):
    def piece(self, text: str) -> None: ...

    def reset(self) -> None: ...


@dataclass(frozen=True)
class HedgeOutcome:
    """How one cloud-routed request was answered.

    ``winner``: "cloud" or "local"; ``hedged``: the local model was started while the cloud
    was still pending (a race happened); ``first_piece_m``: ``clock.monotonic()`` when the
    winner's first piece reached the sink (None for an empty answer); ``cloud_error``: why
    the cloud lost or failed (None when it won cleanly); ``reason``: one line for the result.
    """

    winner: Literal["cloud", "local"]
    answer: str
    hedged: bool
    first_piece_m: float | None
    cloud_error: str | None
    reason: str


class _LinkedToken(CancelToken):
    """Cancelled by the hedge (the local model lost) or by the caller's token (barge-in)."""

    def __init__(self, parent: CancelToken) -> None:
        super().__init__()
        self._parent = parent

    @property
    def cancelled(self) -> bool:
        return self._event.is_set() or self._parent.cancelled


class _Runner:
    """One async iterator plus the task fetching its next piece."""

    def __init__(self, it: AsyncIterator[str]) -> None:
        self.it = it
        self.task: asyncio.Task = asyncio.ensure_future(self._next())

    async def _next(self) -> str:
        return await self.it.__anext__()

    async def stop(self) -> None:
        """Cancel the pending fetch and close the generator (runs its cleanup)."""
        if not self.task.done():
            self.task.cancel()
        with contextlib.suppress(BaseException):
            await self.task
        aclose = getattr(self.it, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


async def hedged_answer(cloud: CloudFactory, local: LocalFactory | None, *,
                        hedge_after_s: float, sink: Sink, clock: Clock = SYSTEM_CLOCK,
                        cancel: CancelToken | None = None,
                        can_hedge: Callable[[], bool] | None = None) -> HedgeOutcome:
    """Answer from the cloud, hedged by the local model after ``hedge_after_s`` seconds
    without a cloud piece (see module doc). ``local`` is None when there is no local model
    (then the cloud is simply awaited and its failure raised). ``cancel`` (barge-in) stops
    the local generation too. ``can_hedge`` is asked once the hedge is due: False (the local
    model is too busy to help) keeps waiting for the cloud alone. Raises
    ``CloudUnavailableError`` when the cloud fails and there is no local model; the local
    model's own error when it fails."""
    cancel = cancel or CancelToken()
    local_token = _LinkedToken(cancel)
    cloud_run = _Runner(cloud())
    local_run: _Runner | None = None
    hedged = False
    try:
        await asyncio.wait({cloud_run.task}, timeout=max(0.0, hedge_after_s))
        if not cloud_run.task.done() and local is not None and not cancel.cancelled and \
                (can_hedge is None or can_hedge()):
            hedged = True
            log.info("no cloud piece within %.0f ms: hedging with the local model",
                     hedge_after_s * 1e3)
            local_run = _Runner(local(local_token))
            await asyncio.wait({cloud_run.task, local_run.task},
                               return_when=asyncio.FIRST_COMPLETED)
            if not cloud_run.task.done() and _failure(local_run.task) is not None:
                # local failed first: the cloud is all we have
                await asyncio.wait({cloud_run.task})
        elif not cloud_run.task.done():
            await asyncio.wait({cloud_run.task})
        cloud_ok = cloud_run.task.done() and _failure(cloud_run.task) is None
        local_ok = (local_run is not None and local_run.task.done()
                    and _failure(local_run.task) is None)
        if cloud_ok and not local_ok:            # the cloud's first piece came first
            if local_run is not None:
                local_token.cancel()
                await local_run.stop()
                local_run = None
            try:
                return await _finish(cloud_run, "cloud", hedged, None, sink, clock)
            except CloudUnavailableError as exc:
                if local is None:
                    raise
                cloud_error = f"cloud failed mid-stream ({exc.message})"
                sink.reset()
        else:
            failure = _failure(cloud_run.task) if cloud_run.task.done() else None
            if failure is not None and local is None:
                if isinstance(failure, StopAsyncIteration):
                    return HedgeOutcome("cloud", "", hedged, None, None, "cloud answered (empty)")
                raise failure
            if failure is None:
                cloud_error = f"no cloud piece within {hedge_after_s * 1e3:.0f} ms"
            elif isinstance(failure, StopAsyncIteration):
                cloud_error = "cloud sent an empty answer"
            else:
                cloud_error = f"cloud failed ({getattr(failure, 'message', failure)})"
            await cloud_run.stop()
            if local_run is not None and not local_run.task.done():
                await asyncio.wait({local_run.task})   # the cloud failed while local was starting
            if local_run is not None:
                local_failure = _failure(local_run.task)
                if local_failure is None:
                    return await _finish(local_run, "local", hedged, cloud_error, sink, clock)
                raise local_failure                    # the local model itself failed
        # without a local model every path above has returned or raised
        assert local is not None
        local_run = _Runner(local(local_token))        # local from the start
        return await _finish(local_run, "local", hedged, cloud_error, sink, clock)
    finally:
        await cloud_run.stop()
        if local_run is not None:
            local_token.cancel()
            await local_run.stop()


def _failure(task: asyncio.Task) -> BaseException | None:
    if task.cancelled():
        return asyncio.CancelledError()
    return task.exception()


async def _finish(r: _Runner, who: Literal["cloud", "local"],
                  hedged: bool, cloud_error: str | None, sink: Sink,
                  clock: Clock) -> HedgeOutcome:
    """Stream the winner's pieces (its first fetch may still be running) into ``sink``."""
    pieces: list[str] = []
    first_m: float | None = None
    try:
        piece = await r.task
    except StopAsyncIteration:
        piece = None
    while piece is not None:
        if first_m is None:
            first_m = clock.monotonic()
        pieces.append(piece)
        sink.piece(piece)
        try:
            piece = await r.it.__anext__()
        except StopAsyncIteration:
            piece = None
    if who == "cloud":
        reason = "cloud answered first (local hedge cancelled)" if hedged else "cloud answered"
    else:
        reason = (f"{cloud_error}; " if cloud_error else "") + (
            "the local model answered first (cloud cancelled)" if hedged and cloud_error and
            cloud_error.startswith("no cloud piece") else "answered locally")
    return HedgeOutcome(who, "".join(pieces).strip(), hedged, first_m, cloud_error, reason)

"""The thin async adapter of the local LLM: the engine's generator runs on LLM threads.

One thread per request the engine can decode at once (its ``capacity``: 1 for the plain
engine, ``max_batch`` with micro-batching), so a batched engine sees its sessions
concurrently while a plain one serialises them. Pieces reach the event loop through a
bounded queue; a consumer that goes away cancels the generation within a token.

The request's :class:`~edge_runtime.scheduler.LocalSlot` (reserved by the scheduler) is told
when its generation starts, when its first token comes and when it ends (with the
engine's stats, which keep the scheduler's models true). :meth:`AsyncLlm.longest_running_s`
tells how long the oldest running generation has run (the daemon's liveness check).
"""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast
from collections.abc import AsyncGenerator, Callable, Sequence

from ..clock import SYSTEM_CLOCK, Clock
from ..types import CancelToken, Device, GenerationParams, Message
from .prompt import Prompt


class AsyncLlm:
    def __init__(self, engine: Any, *, on_stats: Callable[[dict], None] | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.engine = engine
        self.capacity = max(1, int(engine.capacity))
        self._threads = ThreadPoolExecutor(self.capacity, thread_name_prefix="llm")
        self._on_stats = on_stats
        self._clock = clock
        self._running: dict[int, float] = {}      # generation id -> start (monotonic)
        self._running_lock = threading.Lock()
        self._next_id = 0

    def longest_running_s(self) -> float:
        """Seconds the oldest generation still on an LLM thread has run (0: none)."""
        with self._running_lock:
            oldest = min(self._running.values(), default=None)
        return 0.0 if oldest is None else max(0.0, self._clock.monotonic() - oldest)

    def _begin(self) -> int:
        with self._running_lock:
            self._next_id += 1
            self._running[self._next_id] = self._clock.monotonic()
            return self._next_id

    def _end(self, key: int) -> None:
        with self._running_lock:
            self._running.pop(key, None)

    @property
    def device(self) -> Device:
        # the engine's provider (OpenedSession.device): "tensorrt", "cuda" or "cpu"
        return cast(Device, str(self.engine.device))

    def prepare(self, messages: Sequence[Message]) -> Prompt:
        """The request's prompt, templated and tokenized once (``LlmEngine.prepare``)."""
        prompt: Prompt = self.engine.prepare(messages)
        return prompt

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        return int(self.engine.prompt_tokens(messages))

    async def run(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on an LLM thread (calibration, warm-up)."""
        return await asyncio.get_running_loop().run_in_executor(self._threads, fn)

    async def stream(self, messages: Sequence[Message], params: GenerationParams,
                     cancel: CancelToken, slot: Any = None) -> AsyncGenerator[str, None]:
        """The engine's pieces for ``messages``: best a prompt from :meth:`prepare`, which
        the engine does not template or tokenize again."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue(maxsize=params.max_new_tokens + 8)
        done = object()
        engine = self.engine

        def work() -> None:
            first = True
            stats: dict = {}
            key = self._begin()
            if slot is not None:
                slot.started()
            try:
                if cancel.cancelled:         # the client left while it waited for a thread
                    return
                for piece in engine.generate(messages, params, cancel):
                    if first and slot is not None:
                        slot.first_token()
                    first = False
                    loop.call_soon_threadsafe(queue.put_nowait, piece)
                stats = dict(getattr(engine, "last_stats", None) or {})
            except BaseException as exc:  # handed to the awaiting coroutine
                loop.call_soon_threadsafe(queue.put_nowait, exc)
            finally:
                self._end(key)
                loop.call_soon_threadsafe(queue.put_nowait, done)
                if slot is not None:
                    slot.finished(stats)
                if stats and self._on_stats is not None:
                    self._on_stats(stats)

        fut = loop.run_in_executor(self._threads, work)
        completed = False
        try:
            while (item := await queue.get()) is not done:
                if isinstance(item, BaseException):
                    raise item
                yield item
            completed = True
        finally:
            if not completed:      # the consumer went away: stop decoding within a token
                cancel.cancel()
            await asyncio.shield(fut)

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)

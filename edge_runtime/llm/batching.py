"""Micro-batching: concurrent sessions decode together in one onnxruntime call per step.

:class:`BatchingEngine` has the :class:`~edge_runtime.llm.base.LlmEngine` interface and is
safe to call from many threads. Each ``generate`` takes a cache slot (waiting, bounded, when
all are busy), then runs the ordinary decode loop (:func:`decode_stream`: sampling, UTF-8,
sentence cap, cancel) in the caller's thread; model calls are queued and run by
whichever caller finds no round running (it leads one round: every slot that has a token
ready goes into one batched step of the shared :class:`BatchKvRunner`). The
:class:`BatchController` decides when a step starts: at once when the batch holds every
decoding session (one session: no wait, single-request latency),
otherwise after at most ``max_wait_s``; the batch size therefore follows the number of
sessions in flight, bounded to [1, max_batch] (max_batch <= 16).

A provider that fails at run time is replaced by the next one (the wrapped engine's
fallback); every slot's cache is then stale and each session replays its own history
(prompt + tokens so far) on its next step, so no request is dropped.
"""
from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import ConfigError, OverloadedError
from ..types import CancelToken, GenerationParams, Message
from .batch_runner import BatchKvRunner
from .decode import decode_stream, new_stats

log = logging.getLogger(__name__)

MAX_BATCH_LIMIT = 16
SLOT_POLL_S = 0.05   # how often a caller waiting for a slot checks its cancel token


class BatchController:
    """When to start a step: batch target = sessions decoding, clamped to [1, max_batch]."""

    def __init__(self, max_batch: int, max_wait_s: float = 0.004) -> None:
        if not 1 <= max_batch <= MAX_BATCH_LIMIT:
            raise ConfigError(f"llm.max_batch must be in 1..{MAX_BATCH_LIMIT}, got {max_batch}",
                              hint="set llm.max_batch between 1 and 16")
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.sizes: Counter[int] = Counter()   # steps run per batch size (bounded keys)

    def target(self, decoding: int) -> int:
        return max(1, min(self.max_batch, decoding))

    def ready(self, pending: int, decoding: int, waited_s: float) -> bool:
        """Start now? ``pending`` tokens are waiting, ``decoding`` sessions may send one."""
        return pending >= self.target(decoding) or (pending > 0 and waited_s >= self.max_wait_s)

    def record(self, size: int) -> None:
        self.sizes[size] += 1


@dataclass
class _Request:
    slot: int
    ids: list[int]                 # prompt (prefill) or [token] (step)
    history: list[int]             # everything the slot's cache must hold afterwards
    prefill: bool
    done: threading.Event = field(default_factory=threading.Event)
    logits: np.ndarray | None = None
    error: BaseException | None = None


class BatchingEngine:
    """Thread-safe micro-batching front over an :class:`OnnxLlmEngine` (shares its session,
    tokenizer and chat template). ``max_waiting`` bounds callers waiting for a slot; one
    more raises OverloadedError. ``context_tokens`` caps each slot's prompt + answer
    (longer conversations are trimmed like the plain engine's). ``last_stats`` is per
    calling thread."""

    def __init__(self, engine, *, max_batch: int = 8, max_waiting: int = 32,
                 max_wait_s: float = 0.004, context_tokens: int = 1024,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.engine = engine
        self.model_name = engine.model_name
        self.controller = BatchController(max_batch, max_wait_s)
        self.max_waiting = max_waiting
        self.clock = clock
        # per-slot context: onnxruntime touches a slot's whole cache row on first use, so
        # memory is max_batch x context_tokens x (45 KiB/token for SmolLM2-135M)
        self.max_len = max(8, min(int(context_tokens), engine.max_len))
        self.runner = BatchKvRunner(engine._runner.opened, engine.cfg, self.max_len, max_batch)
        self._cv = threading.Condition()
        self._free = list(range(max_batch))
        self._waiting = 0
        self._decoding: set[int] = set()
        self._stale: set[int] = set()
        self._pending: list[_Request] = []
        self._closed = False
        self._local = threading.local()
        self._leading = False   # a caller thread is running a round

    # -- LlmEngine protocol ------------------------------------------------------------------
    @property
    def device(self) -> str:
        return self.runner.device

    @property
    def providers(self) -> list[str]:
        return list(self.runner.opened.providers)

    @property
    def last_stats(self) -> dict:
        return getattr(self._local, "stats", {})

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        return min(len(self.engine.prompt.tokens(messages)), self.max_len - 1)

    def generate(self, messages: Sequence[Message], params: GenerationParams,
                 cancel: CancelToken | None = None) -> Iterator[str]:
        eng = self.engine
        max_new = max(1, min(params.max_new_tokens, self.max_len - 1))
        budget = max(self.max_len - max_new, min(self.max_len - 1, self.max_len // 4))
        ids, dropped = eng.prompt.fit(messages, budget)
        stats = new_stats(len(ids), self.device)
        stats["dropped_messages"] = dropped
        self._local.stats = stats
        slot = self._acquire(ids, cancel)
        if slot is None:             # cancelled while waiting for a slot
            stats["stop_reason"] = "cancelled"
            return
        first = [True]

        def feed(new: list[int], history: list[int]) -> np.ndarray:
            req = _Request(slot, list(new), list(history), first[0])
            first[0] = False
            return self._submit(req)

        try:
            yield from decode_stream(feed, ids, params, eng._vocab,
                                     max_new_tokens=min(max_new, self.max_len - len(ids)),
                                     cancel=cancel, stats=stats, clock=self.clock)
        finally:
            stats["device"] = self.device
            self._release(slot)

    def close(self) -> None:
        """Refuse new requests (running ones finish)."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    # -- slots -------------------------------------------------------------------------------
    def _acquire(self, ids: list[int], cancel: CancelToken | None) -> int | None:
        """A free slot (preferring one whose cache starts like ``ids``); None if ``cancel``
        fires while all slots are busy."""
        with self._cv:
            if not self._free:
                if self._waiting >= self.max_waiting:
                    raise OverloadedError(
                        f"local LLM busy: {self.controller.max_batch} sessions running and "
                        f"{self._waiting} waiting", hint="raise llm.max_batch or retry later")
                self._waiting += 1
                try:
                    while not self._free and not self._closed:
                        if cancel is not None and cancel.cancelled:
                            return None
                        self._cv.wait(SLOT_POLL_S)
                finally:
                    self._waiting -= 1
            if self._closed:
                raise OverloadedError("local LLM is shut down", hint="restart the runtime")
            # a step runs rows 0..highest busy slot: only pick a slot at or below the
            # lowest free one or the highest busy one, so the batch never grows for a cache hit
            busy = [s for s in range(self.controller.max_batch) if s not in self._free]
            limit = max(min(self._free), max(busy, default=-1))
            slot = self.runner.best_slot([s for s in self._free if s <= limit], ids)
            self._free.remove(slot)
            return slot

    def _release(self, slot: int) -> None:
        with self._cv:
            self._decoding.discard(slot)
            self._free.append(slot)
            self._cv.notify_all()

    def _submit(self, req: _Request) -> np.ndarray:
        """Queue ``req``; the first caller to find no step running leads: it gathers the
        batch, runs it and hands out the results (no worker thread, so a lone session
        pays no thread hand-off per token); the others wait for their result."""
        with self._cv:
            if self._closed:
                raise OverloadedError("local LLM is shut down", hint="restart the runtime")
            self._pending.append(req)
            self._cv.notify_all()
            while not req.done.is_set() and self._leading:
                self._cv.wait()
            if req.done.is_set():
                return self._result(req)
            self._leading = True
        try:
            while not req.done.is_set():
                self._round(self._take())
        finally:
            with self._cv:
                self._leading = False
                self._cv.notify_all()
        return self._result(req)

    @staticmethod
    def _result(req: _Request) -> np.ndarray:
        if req.error is not None:
            raise req.error
        return req.logits

    def _take(self) -> list[_Request]:
        """The requests of the next round: wait (at most max_wait_s) until every decoding
        session has its token in, unless a prompt is waiting to be prefilled."""
        with self._cv:
            t0 = self.clock.monotonic()
            while not any(r.prefill for r in self._pending):
                waited = self.clock.monotonic() - t0
                if self.controller.ready(len(self._pending), len(self._decoding), waited):
                    break
                self._cv.wait(max(1e-4, self.controller.max_wait_s - waited))
            taken, self._pending = self._pending, []
            return taken

    def _round(self, taken: list[_Request]) -> None:
        prefills = [r for r in taken if r.prefill or r.slot in self._stale]
        steps = [r for r in taken if not (r.prefill or r.slot in self._stale)]
        if steps:
            self._run(steps, batched=True)
        for r in prefills:
            self._run([r], batched=False)
        with self._cv:
            self._cv.notify_all()

    def _run(self, reqs: list[_Request], batched: bool) -> None:
        try:
            try:
                if batched:
                    out = self.runner.step({r.slot: r.ids[0] for r in reqs})
                    self.controller.record(len(reqs))
                    for r in reqs:
                        r.logits = out[r.slot]
                else:
                    r = reqs[0]
                    ids = r.history if r.slot in self._stale else r.ids
                    r.logits = self.runner.prefill(r.slot, ids)
                    self._stale.discard(r.slot)
                    with self._cv:
                        self._decoding.add(r.slot)
            except (ValueError, MemoryError):
                raise
            except Exception as exc:  # onnxruntime raises its own RuntimeException types
                self._switch_provider(exc)
                for r in reqs:   # replay each request's whole history on the new provider
                    r.logits = self.runner.prefill(r.slot, r.history)
                    self._stale.discard(r.slot)
        except BaseException as exc:   # hand the failure to the waiting callers
            for r in reqs:
                r.error = exc
        finally:
            for r in reqs:
                r.done.set()

    def _switch_provider(self, exc: Exception) -> None:
        self.engine._fallback(exc)   # raises ModelLoadError when no provider is left
        opened = self.engine._runner.opened
        self.runner = BatchKvRunner(opened, self.engine.cfg, self.max_len,
                                    self.controller.max_batch)
        self._stale = set(range(self.controller.max_batch))

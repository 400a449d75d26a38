"""Micro-batching: concurrent sessions decode together in one onnxruntime call per step.

:class:`BatchingEngine` has the :class:`~edge_runtime.llm.base.LlmEngine` interface and is
safe to call from many threads. Each ``generate`` takes a cache slot (waiting, bounded, when
none may be taken), then runs the ordinary decode loop (:func:`decode_stream`: sampling,
UTF-8, sentence cap, cancel) in the caller's thread; model calls are queued and run by
whichever caller finds no round running (it leads rounds until its own request is done).

A round is either a **prefill round** or a **decode step**. Prompts go first (time to
first token is what the latency budget promises): a prefill round runs the waiting prompts
one after another, reusing a cached prefix from any slot (:class:`BatchKvRunner`), until
about ``max_prefill_stall_s`` of work is done; a longer prompt is resumed in the next
prefill round, and a decode step of the running sessions always comes in between, so a
burst of prompts stalls them for at most about that long. A decode step starts once every
decoding session has its token in (one session: at once, single-request latency),
otherwise after at most ``max_wait_s``.

The :class:`~edge_runtime.llm.control.BatchController` (a PID on the queue length: callers
waiting for a slot + prompts waiting to prefill) sets the **batch target**: how many slots
may be in use, within [2, max_batch] (max_batch <= 16). ``max_batch`` slots are allocated.

Load API for the scheduler (the plain :class:`~edge_runtime.llm.onnx_engine.OnnxLlmEngine`
has the same names with capacity 1):

- ``capacity`` (int): slots, the most sessions decoding together;
- ``batch_target`` (int): the PID's current limit on slots in use;
- ``active`` (int): sessions holding a slot; ``queued`` (int): callers waiting for a slot
  plus prompts waiting to be prefilled;
- ``step_time_s(batch)``: seconds per decode step with ``batch`` rows (EWMA per size
  measured, calibrated at start for 1 and ``capacity`` rows, linear in between/beyond);
- ``prefill_time_s(tokens)``: seconds to prefill ``tokens`` new prompt tokens (measured).

A new request's local time to first token is then about: the wait for a slot (none while
``active < batch_target``) + the rest of the running step (<= ``step_time_s(active)``) +
``prefill_time_s`` of the prompts queued ahead and of its own uncached tokens.

A provider that fails at run time is replaced by the next one (the wrapped engine's
fallback); every slot's cache is then stale and each session replays its own history
(prompt + tokens so far) on its next step, so no request is dropped.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import OverloadedError
from ..types import CancelToken, GenerationParams, Message
from .batch_runner import BatchKvRunner
from .control import (DEFAULT_GAINS, MAX_BATCH_LIMIT, PRIOR_PREFILL_PER_TOKEN_S,
                      PRIOR_STEP_PER_ROW_S, PRIOR_STEP_S, BatchController, PidController,
                      PidGains, PrefillTimes, StepTimes)
from .decode import decode_stream, new_stats
from .prompt import Prompt, as_prompt
from .runner import PREFILL_CHUNK

log = logging.getLogger(__name__)

__all__ = ["MAX_BATCH_LIMIT", "BatchController", "BatchingEngine", "PidController", "PidGains"]

SLOT_POLL_S = 0.05   # how often a caller waiting for a slot checks its cancel token
CALIBRATION_PROMPT = 32   # tokens of the prefill timed at start


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
    (longer conversations are trimmed like the plain engine's). ``gains`` tune the batch
    controller; ``calibrate`` times a few steps and a prefill at start (also warming up
    the batch shapes). ``last_stats`` is per calling thread."""

    def __init__(self, engine, *, max_batch: int = 8, max_waiting: int = 32,
                 max_wait_s: float = 0.004, context_tokens: int = 1024,
                 max_prefill_stall_s: float = 0.25, gains: PidGains = DEFAULT_GAINS,
                 calibrate: bool = True, clock: Clock = SYSTEM_CLOCK) -> None:
        self.engine = engine
        self.model_name = engine.model_name
        self.controller = BatchController(max_batch, max_wait_s=max_wait_s, gains=gains,
                                          clock=clock)
        self.max_waiting = max_waiting
        self.max_prefill_stall_s = max_prefill_stall_s
        self.clock = clock
        # per-slot context: onnxruntime touches a slot's whole cache row on first use, so
        # memory is max_batch x context_tokens x (45 KiB/token for SmolLM2-135M)
        self.max_len = max(8, min(int(context_tokens), engine.max_len))
        self.runner = BatchKvRunner(engine._runner.opened, engine.cfg, self.max_len, max_batch)
        self.step_times = StepTimes(PRIOR_STEP_S, PRIOR_STEP_PER_ROW_S)
        self.prefill_times = PrefillTimes(PRIOR_PREFILL_PER_TOKEN_S, min_tokens=8)
        # one lock, three conditions, so a submitted token wakes only the leader and a
        # finished step wakes only the callers waiting for results
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)    # the leader: new requests
        self._results = threading.Condition(self._lock)  # callers: results, leadership
        self._slots = threading.Condition(self._lock)    # callers waiting for a slot
        self._free = list(range(max_batch))
        self._waiting = 0
        self._decoding: set[int] = set()
        self._stale: set[int] = set()
        self._pending: list[_Request] = []
        self._prefilling = 0     # prompts taken by the running prefill round, not yet done
        self._owe_step = False   # a prefill round ran: the decoders get the next step
        self._closed = False
        self._local = threading.local()
        self._leading = False   # a caller thread is running a round
        if calibrate:
            self._calibrate()

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

    def prepare(self, messages: Sequence[Message]) -> Prompt:
        """The request's prompt, templated and tokenized once (see :mod:`.prompt`)."""
        return self.engine.prompt.prepare(messages, self.max_len - 1)

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        return self.prepare(messages).tokens

    def generate(self, messages: Sequence[Message], params: GenerationParams,
                 cancel: CancelToken | None = None) -> Iterator[str]:
        eng = self.engine
        prompt = as_prompt(eng.prompt, messages, self.max_len - 1)
        max_new = max(1, min(params.max_new_tokens, self.max_len - 1))
        budget = max(self.max_len - max_new, min(self.max_len - 1, self.max_len // 4))
        ids, dropped = eng.prompt.fit_prompt(prompt, budget)
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
        with self._lock:
            self._closed = True
            for cond in (self._work, self._results, self._slots):
                cond.notify_all()

    # -- load API (for the scheduler) --------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Cache slots: the most sessions that decode together."""
        return self.controller.max_batch

    @property
    def batch_target(self) -> int:
        """How many slots may be in use now (the batch controller's target, brought up to
        date with the current queue)."""
        with self._lock:
            return self._update_target()

    @property
    def active(self) -> int:
        """Sessions holding a slot (prefilling or decoding)."""
        with self._lock:
            return self.capacity - len(self._free)

    @property
    def queued(self) -> int:
        """Callers waiting for a slot + prompts waiting to be prefilled."""
        with self._lock:
            return self._queue_len()

    def step_time_s(self, batch: int) -> float:
        """Seconds per decode step with ``batch`` rows (1..capacity)."""
        return self.step_times.estimate(max(1, min(int(batch), self.capacity)))

    def prefill_time_s(self, tokens: int) -> float:
        """Seconds to prefill ``tokens`` new (uncached) prompt tokens."""
        return self.prefill_times.estimate(tokens, self.step_times.estimate(1))

    # -- slots -------------------------------------------------------------------------------
    def _queue_len(self) -> int:
        prompts = sum(1 for r in self._pending if r.prefill or r.slot in self._stale)
        return self._waiting + prompts + self._prefilling

    def _update_target(self) -> int:
        """Feed the controller the queue length (call with ``_lock`` held)."""
        return self.controller.update(self._queue_len(), self.capacity - len(self._free))

    def _admissible(self) -> bool:
        return bool(self._free) and self.capacity - len(self._free) < self.controller.target

    def _acquire(self, ids: list[int], cancel: CancelToken | None) -> int | None:
        """A free slot (preferring one whose cache starts like ``ids``) once the batch
        target allows one more session; None if ``cancel`` fires while waiting."""
        with self._lock:
            self._update_target()
            if not self._admissible() and not self._closed:
                if self._waiting >= self.max_waiting:
                    raise OverloadedError(
                        f"local LLM busy: {self.capacity - len(self._free)} sessions running "
                        f"and {self._waiting} waiting", hint="raise llm.max_batch or retry later")
                self._waiting += 1
                try:
                    self._update_target()
                    while not self._admissible() and not self._closed:
                        if cancel is not None and cancel.cancelled:
                            return None
                        self._slots.wait(SLOT_POLL_S)
                        self._update_target()
                finally:
                    self._waiting -= 1
            if self._closed:
                raise OverloadedError("local LLM is shut down", hint="restart the runtime")
            # a step runs rows 0..highest busy slot: only pick a slot at or below the
            # lowest free one or the highest busy one, so the batch never grows for a cache hit
            busy = [s for s in range(self.capacity) if s not in self._free]
            limit = max(min(self._free), max(busy, default=-1))
            slot = self.runner.best_slot([s for s in self._free if s <= limit], ids)
            self._free.remove(slot)
            return slot

    def _release(self, slot: int) -> None:
        with self._lock:
            self._decoding.discard(slot)
            self._free.append(slot)
            self._update_target()
            self._slots.notify_all()
            self._work.notify_all()      # one session fewer to wait for in a step

    # -- rounds ------------------------------------------------------------------------------
    def _submit(self, req: _Request) -> np.ndarray:
        """Queue ``req``; the first caller to find no round running leads: it runs rounds
        until its own request is done (no worker thread, so a lone session pays no thread
        hand-off per token); the others wait for their result."""
        with self._lock:
            if self._closed:
                raise OverloadedError("local LLM is shut down", hint="restart the runtime")
            self._pending.append(req)
            self._work.notify_all()
            while not req.done.is_set() and self._leading:
                self._results.wait()
            if req.done.is_set():
                return self._result(req)
            self._leading = True
        try:
            while not req.done.is_set():
                prefills, steps = self._take()
                if prefills:
                    self._prefill_round(prefills)
                else:
                    self._step_round(steps)
        finally:
            with self._lock:
                self._leading = False
                self._results.notify_all()   # a waiting caller takes over
        return self._result(req)

    @staticmethod
    def _result(req: _Request) -> np.ndarray:
        if req.error is not None:
            raise req.error
        assert req.logits is not None   # set by the round that completed the request
        return req.logits

    def _take(self) -> tuple[list[_Request], list[_Request]]:
        """The next round: (prompts to prefill, []) or ([], tokens to step). Prompts go
        first, except right after a prefill round while tokens wait (the running sessions
        get a step in between); a step waits (at most max_wait_s) until every decoding
        session has its token in."""
        with self._lock:
            t0 = self.clock.monotonic()
            while True:
                self._update_target()
                prefills = [r for r in self._pending if r.prefill or r.slot in self._stale]
                steps = [r for r in self._pending if not (r.prefill or r.slot in self._stale)]
                if prefills and not (steps and self._owe_step):
                    self._pending = steps
                    self._prefilling = len(prefills)
                    return prefills, []
                waited = self.clock.monotonic() - t0
                if steps and self.controller.ready(len(steps), len(self._decoding), waited):
                    self._pending = prefills
                    self._owe_step = False
                    return [], steps
                self._work.wait(max(1e-4, self.controller.max_wait_s - waited) if steps
                                else None)

    def _prefill_round(self, reqs: list[_Request]) -> None:
        """Prefill ``reqs`` in order until about ``max_prefill_stall_s`` of work is done;
        the unfinished ones go back to the front of the queue."""
        budget = max(PREFILL_CHUNK,
                     int(self.max_prefill_stall_s / self.prefill_times.per_token_s))
        left: list[_Request] = []
        for r in reqs:
            finished = False
            if budget > 0:
                computed, finished = self._prefill_one(r, budget)
                budget -= computed
            if not finished:
                left.append(r)
            with self._lock:
                self._prefilling -= 1
        with self._lock:
            self._pending[:0] = left
            self._owe_step = True

    def _prefill_one(self, r: _Request, limit: int) -> tuple[int, bool]:
        """Run up to ``limit`` prompt tokens of ``r``; (tokens run, finished)."""
        t0 = self.clock.monotonic()
        try:
            try:
                ids = r.history if r.slot in self._stale else r.ids
                logits = self.runner.prefill(r.slot, ids, limit=limit)
                computed = self.runner.computed
                self.prefill_times.observe(computed, self.clock.monotonic() - t0)
            except (ValueError, MemoryError):
                raise
            except Exception as exc:  # onnxruntime raises its own RuntimeException types
                self._switch_provider(exc)
                logits = self.runner.prefill(r.slot, r.history)   # replay on the new provider
                computed = self.runner.computed
            if logits is None:
                return computed, False
            r.logits = logits
            self._stale.discard(r.slot)
            with self._lock:
                self._decoding.add(r.slot)
        except BaseException as exc:   # hand the failure to the waiting caller
            r.error = exc
            computed = 0
        with self._lock:               # its first token now, not after the whole round
            r.done.set()
            self._results.notify_all()
        return computed, True

    def _step_round(self, reqs: list[_Request]) -> None:
        feeds = {r.slot: r.ids[0] for r in reqs}
        t0 = self.clock.monotonic()
        try:
            try:
                out = self.runner.step(feeds)
                self.step_times.observe(max(feeds) + 1, self.clock.monotonic() - t0)
                self.controller.record(len(reqs))
                for r in reqs:
                    r.logits = out[r.slot]
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
            with self._lock:
                for r in reqs:
                    r.done.set()
                self._results.notify_all()

    def _switch_provider(self, exc: Exception) -> None:
        self.engine._fallback(exc)   # raises ModelLoadError when no provider is left
        opened = self.engine._runner.opened
        self.runner = BatchKvRunner(opened, self.engine.cfg, self.max_len, self.capacity)
        self._stale = set(range(self.capacity))

    def _calibrate(self, repeats: int = 2) -> None:
        """Time decode steps with 1 and ``capacity`` rows and one prefill (the first run of
        each shape only warms up); the slots are left empty."""
        tok = int(self.engine.cfg.get("bos_token_id", 0))
        clock = self.clock
        try:
            for rows in sorted({1, self.capacity}):
                for i in range(repeats):
                    t0 = clock.monotonic()
                    self.runner.step({rows - 1: tok})
                    if i:
                        self.step_times.observe(rows, clock.monotonic() - t0)
                    self.runner.forget(rows - 1)
            n = min(CALIBRATION_PROMPT, self.max_len)
            for i in range(repeats):
                t0 = clock.monotonic()
                self.runner.prefill(0, [tok] * n, reuse=False)
                if i:
                    self.prefill_times.observe(n, clock.monotonic() - t0)
        except Exception as exc:  # a provider that fails here fails over on first use
            log.warning("batch calibration failed on %s: %s", self.device, exc)
        finally:
            for s in range(self.capacity):
                self.runner.forget(s)

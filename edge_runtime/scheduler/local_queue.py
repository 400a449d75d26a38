"""Everything committed to the local model, and when a new request's first token would come.

A request routed to the local model takes a :class:`LocalSlot` at decision time (under the
queue's lock, so two concurrent decisions never both count on the same free place). The
slot is *reserved* until the LLM thread starts it, *prefilling* until its first token, then
*decoding* until it finishes or is released. The prediction for a new request counts every
slot not yet finished:

- the prefills of the slots ahead that have not produced their first token (prefills run
  one after another, between decode steps);
- when every decoding place of the engine is taken (``capacity``), the wait for one to free:
  ``k / capacity`` whole answers at the engine's current batch size, for the ``k``-th
  request beyond capacity;
- one decode step of the sessions already decoding (a prefill waits for the running step);
- its own prefill.

Service time of one answer at batch size ``b`` = prefill + mean answer length x step time at
``b`` (the engine's measured step times, :class:`LocalRates`), or the measured mean answer
time when the engine decodes one request at a time.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .predictor import TtftPredictor

RESERVED, PREFILLING, DECODING, DONE = "reserved", "prefilling", "decoding", "done"


@runtime_checkable
class LocalRates(Protocol):
    """What the scheduler reads of the local engine (both ONNX engines provide it)."""

    @property
    def capacity(self) -> int:
        """Requests that can decode at the same time (1 without micro-batching)."""

    def step_time_s(self, batch: int) -> float:
        """Measured (or prior) time of one decode step with ``batch`` sessions."""


@dataclass(frozen=True)
class LocalForecast:
    ttft_s: float          # predicted time to first token, before any device slowdown
    wait_s: float          # the part of it spent waiting for work already committed
    ahead: int             # slots committed before this one
    capacity: int
    step_s: float = 0.0    # decode step time at the batch this request would join

    def describe(self) -> str:
        if not self.ahead:
            return "local model idle"
        return f"{self.ahead} ahead on the local model ({self.capacity} at a time), " \
               f"wait {self.wait_s * 1e3:.0f} ms"


class LocalSlot:
    """One request's place in the local queue; callbacks are thread-safe and idempotent."""

    def __init__(self, queue: LocalQueue, prompt_tokens: int, forced: bool,
                 ahead: int, observed_at: float = 1.0) -> None:
        self._queue = queue
        self.prompt_tokens = prompt_tokens
        self.ahead = ahead               # slots committed before it at reservation
        self.forced = forced             # taken past the bound (a failed cloud's fallback)
        self.observed_at = observed_at   # device slowdown its measured times carry (>= 1)
        self.state = RESERVED

    def started(self) -> None:
        self._queue._move(self, PREFILLING)

    def first_token(self) -> None:
        self._queue._move(self, DECODING)

    def finished(self, stats: dict | None = None) -> None:
        """Done; ``stats`` (the engine's last_stats) feed the prefill and service models."""
        if self._queue._move(self, DONE) and stats:
            self._queue.observe(stats, alone=self.ahead == 0, slowdown=self.observed_at)

    release = finished


class LocalQueue:
    def __init__(self, predictor: TtftPredictor, rates: LocalRates | None = None) -> None:
        self.predictor = predictor
        self.rates = rates
        self._lock = threading.Lock()
        self._slots: list[LocalSlot] = []

    # -- state ---------------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        return max(1, int(self.rates.capacity)) if self.rates is not None else 1

    def committed(self) -> int:
        with self._lock:
            return len(self._slots)

    def counts(self) -> dict[str, int]:
        with self._lock:
            out = {RESERVED: 0, PREFILLING: 0, DECODING: 0}
            for s in self._slots:
                out[s.state] += 1
            return out

    # -- prediction and reservation --------------------------------------------------------
    def forecast(self, prompt_tokens: int) -> LocalForecast:
        with self._lock:
            return self._forecast(prompt_tokens)

    def reserve(self, prompt_tokens: int, *, forced: bool = False,
                observed_at: float = 1.0) -> LocalSlot:
        with self._lock:
            slot = LocalSlot(self, prompt_tokens, forced, len(self._slots), observed_at)
            self._slots.append(slot)
        return slot

    def reserve_if(self, prompt_tokens: int, max_ttft_s: float, slowdown: float = 1.0,
                   max_step_s: float = float("inf"), *, step_slowdown: float | None = None,
                   observed_at: float = 1.0) -> tuple[LocalSlot | None, LocalForecast]:
        """Forecast and reserve in one step (no other decision can come between): a slot
        when the forecast times ``slowdown`` is within ``max_ttft_s`` and the decode step
        at the batch it joins, times ``step_slowdown`` (default ``slowdown``), within
        ``max_step_s``, else None. ``observed_at``: see :meth:`observe`."""
        step_slow = slowdown if step_slowdown is None else step_slowdown
        with self._lock:
            fc = self._forecast(prompt_tokens)
            if fc.ttft_s * slowdown > max_ttft_s or fc.step_s * step_slow > max_step_s:
                return None, fc
            slot = LocalSlot(self, prompt_tokens, False, fc.ahead, observed_at)
            self._slots.append(slot)
            return slot, fc

    def _forecast(self, prompt_tokens: int) -> LocalForecast:
        p = self.predictor
        cap = self.capacity
        ahead = len(self._slots)
        decoding = sum(1 for s in self._slots if s.state == DECODING)
        prefills = sum(p.prefill_s(s.prompt_tokens) for s in self._slots if s.state != DECODING)
        slot_wait = 0.0
        if ahead >= cap:
            slot_wait = (ahead - cap + 1) * self.service_s(cap) / cap
        step = self._step_s(decoding) if decoding else 0.0
        wait = max(prefills, slot_wait) + step
        joins = self._step_s(min(ahead + 1, cap)) if self.rates is not None and cap > 1 else 0.0
        return LocalForecast(wait + p.prefill_s(prompt_tokens), wait, ahead, cap, joins)

    def service_s(self, batch: int) -> float:
        """Mean time one answer holds a decoding place when ``batch`` decode together."""
        p = self.predictor
        if self.rates is None or self.capacity == 1:
            return p.service_s
        return p.prefill_s(24) + p.new_tokens * self._step_s(batch)

    def _step_s(self, batch: int) -> float:
        if self.rates is not None:
            return max(float(self.rates.step_time_s(max(1, batch))), 0.0)
        p = self.predictor
        return max(p.service_s - p.prefill_s(24), 0.0) / max(p.new_tokens, 1.0)

    # -- bookkeeping -----------------------------------------------------------------------
    def _move(self, slot: LocalSlot, state: str) -> bool:
        """Advance ``slot`` (never backwards); True when this call finished it."""
        order = (RESERVED, PREFILLING, DECODING, DONE)
        with self._lock:
            if order.index(state) <= order.index(slot.state):
                return False
            slot.state = state
            if state == DONE:
                self._slots.remove(slot)
            return state == DONE

    def observe(self, stats: dict, *, alone: bool = True, slowdown: float = 1.0) -> None:
        """Fold a finished request into the models. Its first-token time measures the prefill
        rate only when nothing was ahead of it (otherwise it includes others' prefills,
        which the forecast already counts). ``slowdown`` (>= 1): the device factor the
        request ran under (throttled, CPU only); its times are divided by it, so the
        models stay at nominal clocks and the scheduler's device factor prices it once."""
        ttft = stats.get("ttft_s")
        if ttft is None:
            return
        k = max(float(slowdown), 1.0)
        total = stats.get("total_s")
        tokens = int(stats.get("prompt_tokens") or 0) if alone else 0
        self.predictor.observe(tokens, float(ttft) / k,
                               None if total is None else float(total) / k,
                               stats.get("new_tokens"))

"""Load control and timing for the local LLM: pure (no onnxruntime, no threads), unit-tested.

:class:`PidController` is a textbook PID on an injected clock. :class:`BatchController`
uses one to set the micro-batching **batch target** (how many cache slots may decode
together) from the queue length (callers waiting for a slot + prompts waiting to be
prefilled). :class:`StepTimes` and :class:`PrefillTimes` keep what the engine measured
(EWMA per decode batch size; per-token prefill cost), so the scheduler can predict the
local time to first token at the current batch size.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import ConfigError

MAX_BATCH_LIMIT = 16


@dataclass(frozen=True)
class PidGains:
    """``kp`` per unit of error, ``ki`` per unit of error and second, ``kd`` per unit of
    error change per second."""

    kp: float = 1.0
    ki: float = 2.0
    kd: float = 0.0

    def __post_init__(self) -> None:
        if min(self.kp, self.ki, self.kd) < 0:
            raise ConfigError("PID gains must be >= 0", hint="use kp, ki, kd >= 0")


class PidController:
    """``output = clamp(kp·e + ki·∫e dt + kd·de/dt, out_min, out_max)``, ``e = measurement −
    setpoint`` (the output rises while the measurement is above the setpoint).

    Anti-windup: the integral term is clamped to ``[out_min, out_max]`` and does not grow
    while the output is saturated in the direction the error pushes it (conditional
    integration); ``floor`` in :meth:`update` raises the integral term to the actuator's
    real position when that cannot go lower than it (integrator tracking). The derivative
    acts on the measurement, so a setpoint change gives no kick. Time comes from ``clock``;
    the first update (and one at the same instant as the last) has no I or D step."""

    def __init__(self, gains: PidGains, *, setpoint: float = 0.0, out_min: float = 0.0,
                 out_max: float = 1.0, clock: Clock = SYSTEM_CLOCK) -> None:
        if out_max < out_min:
            raise ValueError("out_max must be >= out_min")
        self.gains = gains
        self.setpoint = setpoint
        self.out_min, self.out_max = out_min, out_max
        self.clock = clock
        self.reset()

    def reset(self) -> None:
        self.i_term = 0.0                 # ki·∫e dt, already in output units
        self.output = self._clamp(0.0)
        self._last_t: float | None = None
        self._last_m = 0.0
        self._last_e = 0.0

    def _clamp(self, x: float) -> float:
        return min(self.out_max, max(self.out_min, x))

    def update(self, measurement: float, floor: float | None = None) -> float:
        """Fold in one measurement; returns the new output. The integral adds the previous
        error held over the time since the last update (the measurement is a sample of a
        step function: a queue length holds until it changes). ``floor``: the lowest value
        the integral term may hold (the actuator's actual position)."""
        g = self.gains
        now = self.clock.monotonic()
        dt = 0.0 if self._last_t is None else max(0.0, now - self._last_t)
        e = measurement - self.setpoint
        d = 0.0
        if dt > 0:
            d = g.kd * (measurement - self._last_m) / dt   # de/dt with a fixed setpoint
            step = g.ki * self._last_e * dt
            saturated_high = self.output >= self.out_max and step > 0
            saturated_low = self.output <= self.out_min and step < 0
            if not (saturated_high or saturated_low):
                self.i_term = self._clamp(self.i_term + step)
        if floor is not None and self.i_term < floor:
            self.i_term = self._clamp(floor)
        self.output = self._clamp(g.kp * e + self.i_term + d)
        self._last_t, self._last_m, self._last_e = now, measurement, e
        return self.output


DEFAULT_GAINS = PidGains(kp=1.0, ki=2.0, kd=0.0)
QUEUE_SETPOINT = 0.5   # waiting requests: any wait is positive error, an empty queue negative


class BatchController:
    """The batch target: how many cache slots may decode together, in [min_batch, max_batch].

    ``target = min_batch + round(PID(queue length))``; the PID's integral tracks the slots
    already in use (running sessions are never evicted, so the target never winds below
    them). With the default gains (kp = 1) each waiting request lifts the target by one at
    once, so a free slot is not withheld from a waiting caller; the integral (ki = 2/s
    against the 0.5 setpoint) keeps headroom while requests keep queueing and lets it
    decay by one slot a second once the queue is empty. A smaller kp holds newcomers
    back to keep the running sessions' step time down.

    ``min_batch`` defaults to 2 when batching is on (a lone request never waits for a
    slot), 1 when ``max_batch`` is 1. :meth:`ready` decides when a decode step starts: at
    once when every decoding session has its token in (one session: no wait), otherwise
    after at most ``max_wait_s``.
    """

    def __init__(self, max_batch: int, *, min_batch: int | None = None,
                 max_wait_s: float = 0.004, gains: PidGains = DEFAULT_GAINS,
                 setpoint: float = QUEUE_SETPOINT, clock: Clock = SYSTEM_CLOCK) -> None:
        if not 1 <= max_batch <= MAX_BATCH_LIMIT:
            raise ConfigError(f"llm.max_batch must be in 1..{MAX_BATCH_LIMIT}, got {max_batch}",
                              hint="set llm.max_batch between 1 and 16 (0 = the device "
                                   "profile's)")
        self.max_batch = max_batch
        self.min_batch = min(2, max_batch) if min_batch is None else min_batch
        if not 1 <= self.min_batch <= max_batch:
            raise ConfigError(f"min_batch must be in 1..{max_batch}, got {self.min_batch}",
                              hint="use a min_batch between 1 and max_batch")
        self.max_wait_s = max_wait_s
        self.pid = PidController(gains, setpoint=setpoint, out_min=0.0,
                                 out_max=float(max_batch - self.min_batch), clock=clock)
        self.target = self.min_batch
        self.sizes: dict[int, int] = {}   # steps run per batch size (bounded keys)

    def update(self, queued: int, in_use: int) -> int:
        """New batch target from ``queued`` (callers waiting for a slot + prompts waiting
        to prefill) and ``in_use`` (slots held by running sessions)."""
        u = self.pid.update(float(queued), floor=float(max(0, in_use - self.min_batch)))
        self.target = max(self.min_batch, min(self.max_batch,
                                              self.min_batch + math.floor(u + 0.5)))
        return self.target

    def ready(self, pending: int, decoding: int, waited_s: float) -> bool:
        """Start a step now? ``pending`` tokens are waiting, ``decoding`` sessions may send one."""
        return pending >= max(1, decoding) or (pending > 0 and waited_s >= self.max_wait_s)

    def record(self, size: int) -> None:
        self.sizes[size] = self.sizes.get(size, 0) + 1


class StepTimes:
    """EWMA of measured decode-step seconds per batch size (rows run in one step).

    :meth:`estimate` returns the EWMA for a size seen, a linear interpolation between the
    nearest sizes seen on either side, or a linear extrapolation (slope of the two nearest
    sizes seen, or the prior's slope with one) beyond them; before any measurement, the
    prior line ``base_s + per_row_s · (batch − 1)``. Thread-safe."""

    def __init__(self, base_s: float, per_row_s: float, alpha: float = 0.2) -> None:
        if base_s <= 0 or per_row_s < 0 or not 0 < alpha <= 1:
            raise ValueError("step prior must be positive and alpha in (0, 1]")
        self.base_s, self.per_row_s, self.alpha = base_s, per_row_s, alpha
        self._ewma: dict[int, float] = {}
        self._lock = threading.Lock()

    def observe(self, batch: int, seconds: float) -> None:
        if batch < 1 or seconds <= 0:
            return
        with self._lock:
            old = self._ewma.get(batch)
            self._ewma[batch] = seconds if old is None else old + self.alpha * (seconds - old)

    def measured(self) -> dict[int, float]:
        with self._lock:
            return dict(sorted(self._ewma.items()))

    def estimate(self, batch: int) -> float:
        b = max(1, int(batch))
        with self._lock:
            pts = sorted(self._ewma.items())
        if not pts:
            return self.base_s + self.per_row_s * (b - 1)
        if len(pts) == 1:
            (x0, y0), = pts
            return max(1e-6, y0 + self.per_row_s * (b - x0))
        lo = [p for p in pts if p[0] <= b]
        hi = [p for p in pts if p[0] >= b]
        if lo and hi:
            (x0, y0), (x1, y1) = lo[-1], hi[0]
            if x0 == x1:
                return y0
        elif hi:                          # below every size seen
            (x0, y0), (x1, y1) = hi[0], hi[1]
        else:                             # above every size seen
            (x0, y0), (x1, y1) = lo[-2], lo[-1]
        slope = max(0.0, (y1 - y0) / (x1 - x0))
        return max(1e-6, y0 + slope * (b - x0))


class PrefillTimes:
    """Prefill seconds for a number of new prompt tokens: ``max(one decode step, tokens ·
    per_token_s)`` (a short prefill costs about a step: the weights are read once either
    way; a long one is compute-bound). ``per_token_s`` follows an EWMA of calls that
    computed at least ``min_tokens`` tokens. Thread-safe."""

    def __init__(self, per_token_s: float, alpha: float = 0.2, min_tokens: int = 16) -> None:
        if per_token_s <= 0 or not 0 < alpha <= 1:
            raise ValueError("per_token_s must be positive and alpha in (0, 1]")
        self.per_token_s, self.alpha, self.min_tokens = per_token_s, alpha, min_tokens
        self.observations = 0
        self._lock = threading.Lock()

    def observe(self, tokens: int, seconds: float) -> None:
        if tokens < self.min_tokens or seconds <= 0:
            return
        with self._lock:
            rate = seconds / tokens
            self.per_token_s = rate if self.observations == 0 else (
                self.per_token_s + self.alpha * (rate - self.per_token_s))
            self.observations += 1

    def estimate(self, tokens: int, step_s: float) -> float:
        with self._lock:
            return max(step_s, max(0, int(tokens)) * self.per_token_s)


# Priors measured on the x86 development box (2 cores, SmolLM2-135M INT4, accuracy_level 4,
# onnxruntime 1.32): decode step 12.2 ms at batch 1, +1.6 ms per extra row (36.5 ms at 16);
# prefill about 1.4 ms per prompt token. Each engine replaces them with its own measurements.
PRIOR_STEP_S = 0.0122
PRIOR_STEP_PER_ROW_S = 0.0016
PRIOR_PREFILL_PER_TOKEN_S = 0.0014


class SingleSessionLoad:
    """The load API of an engine that runs one session at a time (capacity 1): the same
    names as :class:`~edge_runtime.llm.batching.BatchingEngine`'s, so callers need not
    probe. The engine records its measured calls in ``_step_times`` / ``_prefill_times``
    and counts ``_active`` / ``_queued`` itself."""

    _step_times: StepTimes
    _prefill_times: PrefillTimes
    _active: int = 0
    _queued: int = 0

    def _init_load(self) -> None:
        self._step_times = StepTimes(PRIOR_STEP_S, PRIOR_STEP_PER_ROW_S)
        self._prefill_times = PrefillTimes(PRIOR_PREFILL_PER_TOKEN_S, min_tokens=8)
        self._active = 0
        self._queued = 0
        self._load_lock = threading.Lock()

    @contextmanager
    def _running(self, lock: threading.Lock) -> Iterator[None]:
        """Hold the engine's ``lock`` for one generation, counted in ``queued`` while
        waiting for it and in ``active`` while holding it."""
        with self._load_lock:
            self._queued += 1
        try:
            lock.acquire()
        finally:
            with self._load_lock:
                self._queued -= 1
        self._active = 1
        try:
            yield
        finally:
            self._active = 0
            lock.release()

    @property
    def capacity(self) -> int:
        """Sessions that can decode at once (1: requests run one after another)."""
        return 1

    @property
    def batch_target(self) -> int:
        return 1

    @property
    def active(self) -> int:
        """Sessions generating now (0 or 1)."""
        return self._active

    @property
    def queued(self) -> int:
        """Callers waiting for the running session to finish."""
        return self._queued

    def step_time_s(self, batch: int = 1) -> float:
        """Seconds per decode step (one session: ``batch`` is clamped to 1)."""
        return self._step_times.estimate(1)

    def prefill_time_s(self, tokens: int) -> float:
        """Seconds to prefill ``tokens`` new prompt tokens."""
        return self._prefill_times.estimate(tokens, self._step_times.estimate(1))

    def close(self) -> None:
        """Nothing to stop: a single-session engine owns no threads (its session is
        freed with it)."""

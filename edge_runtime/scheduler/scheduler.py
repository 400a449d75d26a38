"""Latency-budget routing: predict the local time to first token, compare with the budget.

predicted_ttft = queue_wait + overhead + prompt_tokens * prefill_s_per_token, times the
device's slowdown (thermal throttling on a simulated/real Jetson). The two prefill
parameters are fitted at start-up (two prompts of different length) and then follow
every real request through an exponentially weighted moving average.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from ..config import SchedulerConfig


class DeviceState(Protocol):
    """What the scheduler reads of the device (edge_runtime.device monitors provide it)."""

    def slowdown(self) -> float: ...

    def gpu_available(self) -> bool: ...

    def describe(self) -> str: ...


class CpuGpuRatio(Protocol):
    def ttft_s(self, prompt_tokens: int, *, gpu: bool = True, slowdown: float = 1.0) -> float: ...


@dataclass(frozen=True)
class Decision:
    route: str            # "local" or "cloud"
    reason: str           # human-readable, returned with the answer
    code: str             # short label for metrics
    predicted_ttft_s: float
    budget_s: float


class TtftPredictor:
    """Linear prefill model (overhead + per-token cost) with EWMA updates; thread-safe."""

    def __init__(self, alpha: float = 0.2, overhead_s: float = 0.02,
                 per_token_s: float = 0.002, service_s: float = 0.5) -> None:
        self.alpha = alpha
        self.overhead_s = overhead_s
        self.per_token_s = per_token_s
        self.service_s = service_s        # mean whole-answer time, for the queue estimate
        self._lock = threading.Lock()
        self.observations = 0

    def calibrate(self, samples: list[tuple[int, float]]) -> None:
        """Fit overhead and per-token cost from (prompt_tokens, ttft_s) pairs (>= 2 lengths)."""
        if len(samples) < 2:
            raise ValueError("calibration needs at least two samples")
        n = len(samples)
        mx = sum(t for t, _ in samples) / n
        my = sum(s for _, s in samples) / n
        var = sum((t - mx) ** 2 for t, _ in samples)
        with self._lock:
            if var > 0:
                slope = sum((t - mx) * (s - my) for t, s in samples) / var
                self.per_token_s = max(slope, 1e-6)
                # may be negative: with the system prompt's KV reused, its tokens cost
                # nothing, and the line's intercept absorbs that
                self.overhead_s = my - self.per_token_s * mx
            else:
                self.per_token_s = max(my / max(mx, 1), 1e-6)
                self.overhead_s = 0.0

    def predict(self, prompt_tokens: int, queued: int = 0) -> float:
        with self._lock:
            prefill = max(self.overhead_s + prompt_tokens * self.per_token_s, 0.0)
            return queued * self.service_s + prefill

    def observe(self, prompt_tokens: int, ttft_s: float, total_s: float | None = None) -> None:
        """Fold a measured request into the model (the per-token rate absorbs the error)."""
        with self._lock:
            a = self.alpha
            self.observations += 1
            if prompt_tokens > 0:
                rate = max((ttft_s - self.overhead_s) / prompt_tokens, 1e-6)
                self.per_token_s = (1 - a) * self.per_token_s + a * rate
            if total_s is not None:
                self.service_s = (1 - a) * self.service_s + a * total_s


class Scheduler:
    def __init__(self, cfg: SchedulerConfig, predictor: TtftPredictor | None = None,
                 device: DeviceState | None = None, latency: CpuGpuRatio | None = None) -> None:
        """``device``: live or simulated telemetry (throttling, GPU loss); ``latency``: the
        profile's latency model, used for how much slower the CPU is when the GPU is lost."""
        self.cfg = cfg
        self.predictor = predictor or TtftPredictor(alpha=cfg.ewma_alpha)
        self.device = device
        self.latency = latency
        self._lock = threading.Lock()
        self.local_in_flight = 0

    def budget_s(self, intent: str, override_ms: float | None = None) -> float:
        ms = override_ms if override_ms is not None else \
            self.cfg.intent_budgets_ms.get(intent, self.cfg.budget_ms)
        return ms / 1000.0

    def decide(self, prompt_tokens: int, intent: str, *, cloud_enabled: bool,
               cloud_available: bool, intent_budget_ms: float | None = None,
               local_device: str = "cpu") -> Decision:
        budget = self.budget_s(intent, intent_budget_ms)
        slow, throttled = self._device_factor(prompt_tokens)
        predicted = self.predictor.predict(prompt_tokens, self.local_in_flight) * slow
        p_ms, b_ms = predicted * 1000.0, budget * 1000.0
        if predicted <= budget:
            return Decision("local", f"predicted local ttft {p_ms:.0f} ms{throttled} <= "
                            f"{b_ms:.0f} ms budget", "within_budget", predicted, budget)
        over = f"predicted local ttft {p_ms:.0f} ms{throttled} > {b_ms:.0f} ms budget"
        if not cloud_enabled:
            return Decision("local", f"{over}; cloud disabled, answering locally on "
                            f"{local_device}", "cloud_disabled", predicted, budget)
        if not cloud_available:
            return Decision("local", f"{over}; cloud unavailable (link down), answering "
                            f"locally on {local_device}", "cloud_unavailable", predicted, budget)
        return Decision("cloud", over, "over_budget", predicted, budget)

    def _device_factor(self, prompt_tokens: int) -> tuple[float, str]:
        """How much slower than calibrated the device is now, and the words for it."""
        if self.device is None:
            return 1.0, ""
        if not self.device.gpu_available():
            factor = 1.0
            if self.latency is not None:
                n = max(prompt_tokens, 1)
                factor = self.latency.ttft_s(n, gpu=False) / self.latency.ttft_s(n, gpu=True)
            return max(factor, 1.0), f" (x{max(factor, 1.0):.2f}: gpu provider unavailable, " \
                                     f"cpu only)"
        slow = max(self.device.slowdown(), 1.0)
        if slow <= 1.0:
            return 1.0, ""
        return slow, f" (x{slow:.2f} thermal slowdown: {self.device.describe()})"

    def local_started(self) -> None:
        with self._lock:
            self.local_in_flight += 1

    def local_finished(self, prompt_tokens: int, ttft_s: float | None,
                       total_s: float | None) -> None:
        with self._lock:
            self.local_in_flight = max(0, self.local_in_flight - 1)
        if ttft_s is not None:
            self.predictor.observe(prompt_tokens, ttft_s, total_s)

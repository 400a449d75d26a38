"""The local model's prefill-time model: overhead + prompt tokens x per-token cost.

The two parameters are fitted at start-up (two prompts of different length) and then
follow every real request through an exponentially weighted moving average. ``service_s``
(mean whole-answer time) and ``new_tokens`` (mean answer length) feed the queue estimate.
A prediction is never below the fastest first token measured so far (``floor_s``): a line
fitted with a negative intercept (the system prompt's KV reused) would otherwise promise a
short prompt for nothing, and a 1 ms budget would be judged local.
"""
from __future__ import annotations

import threading


class TtftPredictor:
    """Linear prefill model (overhead + per-token cost) with EWMA updates; thread-safe."""

    def __init__(self, alpha: float = 0.2, overhead_s: float = 0.02,
                 per_token_s: float = 0.002, service_s: float = 0.5,
                 new_tokens: float = 32.0) -> None:
        self.alpha = alpha
        self.overhead_s = overhead_s
        self.per_token_s = per_token_s
        self.service_s = service_s        # mean whole-answer time, for the queue estimate
        self.new_tokens = new_tokens      # mean answer length in tokens (batched service time)
        self._lock = threading.Lock()
        self.observations = 0
        self.floor_s = 0.0                # the fastest first token measured (0: none yet)

    def calibrate(self, samples: list[tuple[int, float]]) -> None:
        """Fit overhead and per-token cost from (prompt_tokens, ttft_s) pairs (>= 2 lengths)."""
        if len(samples) < 2:
            raise ValueError("calibration needs at least two samples")
        n = len(samples)
        mx = sum(t for t, _ in samples) / n
        my = sum(s for _, s in samples) / n
        var = sum((t - mx) ** 2 for t, _ in samples)
        with self._lock:
            self._lower_floor(min(s for _, s in samples))
            if var > 0:
                slope = sum((t - mx) * (s - my) for t, s in samples) / var
                self.per_token_s = max(slope, 1e-6)
                # may be negative: with the system prompt's KV reused, its tokens cost
                # nothing, and the line's intercept absorbs that
                self.overhead_s = my - self.per_token_s * mx
            else:
                self.per_token_s = max(my / max(mx, 1), 1e-6)
                self.overhead_s = 0.0

    def prefill_s(self, prompt_tokens: int) -> float:
        """Predicted prefill (= first-token) time of one prompt on an idle model."""
        with self._lock:
            return max(self.overhead_s + prompt_tokens * self.per_token_s, self.floor_s)

    def _lower_floor(self, ttft_s: float) -> None:
        if ttft_s > 0 and (self.floor_s == 0.0 or ttft_s < self.floor_s):
            self.floor_s = ttft_s

    def observe(self, prompt_tokens: int, ttft_s: float, total_s: float | None = None,
                new_tokens: int | None = None) -> None:
        """Fold a measured request into the model (the per-token rate absorbs the error).
        ``ttft_s`` must be the time from the start of its own prefill (not its queue wait)."""
        with self._lock:
            a = self.alpha
            self.observations += 1
            self._lower_floor(ttft_s)
            if prompt_tokens > 0:
                rate = max((ttft_s - self.overhead_s) / prompt_tokens, 1e-6)
                self.per_token_s = (1 - a) * self.per_token_s + a * rate
            if total_s is not None:
                self.service_s = (1 - a) * self.service_s + a * total_s
            if new_tokens is not None and new_tokens > 0:
                self.new_tokens = (1 - a) * self.new_tokens + a * new_tokens

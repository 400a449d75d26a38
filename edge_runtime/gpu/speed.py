"""Is an accelerated path worth it? Its calls timed against the CPU session's, interleaved,
on the model's fixed agreement inputs (:class:`~edge_runtime.gpu.shapes.ModelSpec`).

For the small models (Silero VAD's 36 ms frames, the NLU encoder) a GPU path can be slower
than the CPU: on an H200 with onnxruntime's CUDA provider Silero took 0.91 ms a call
against 0.18 ms on the CPU, and the voice loop waits for each call, so a slower path only
delays it. :class:`~edge_runtime.gpu.accel.Accelerator` passes over a path
whose median call exceeds the CPU's times ``gpu.max_slowdown``.
"""
from __future__ import annotations

import statistics
from typing import Any

from ..clock import Clock
from .shapes import ModelSpec

ROUNDS = 3


def call_times_ms(candidate: Any, reference: Any, spec: ModelSpec, clock: Clock,
                  rounds: int = ROUNDS) -> tuple[float, float]:
    """(candidate, reference) median milliseconds a call over ``rounds`` passes of the
    fixed feeds, the two sessions alternating call by call (one warm-up pass first)."""
    names = [o.name for o in reference.get_outputs()]
    times: tuple[list[float], list[float]] = ([], [])
    for r in range(rounds + 1):
        for feed in spec.fixed_feeds:
            for sess, out in ((candidate, times[0]), (reference, times[1])):
                t = clock.monotonic()
                sess.run(names, dict(feed))
                if r:                                   # round 0 warms both up
                    out.append((clock.monotonic() - t) * 1e3)
    return statistics.median(times[0]), statistics.median(times[1])

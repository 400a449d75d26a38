"""What the scheduler asks a device: how hot/slow is it, and is the GPU there?

Two implementations: ``SimulatedDevice`` (replays a tegrastats trace on the
injected clock, for x86 tests) and ``TelemetrySource`` (tails a live
``tegrastats`` on a Jetson).
"""
from __future__ import annotations

from typing import Protocol

from .tegrastats import Telemetry


class DeviceMonitor(Protocol):
    # True when the engine of this process runs at the state reported (a live board);
    # False for a replayed trace (the scheduler then leaves measured times as they are)
    slows_engine: bool

    def telemetry(self) -> Telemetry | None:
        """The current sample, or None when there is none (or it is stale)."""

    def slowdown(self) -> float:
        """Factor >= 1 by which predicted GPU latency grows now (thermal throttling)."""

    def gpu_available(self) -> bool:
        """False when the GPU is known to be gone; True otherwise."""

    def describe(self) -> str:
        """One line for decision reasons and logs, e.g. ``gpu 306/624 MHz (2.04x), tj 93.0 C``."""


def describe_state(sample: Telemetry | None, slowdown: float, gpu_available: bool,
                   nominal_mhz: float | None) -> str:
    """The one-line summary both monitors use."""
    if sample is None:
        return "no device telemetry"
    parts = []
    if not gpu_available:
        parts.append("gpu unavailable")
    elif sample.gpu_freq_mhz is not None and nominal_mhz:
        parts.append(f"gpu {int(sample.gpu_freq_mhz)}/{int(nominal_mhz)} MHz ({slowdown:.2f}x)")
    if "tj" in sample.temps_c:
        parts.append(f"tj {sample.temps_c['tj']:.1f} C")
    elif sample.hottest_c is not None:
        parts.append(f"max {sample.hottest_c:.1f} C")
    if sample.ram_used_mb is not None and sample.ram_total_mb:
        parts.append(f"ram {int(sample.ram_used_mb)}/{int(sample.ram_total_mb)} MB")
    return ", ".join(parts) or "telemetry without gpu, temperature or memory fields"

"""Injected clocks: everything with timeouts, TTLs or deadlines takes one."""
from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds from an arbitrary origin; never goes backwards."""

    def time(self) -> float:
        """Wall-clock seconds since the epoch."""


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()


class FakeClock:
    """A clock that moves only when told to; for deterministic tests."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._mono = 1000.0
        self._wall = start

    def monotonic(self) -> float:
        return self._mono

    def time(self) -> float:
        return self._wall

    def advance(self, seconds: float) -> None:
        self._mono += seconds
        self._wall += seconds


SYSTEM_CLOCK = SystemClock()

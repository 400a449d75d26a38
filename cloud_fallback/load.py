"""The gateway's load figures, reported in every Pong: generating now, and the EWMAs of
first-piece and whole-answer times (workers record, the I/O thread snapshots)."""
from __future__ import annotations

import threading

_EWMA_ALPHA = 0.2          # weight of the newest sample in the load EWMAs
_MIN_MS = 1e-3             # a measured time is never reported as 0 (0 means "unknown")


class LoadMeter:
    """The gateway's load figures: workers record, the I/O thread snapshots (thread-safe).

    ``prefill_ms``/``service_ms`` are EWMAs (weight ``alpha`` for the newest sample; the
    first sample sets them) of worker start → first piece and worker start → complete
    answer; 0 until measured. Cancelled or failed answers do not count as service times.
    """

    def __init__(self, alpha: float = _EWMA_ALPHA) -> None:
        self._alpha = alpha
        self._lock = threading.Lock()
        self._active = 0
        self._prefill_ms = 0.0
        self._service_ms = 0.0

    def _blend(self, old: float, sample_ms: float) -> float:
        sample_ms = max(_MIN_MS, sample_ms)
        return sample_ms if old <= 0.0 else old + self._alpha * (sample_ms - old)

    def started(self) -> None:
        with self._lock:
            self._active += 1

    def first_piece(self, elapsed_ms: float) -> None:
        with self._lock:
            self._prefill_ms = self._blend(self._prefill_ms, elapsed_ms)

    def finished(self, elapsed_ms: float | None) -> None:
        """A request left its worker; ``elapsed_ms`` is its service time (None: it did not
        complete, e.g. cancelled or failed)."""
        with self._lock:
            self._active = max(0, self._active - 1)
            if elapsed_ms is not None:
                self._service_ms = self._blend(self._service_ms, elapsed_ms)

    def snapshot(self) -> tuple[int, float, float]:
        """(active, prefill_ms, service_ms)."""
        with self._lock:
            return self._active, self._prefill_ms, self._service_ms

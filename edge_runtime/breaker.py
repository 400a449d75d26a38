"""The one circuit breaker / backoff: stop using a part that keeps failing, probe it again
after a wait that doubles while it stays broken.

Used per cloud gateway endpoint (``cloud_link.failover``) and per answer-cache tier
(``cache.tiered``: threshold 1, waits 5 s doubling to 60 s).

States (the classic three):

* ``closed``: requests flow; ``failure_threshold`` consecutive failures open it.
* ``open``: requests are refused at once (no waiting on a dead or sick gateway) until
  ``reset_timeout_s`` seconds have passed; then it is half-open.
* ``half_open``: up to ``half_open_probes`` requests at a time are let through as probes; a
  success closes the breaker, a failure opens it again and doubles the wait (capped at
  ``max_reset_timeout_s``), so a gateway that stays broken is probed less and less often.

Pure, synchronous and not locked (a threaded caller holds its own lock), driven by the
injected clock (tests advance a ``FakeClock``).
"""
from __future__ import annotations

import logging

from .clock import SYSTEM_CLOCK, Clock
from .errors import ConfigError

log = logging.getLogger(__name__)

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


class CircuitBreaker:
    """See the module doc. ``name`` only labels log lines (the endpoint); ``logger`` gets
    the open / half-open / closed transitions (None: the caller logs them itself)."""

    def __init__(self, name: str = "", *, failure_threshold: int = 3,
                 reset_timeout_s: float = 2.0, max_reset_timeout_s: float = 30.0,
                 half_open_probes: int = 1, clock: Clock = SYSTEM_CLOCK,
                 logger: logging.Logger | None = log,
                 hint: str = "fix cloud.breaker_failures / cloud.breaker_reset_s") -> None:
        if failure_threshold < 1 or half_open_probes < 1 or reset_timeout_s <= 0:
            raise ConfigError("circuit breaker: failure_threshold and half_open_probes must be "
                              ">= 1 and reset_timeout_s > 0", hint=hint)
        self.name = name
        self._log = logger
        self._threshold = failure_threshold
        self._base_wait_s = reset_timeout_s
        self._max_wait_s = max(reset_timeout_s, max_reset_timeout_s)
        self._probes_max = half_open_probes
        self._clock = clock
        self._state = CLOSED
        self._failures = 0                 # consecutive, while closed
        self._wait_s = reset_timeout_s     # current open period
        self._opened_at = 0.0
        self._probes = 0                   # probes in flight while half-open
        self.opened_count = 0              # times it opened (metrics, benchmarks)

    @property
    def state(self) -> str:
        """"closed", "open" or "half_open" (an open breaker past its wait reads half_open)."""
        if self._state == OPEN and self._clock.monotonic() - self._opened_at >= self._wait_s:
            self._state, self._probes = HALF_OPEN, 0
            if self._log is not None:
                self._log.info("circuit %s half-open: probing", self.name)
        return self._state

    @property
    def wait_s(self) -> float:
        """The current (or last) open period in seconds."""
        return self._wait_s

    def retry_in_s(self) -> float:
        """Seconds until an open breaker lets a probe through (0 when not open)."""
        if self.state != OPEN:
            return 0.0
        return max(0.0, self._opened_at + self._wait_s - self._clock.monotonic())

    def would_allow(self) -> bool:
        """Would :meth:`allow` say yes now? (reserves nothing: for predictions)"""
        state = self.state
        return state == CLOSED or (state == HALF_OPEN and self._probes < self._probes_max)

    def allow(self) -> bool:
        """May a request go now? In half-open this reserves a probe slot: the caller must
        then report ``success()``, ``failure()`` or ``release()`` exactly once."""
        state = self.state
        if state == CLOSED:
            return True
        if state == HALF_OPEN and self._probes < self._probes_max:
            self._probes += 1
            return True
        return False

    def success(self) -> None:
        """The request (or probe) got a good answer: close the breaker."""
        if self._state != CLOSED and self._log is not None:
            self._log.info("circuit %s closed: it answered", self.name)
        self._state, self._failures, self._probes = CLOSED, 0, 0
        self._wait_s = self._base_wait_s

    def failure(self) -> None:
        """The request failed in a way that blames the gateway (down, timeout, overloaded)."""
        if self._state == HALF_OPEN:
            self._wait_s = min(self._wait_s * 2.0, self._max_wait_s)
            self._open("the probe failed")
            return
        if self._state == OPEN:
            return
        self._failures += 1
        if self._failures >= self._threshold:
            self._open(f"{self._failures} failures in a row")

    def release(self) -> None:
        """The request ended without saying anything about the gateway (e.g. the caller
        stopped early): free its probe slot."""
        if self._state == HALF_OPEN and self._probes > 0:
            self._probes -= 1

    def _open(self, why: str) -> None:
        self._state, self._opened_at, self._probes = OPEN, self._clock.monotonic(), 0
        self._failures = 0
        self.opened_count += 1
        if self._log is not None:
            self._log.warning("circuit %s open for %.1f s: %s", self.name, self._wait_s, why)

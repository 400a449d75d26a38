"""A gateway's load, as its heartbeat Pongs report it: validated, kept, aged.

Each Pong's figures become :attr:`LoadReports.load` (a :class:`GatewayLoad`) once
validated; a nonsense report (negative, NaN/inf, absurdly large) is ignored and counted
in ``bad_reports`` (a WARNING at most once a minute), and the last valid one stays.
:meth:`LoadReports.fresh` is the load while it is young enough (None otherwise, or for a
gateway that reports none). Pure and synchronous; the caller passes its clock's time.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from ..protocol import Pong

log = logging.getLogger(__name__)

LOAD_MAX_AGE_BEATS = 3.0               # a load report older than this many heartbeats: unknown
MAX_REPORTED_REQUESTS = 100_000        # queued/active above this: a nonsense report
MAX_REPORTED_CAPACITY = 4096
MAX_REPORTED_MS = 600_000.0            # 10 minutes
BAD_LOAD_LOG_INTERVAL_S = 60.0         # at most one WARNING about bad load reports per minute


@dataclass(frozen=True)
class GatewayLoad:
    """A gateway's load as its last valid Pong reported it (0 = unknown, see ``Pong``).

    ``prefill_s``/``service_s``: EWMAs of worker start → first piece / → whole answer;
    ``at_m``: this client's monotonic clock when the Pong arrived.
    """

    queued: int
    active: int
    capacity: int
    prefill_s: float
    service_s: float
    at_m: float


def load_problem(pong: Pong) -> str | None:
    """Why ``pong``'s load figures are nonsense, or None when they are plausible."""
    for name, limit in (("queued", MAX_REPORTED_REQUESTS), ("active", MAX_REPORTED_REQUESTS),
                        ("capacity", MAX_REPORTED_CAPACITY)):
        value = getattr(pong, name)
        if not 0 <= value <= limit:
            return f"{name}={value} is outside 0..{limit}"
    for name in ("prefill_ms", "service_ms"):
        value = getattr(pong, name)
        if not (math.isfinite(value) and 0.0 <= value <= MAX_REPORTED_MS):
            return f"{name}={value!r} is outside 0..{MAX_REPORTED_MS:.0f}"
    return None


class LoadReports:
    """The load reports of one gateway (``endpoint`` labels the warnings)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.load: GatewayLoad | None = None   # last valid load report
        self.bad_reports = 0                   # Pongs whose load figures were nonsense
        self._logged = 0
        self._logged_at = float("-inf")

    def on_pong(self, msg: Pong, now: float) -> None:
        """Take ``msg``'s load (``now``: monotonic seconds). Nonsense load is counted and
        ignored; a Pong without load (older gateway) changes nothing."""
        problem = load_problem(msg)
        if problem is not None:
            self._bad(problem, now)
            return
        if not (msg.capacity or msg.queued or msg.active or msg.prefill_ms or msg.service_ms):
            return                                    # no load report at all
        self.load = GatewayLoad(msg.queued, msg.active, msg.capacity, msg.prefill_ms / 1000.0,
                                msg.service_ms / 1000.0, now)

    def fresh(self, now: float, max_age_s: float) -> GatewayLoad | None:
        """The last valid report while at most ``max_age_s`` old, else None."""
        load = self.load
        if load is None:
            return None
        return load if now - load.at_m <= max_age_s else None

    def _bad(self, problem: str, now: float) -> None:
        self.bad_reports += 1
        if now - self._logged_at < BAD_LOAD_LOG_INTERVAL_S:
            return
        unlogged = self.bad_reports - self._logged - 1
        self._logged_at, self._logged = now, self.bad_reports
        log.warning("ignoring a nonsense load report from %s: %s (the link stays up%s)",
                    self.endpoint, problem,
                    f"; {unlogged} more since the last warning" if unlogged else "")

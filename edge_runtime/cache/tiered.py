"""The tiered answer cache: memory -> disk -> Redis, each tier optional and fallible.

``get`` asks the tiers in order and, on a hit in a lower tier, copies the answer into
the upper tiers that missed (with the answer's remaining lifetime). ``put`` writes every
working tier. A tier that raises ``CacheTierError`` is taken out of service: one WARNING
names the tier, the problem and the fix; lookups go on with the other tiers; the failed
tier is probed again after a backoff (``backoff_initial_s`` doubling up to
``backoff_max_s``, on the injected clock's monotonic time) during a later ``get`` or
``put`` (or an explicit ``probe_due()``), and an INFO line says when it recovered. The
backoff is the shared :class:`~edge_runtime.breaker.CircuitBreaker` (one failure opens
it; the half-open probe is the tier's ``probe()``).

All methods are synchronous and thread-safe; a lookup costs microseconds for the memory
tier, well under a millisecond for the disk tier and at most one Redis round trip
(bounded by ``cache.redis_timeout_s``).
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Sequence

from ..breaker import CLOSED, CircuitBreaker
from ..clock import SYSTEM_CLOCK, Clock
from ..config import CacheConfig
from ..errors import CacheTierError
from .base import (MAX_VALUE_BYTES, CachedAnswer, CacheTier, CacheValueError, decode_answer,
                   encode_answer)
from .disk import DiskTier
from .memory import MemoryTier
from .redis_tier import RedisTier

log = logging.getLogger(__name__)

TIER_NAMES = ("memory", "disk", "redis")


@dataclass
class _Slot:
    """One tier and its health (the breaker: closed = in service)."""

    tier: CacheTier
    breaker: CircuitBreaker
    reason: str = ""
    hits: int = 0
    misses: int = 0
    errors: int = 0

    @property
    def ok(self) -> bool:
        return self.breaker.state == CLOSED


class AnswerCache:
    """Tiers in lookup order (fastest first). ``disabled`` names tiers that are switched
    off by configuration; they show as "disabled" in ``tier_states()``."""

    def __init__(self, tiers: Sequence[CacheTier], clock: Clock = SYSTEM_CLOCK, *,
                 disabled: Sequence[str] = (), backoff_initial_s: float = 5.0,
                 backoff_max_s: float = 60.0) -> None:
        self._clock = clock
        self._slots = [_Slot(t, CircuitBreaker(
            t.name, failure_threshold=1, reset_timeout_s=backoff_initial_s,
            max_reset_timeout_s=backoff_max_s, clock=clock, logger=None,
            hint="fix the cache tier's backoff")) for t in tiers]
        self._disabled = tuple(n for n in disabled if n not in {t.name for t in tiers})
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self._lock = threading.Lock()
        self._lookups = 0
        self._hits = 0
        self._puts = 0
        for slot in self._slots:                 # find tiers that are broken from the start
            self._probe(slot)

    @classmethod
    def from_config(cls, cfg: CacheConfig, home: Path, clock: Clock = SYSTEM_CLOCK) -> AnswerCache:
        """Build the tiers ``cfg`` asks for. Never raises for a broken disk or Redis: those
        start as "failed: ..." and recover by themselves. The disk directory is
        ``cfg.disk_dir`` or ``home / "answers"``; Redis is used only when ``cfg.redis_url``."""
        tiers: list[CacheTier] = []
        disabled: list[str] = []
        if cfg.memory_items > 0:
            tiers.append(MemoryTier(cfg.memory_items, clock))
        else:
            disabled.append("memory")
        if cfg.disk_enabled:
            tiers.append(DiskTier(Path(cfg.disk_dir) if cfg.disk_dir else Path(home) / "answers",
                                  cfg.disk_size_mb, clock))
        else:
            disabled.append("disk")
        if cfg.redis_url:
            tiers.append(RedisTier(cfg.redis_url, cfg.redis_timeout_s))
        else:
            disabled.append("redis")
        return cls(tiers, clock, disabled=disabled)

    # -- lookups --------------------------------------------------------------------------

    def get(self, key: str) -> CachedAnswer | None:
        """The cached answer for ``key``, or None (miss, expired, or no tier works)."""
        self.probe_due()
        now = self._clock.time()
        missed: list[_Slot] = []
        found: tuple[CachedAnswer, float, bytes] | None = None
        for slot in self._working():
            try:
                raw = slot.tier.get(key)
                if raw is not None:
                    answer, expires_at = decode_answer(raw)
                    if expires_at > now:
                        found = (answer, expires_at, raw)
            except CacheValueError as exc:
                self._count_bad_value(slot, exc)
            except CacheTierError as exc:
                self._fail(slot, exc)
                continue
            with self._lock:
                slot.hits += found is not None
                slot.misses += found is None
            if found is not None:
                break
            missed.append(slot)
        with self._lock:
            self._lookups += 1
            self._hits += found is not None
        if found is None:
            return None
        answer, expires_at, raw = found
        for slot in missed:                      # fill the faster tiers that missed
            self._set(slot, key, raw, expires_at - now)
        return answer

    def put(self, key: str, answer: CachedAnswer, ttl_s: float) -> None:
        """Store ``answer`` under ``key`` for ``ttl_s`` seconds in every working tier.

        ``ttl_s <= 0`` stores nothing. Answers larger than ``MAX_VALUE_BYTES`` once
        serialized are not cached."""
        if ttl_s <= 0:
            return
        self.probe_due()
        raw = encode_answer(answer, self._clock.time() + ttl_s)
        if len(raw) > MAX_VALUE_BYTES:
            log.debug("answer cache: not caching a %d-byte answer (limit %d)", len(raw),
                      MAX_VALUE_BYTES)
            return
        with self._lock:
            self._puts += 1
        for slot in self._working():
            self._set(slot, key, raw, ttl_s)

    # -- health ---------------------------------------------------------------------------

    def tier_states(self) -> dict[str, str]:
        """``{tier: "ok" | "failed: <reason>" | "disabled"}`` for memory, disk and redis."""
        states = {name: "disabled" for name in self._disabled}
        with self._lock:
            for slot in self._slots:
                states[slot.tier.name] = "ok" if slot.ok else f"failed: {slot.reason}"
        return {n: states[n] for n in (*TIER_NAMES, *sorted(set(states) - set(TIER_NAMES)))
                if n in states}

    def error_counts(self) -> dict[str, int]:
        """Errors per tier since start: failed operations, failed probes, unreadable values."""
        with self._lock:
            return {slot.tier.name: slot.errors for slot in self._slots}

    def stats(self) -> dict[str, Any]:
        """Counters for metrics: lookups, hits, misses, hit_rate (0..1), puts, and per
        tier its state, hits, misses (lookups that reached it and missed) and errors."""
        states = self.tier_states()
        with self._lock:
            tiers = {s.tier.name: {"state": states[s.tier.name], "hits": s.hits,
                                   "misses": s.misses, "errors": s.errors} for s in self._slots}
            for name in self._disabled:
                tiers[name] = {"state": "disabled", "hits": 0, "misses": 0, "errors": 0}
            return {"lookups": self._lookups, "hits": self._hits,
                    "misses": self._lookups - self._hits,
                    "hit_rate": self._hits / self._lookups if self._lookups else 0.0,
                    "puts": self._puts, "tiers": tiers}

    def probe_due(self) -> None:
        """Probe the failed tiers whose backoff has passed (called by ``get``/``put``; a
        daemon may also call it periodically from a worker thread)."""
        with self._lock:     # allow() reserves the half-open probe: one prober per tier
            due = [s for s in self._slots if not s.ok and s.breaker.allow()]
        for slot in due:
            self._probe(slot)

    def close(self) -> None:
        for slot in self._slots:
            try:
                slot.tier.close()
            except Exception:   # noqa: BLE001 - closing must not stop the other tiers closing
                log.debug("closing cache tier %s failed", slot.tier.name, exc_info=True)

    # -- internals ------------------------------------------------------------------------

    def _working(self) -> list[_Slot]:
        with self._lock:
            return [s for s in self._slots if s.ok]

    def _set(self, slot: _Slot, key: str, raw: bytes, ttl_s: float) -> None:
        if ttl_s <= 0:
            return
        try:
            slot.tier.set(key, raw, ttl_s)
        except CacheTierError as exc:
            self._fail(slot, exc)

    def _probe(self, slot: _Slot) -> None:
        try:
            slot.tier.probe()
        except CacheTierError as exc:
            self._fail(slot, exc)
            return
        except Exception as exc:  # noqa: BLE001 - a tier bug must not hold its probe slot
            self._fail(slot, CacheTierError(f"probe raised {type(exc).__name__}: {exc}",
                                            hint="see the daemon log at DEBUG"))
            log.debug("answer cache: probe of %s raised", slot.tier.name, exc_info=True)
            return
        with self._lock:
            recovered = not slot.ok
            slot.breaker.success()
            slot.reason = ""
        if recovered:
            log.info("answer cache: tier %s recovered", slot.tier.name)

    def _fail(self, slot: _Slot, exc: CacheTierError) -> None:
        with self._lock:
            first = slot.ok
            slot.errors += 1
            slot.reason = exc.message
            slot.breaker.failure()
            wait_s = slot.breaker.wait_s
        if first:
            log.warning("answer cache: tier %s failed: %s (fix: %s); continuing without it, "
                        "retrying in %.0f s", slot.tier.name, exc.message,
                        exc.hint or "see the message", wait_s)
        else:
            log.debug("answer cache: tier %s still failing: %s; next try in %.0f s",
                      slot.tier.name, exc.message, wait_s)

    def _count_bad_value(self, slot: _Slot, exc: CacheValueError) -> None:
        with self._lock:
            slot.errors += 1
        log.debug("answer cache: unreadable value in tier %s: %s", slot.tier.name, exc.message)

"""AnswerCache: tier order, fills, expiry, failure isolation, backoff and recovery."""
from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from edge_runtime.cache.base import CachedAnswer, decode_answer, encode_answer
from edge_runtime.cache.disk import DB_NAME, DiskTier
from edge_runtime.cache.memory import MemoryTier
from edge_runtime.cache.tiered import AnswerCache
from edge_runtime.clock import FakeClock
from edge_runtime.config import CacheConfig
from edge_runtime.errors import CacheTierError

ANSWER = CachedAnswer(answer="Rayleigh scattering.", route="local", created_at=1.0, model="m")


class FlakyTier:
    """A working in-memory tier that can be switched to fail like a dead server."""

    def __init__(self, name: str, clock: FakeClock) -> None:
        self.name = name
        self.inner = MemoryTier(100, clock)
        self.broken = False
        self.probes = 0

    def _check(self) -> None:
        if self.broken:
            raise CacheTierError(f"{self.name} is down", hint=f"start {self.name}")

    def get(self, key: str) -> bytes | None:
        self._check()
        return self.inner.get(key)

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        self._check()
        self.inner.set(key, value, ttl_s)

    def probe(self) -> None:
        self.probes += 1
        self._check()

    def close(self) -> None:
        pass


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def three_tiers(clock: FakeClock) -> tuple[AnswerCache, MemoryTier, FlakyTier, FlakyTier]:
    mem, mid, low = MemoryTier(10, clock), FlakyTier("disk", clock), FlakyTier("redis", clock)
    return AnswerCache([mem, mid, low], clock), mem, mid, low


def test_put_then_get_round_trips(clock: FakeClock) -> None:
    cache, mem, mid, low = three_tiers(clock)
    cache.put("k", ANSWER, ttl_s=60)
    assert cache.get("k") == ANSWER
    assert all(t.get("k") is not None for t in (mem, mid, low))
    assert cache.stats()["tiers"]["memory"]["hits"] == 1


def test_lower_tier_hit_fills_upper_tiers_with_remaining_lifetime(clock: FakeClock) -> None:
    cache, mem, mid, low = three_tiers(clock)
    low.set("k", encode_answer(ANSWER, clock.time() + 100), 100)
    clock.advance(60)
    assert cache.get("k") == ANSWER
    s = cache.stats()["tiers"]
    assert (s["memory"]["misses"], s["disk"]["misses"], s["redis"]["hits"]) == (1, 1, 1)
    assert mem.get("k") is not None and mid.get("k") is not None
    clock.advance(41)                   # 101 s after the original put: gone everywhere
    assert mem.get("k") is None and mid.get("k") is None
    assert cache.get("k") is None


def test_expired_answer_is_a_miss_even_if_a_tier_still_holds_it(clock: FakeClock) -> None:
    cache, _, mid, _ = three_tiers(clock)
    mid.set("k", encode_answer(ANSWER, clock.time() - 1), 100)   # stale envelope, fresh row
    assert cache.get("k") is None
    st = cache.stats()
    assert (st["hits"], st["misses"], st["hit_rate"]) == (0, 1, 0.0)


def test_non_positive_ttl_stores_nothing(clock: FakeClock) -> None:
    cache, mem, _, _ = three_tiers(clock)
    cache.put("k", ANSWER, ttl_s=0)
    assert cache.get("k") is None and len(mem) == 0


def test_garbage_value_is_a_miss_and_an_error_not_a_failure(clock: FakeClock) -> None:
    cache, _, mid, low = three_tiers(clock)
    mid.set("k", b"\xff\x00 not json", 100)
    low.set("k", encode_answer(ANSWER, clock.time() + 100), 100)
    assert cache.get("k") == ANSWER     # found below the garbage
    assert cache.error_counts()["disk"] == 1
    assert cache.tier_states()["disk"] == "ok"
    assert decode_answer(mid.get("k") or b"") == (ANSWER, clock.time() + 100)  # repaired by the fill


def test_failed_tier_is_skipped_logged_once_and_recovers_after_backoff(
        clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="edge_runtime.cache")
    cache, _, mid, low = three_tiers(clock)
    cache.put("a", ANSWER, ttl_s=600)
    low.broken = True
    for _ in range(5):                  # keeps serving from the working tiers
        assert cache.get("a") == ANSWER
        cache.put("b", ANSWER, ttl_s=600)
    states = cache.tier_states()
    assert states["redis"] == "failed: redis is down" and states["disk"] == "ok"
    assert cache.error_counts()["redis"] == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "redis" in warnings[0].getMessage() and "start redis" in warnings[0].getMessage()

    low.broken = False
    clock.advance(4.9)
    cache.get("zzz")
    assert cache.tier_states()["redis"].startswith("failed")     # backoff not over yet
    clock.advance(0.1)
    cache.get("zzz")
    assert cache.tier_states()["redis"] == "ok"
    assert any("recovered" in r.getMessage() for r in caplog.records if r.levelno == logging.INFO)
    cache.put("c", ANSWER, ttl_s=600)
    assert low.get("c") is not None


def test_probe_backoff_doubles_up_to_the_cap(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="edge_runtime.cache")
    cache, _, _, low = three_tiers(clock)
    low.broken = True
    cache.get("k")                      # failure seen: first probe due 5 s later
    probe_times = []
    for second in range(1, 200):
        clock.advance(1)
        before = low.probes
        cache.get("k")
        if low.probes > before:
            probe_times.append(second)
    gaps = [b - a for a, b in zip(probe_times, probe_times[1:])]
    assert probe_times[0] == 5
    assert gaps[:4] == [10, 20, 40, 60] and set(gaps[4:]) == {60}
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1   # logged once
    assert cache.error_counts()["redis"] == 1 + len(probe_times)


def test_tier_broken_at_start_starts_failed(clock: FakeClock) -> None:
    low = FlakyTier("redis", clock)
    low.broken = True
    cache = AnswerCache([MemoryTier(10, clock), low], clock)
    assert cache.tier_states() == {"memory": "ok", "redis": "failed: redis is down"}
    cache.put("k", ANSWER, ttl_s=60)
    assert cache.get("k") == ANSWER


def test_from_config_disabled_tiers_and_default_disk_dir(tmp_path: Path, clock: FakeClock) -> None:
    cache = AnswerCache.from_config(CacheConfig(), tmp_path, clock)
    assert cache.tier_states() == {"memory": "ok", "disk": "ok", "redis": "disabled"}
    cache.put("k", ANSWER, ttl_s=60)
    cache.close()
    assert (tmp_path / "answers" / DB_NAME).is_file()
    off = AnswerCache.from_config(CacheConfig(memory_items=0, disk_enabled=False), tmp_path, clock)
    assert off.tier_states() == {"memory": "disabled", "disk": "disabled", "redis": "disabled"}
    off.put("k", ANSWER, ttl_s=60)
    assert off.get("k") is None
    assert off.stats()["tiers"]["disk"]["state"] == "disabled"


def test_answers_survive_a_restart_through_the_disk_tier(tmp_path: Path, clock: FakeClock) -> None:
    cfg = CacheConfig(disk_dir=str(tmp_path / "answers"))
    first = AnswerCache.from_config(cfg, tmp_path, clock)
    first.put("k", ANSWER, ttl_s=3600)
    first.close()
    second = AnswerCache.from_config(cfg, tmp_path, clock)
    assert second.get("k") == ANSWER
    assert second.stats()["tiers"]["disk"]["hits"] == 1
    second.close()


def test_corrupt_disk_file_at_start_is_moved_aside_and_cache_works(tmp_path: Path, clock: FakeClock) -> None:
    d = tmp_path / "answers"
    d.mkdir()
    (d / DB_NAME).write_bytes(b"\x00garbage" * 512)
    cache = AnswerCache.from_config(CacheConfig(), tmp_path, clock)
    assert cache.tier_states()["disk"] == "ok"
    assert len(list(d.glob(f"{DB_NAME}.corrupt-*"))) == 1
    cache.put("k", ANSWER, ttl_s=60)
    cache.close()
    again = AnswerCache.from_config(CacheConfig(), tmp_path, clock)
    assert again.get("k") == ANSWER
    again.close()


def test_unusable_disk_dir_fails_the_tier_not_the_cache(tmp_path: Path, clock: FakeClock,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "answers"
    blocker.write_text("a file, not a directory")
    cache = AnswerCache.from_config(CacheConfig(disk_dir=str(blocker)), tmp_path, clock)
    assert cache.tier_states()["disk"].startswith("failed: disk cache open failed")
    assert "cache.disk_dir" in caplog.text
    cache.put("k", ANSWER, ttl_s=600)
    assert cache.get("k") == ANSWER     # memory still serves
    blocker.unlink()
    clock.advance(5)
    cache.get("k")
    assert cache.tier_states()["disk"] == "ok"
    cache.put("k2", ANSWER, ttl_s=600)
    assert DiskTier(blocker, 8, clock).get("k2") is not None
    cache.close()


def test_concurrent_callers_do_not_corrupt_state(tmp_path: Path, clock: FakeClock) -> None:
    cache = AnswerCache.from_config(CacheConfig(memory_items=50), tmp_path, clock)
    failures: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(200):
                cache.put(f"k{n}-{i % 20}", ANSWER, ttl_s=60)
                got = cache.get(f"k{n}-{i % 20}")
                assert got == ANSWER
        except BaseException as exc:    # noqa: BLE001 - collected for the assertion
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    st = cache.stats()
    assert st["lookups"] == 800 and st["hits"] == 800
    assert sum(t["errors"] for t in st["tiers"].values()) == 0
    cache.close()


def test_a_probe_that_raises_an_unexpected_error_keeps_the_tier_retrying(
        clock: FakeClock) -> None:
    class BuggyProbe(FlakyTier):
        def probe(self) -> None:
            self.probes += 1
            if self.broken:
                raise RuntimeError("driver bug")

    mem, low = MemoryTier(10, clock), BuggyProbe("redis", clock)
    cache = AnswerCache([mem, low], clock)
    low.broken = True
    cache.put("a", ANSWER, ttl_s=600)          # set fails: the tier is marked failed
    clock.advance(5.0)
    cache.get("zzz")                           # probe raises RuntimeError: still failed
    assert cache.tier_states()["redis"].startswith("failed: probe raised RuntimeError")
    low.broken = False
    clock.advance(60.0)
    cache.get("zzz")                           # the half-open slot was released: probed again
    assert cache.tier_states()["redis"] == "ok"

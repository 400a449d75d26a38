"""MemoryTier: LRU order, bound, per-entry expiry on the injected clock."""
from __future__ import annotations

import pytest

from edge_runtime.cache.memory import MemoryTier
from edge_runtime.clock import FakeClock


def test_get_returns_what_was_set_until_it_expires() -> None:
    clock = FakeClock()
    tier = MemoryTier(4, clock)
    tier.set("k", b"v", ttl_s=10)
    clock.advance(9.9)
    assert tier.get("k") == b"v"
    clock.advance(0.1)
    assert tier.get("k") is None
    assert len(tier) == 0            # the expired entry was dropped, not just hidden


def test_each_entry_has_its_own_expiry() -> None:
    clock = FakeClock()
    tier = MemoryTier(4, clock)
    tier.set("short", b"1", ttl_s=5)
    tier.set("long", b"2", ttl_s=50)
    clock.advance(10)
    assert tier.get("short") is None
    assert tier.get("long") == b"2"


def test_least_recently_used_is_evicted_at_the_bound() -> None:
    tier = MemoryTier(3, FakeClock())
    for k in ("a", "b", "c"):
        tier.set(k, k.encode(), ttl_s=100)
    assert tier.get("a") == b"a"     # a is now the most recently used; b the least
    tier.set("d", b"d", ttl_s=100)
    assert len(tier) == 3
    assert tier.get("b") is None
    assert [tier.get(k) for k in ("a", "c", "d")] == [b"a", b"c", b"d"]


def test_overwriting_a_key_refreshes_value_and_expiry_without_growing() -> None:
    clock = FakeClock()
    tier = MemoryTier(2, clock)
    tier.set("k", b"old", ttl_s=5)
    clock.advance(4)
    tier.set("k", b"new", ttl_s=5)
    clock.advance(4)
    assert tier.get("k") == b"new"
    assert len(tier) == 1


def test_never_holds_more_than_max_items() -> None:
    tier = MemoryTier(10, FakeClock())
    for i in range(1000):
        tier.set(f"k{i}", b"x", ttl_s=100)
    assert len(tier) == 10
    assert tier.get("k999") == b"x" and tier.get("k989") is None


def test_zero_ttl_removes_the_key() -> None:
    tier = MemoryTier(2, FakeClock())
    tier.set("k", b"v", ttl_s=5)
    tier.set("k", b"v", ttl_s=0)
    assert tier.get("k") is None


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_items"):
        MemoryTier(0)

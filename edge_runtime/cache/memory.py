"""In-process LRU tier: the fastest place to find an answer; lost on restart."""
from __future__ import annotations

import threading
from collections import OrderedDict

from ..clock import SYSTEM_CLOCK, Clock


class MemoryTier:
    """At most ``max_items`` entries, least recently used evicted first.

    Each entry expires ``ttl_s`` seconds after it was set, measured on the injected
    clock's monotonic time. Expired entries are dropped when looked up; otherwise they
    age out through LRU eviction like any other entry (O(1) per call). Thread-safe.
    """

    name = "memory"

    def __init__(self, max_items: int, clock: Clock = SYSTEM_CLOCK) -> None:
        if max_items < 1:
            raise ValueError(f"MemoryTier needs max_items >= 1, got {max_items}")
        self.max_items = max_items
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get(self, key: str) -> bytes | None:
        now = self._clock.monotonic()
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            expires_at, value = item
            if expires_at <= now:
                del self._items[key]
                return None
            self._items.move_to_end(key)
            return value

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        """Store ``value`` for ``ttl_s`` seconds; ``ttl_s <= 0`` removes the key."""
        now = self._clock.monotonic()
        with self._lock:
            if ttl_s <= 0:
                self._items.pop(key, None)
                return
            self._items[key] = (now + ttl_s, value)
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def probe(self) -> None:
        """Memory always works."""

    def close(self) -> None:
        with self._lock:
            self._items.clear()

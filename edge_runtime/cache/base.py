"""Answer cache: memory LRU -> disk -> optional Redis, keyed on intent + entities or text."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CachedAnswer:
    answer: str
    route: str            # where the answer first came from: "local" or "cloud"
    created_at: float     # wall-clock seconds
    model: str = ""


class CacheTier(Protocol):
    """One storage tier. Errors raise ``CacheTierError``; the tiered cache skips that tier."""

    name: str

    def get(self, key: str) -> bytes | None: ...

    def set(self, key: str, value: bytes, ttl_s: float) -> None: ...

    def close(self) -> None: ...

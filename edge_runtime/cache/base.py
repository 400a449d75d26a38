"""Answer cache: memory LRU -> disk -> optional Redis, keyed on intent + entities or text.

A tier stores opaque ``bytes`` under a key (``v1:<sha256 hex>``, see ``keys.py``); the
tiered ``AnswerCache`` (``tiered.py``) serializes ``CachedAnswer`` with ``encode_answer``
and reads it back with ``decode_answer``. The serialized form is versioned JSON that
carries its own wall-clock expiry, so every tier (and every device of a fleet sharing a
Redis) agrees on when an answer goes stale, and an upper tier filled from a lower one
keeps the remaining lifetime instead of a fresh one.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from ..errors import CacheTierError

CODEC_VERSION = 1
MAX_VALUE_BYTES = 64 * 1024   # a spoken answer is a few hundred bytes; larger ones are not cached


@dataclass(frozen=True)
class CachedAnswer:
    answer: str
    route: str            # where the answer first came from: "local" or "cloud"
    created_at: float     # wall-clock seconds
    model: str = ""


class CacheValueError(CacheTierError):
    """One stored value is unusable (garbage, another version, wrong Redis type).

    The lookup counts as a miss plus an error for that tier; the tier itself stays up.
    """

    code, retryable = "cache_bad_value", False


class CacheTier(Protocol):
    """One storage tier. Errors raise ``CacheTierError``; the tiered cache skips that tier.

    ``get`` and ``set`` are synchronous and should take well under a millisecond (memory,
    disk) or at most the configured socket timeout (Redis). ``CacheValueError`` from
    ``get`` means "this one value is bad", any other ``CacheTierError`` means "this tier
    does not work right now" and takes it out of service until a ``probe`` succeeds.
    """

    name: str

    def get(self, key: str) -> bytes | None: ...

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        """Store ``value`` for ``ttl_s`` seconds (> 0)."""

    def probe(self) -> None:
        """Check (and where possible repair: reopen, reconnect) the tier; raise
        ``CacheTierError`` naming the problem and the fix when it still does not work."""

    def close(self) -> None: ...


def encode_answer(answer: CachedAnswer, expires_at: float) -> bytes:
    """Serialize ``answer`` with its wall-clock expiry (epoch seconds) as versioned JSON."""
    doc = {"v": CODEC_VERSION, "answer": answer.answer, "route": answer.route,
           "created_at": float(answer.created_at), "model": answer.model,
           "expires_at": float(expires_at)}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode_answer(raw: bytes) -> tuple[CachedAnswer, float]:
    """Return ``(answer, expires_at)`` from ``encode_answer`` output.

    Raises ``CacheValueError`` for anything else (garbage, truncated, another version),
    never another exception type.
    """
    try:
        doc = json.loads(raw)
    # UnicodeDecodeError and JSONDecodeError are ValueErrors; a tampered row may nest deep
    except (ValueError, TypeError, RecursionError) as exc:
        raise CacheValueError(f"cached value is not valid JSON ({exc.__class__.__name__})",
                              hint="it is ignored and will be overwritten") from None
    if not isinstance(doc, dict) or doc.get("v") != CODEC_VERSION:
        version = doc.get("v") if isinstance(doc, dict) else None
        raise CacheValueError(f"cached value has version {version!r}, expected {CODEC_VERSION}",
                              hint="written by another edge-runtime version; it is ignored")
    text, route, model = doc.get("answer"), doc.get("route"), doc.get("model", "")
    created, expires = doc.get("created_at"), doc.get("expires_at")
    if not (isinstance(text, str) and isinstance(route, str) and isinstance(model, str)
            and _is_number(created) and _is_number(expires)):
        raise CacheValueError("cached value lacks a field or has a field of the wrong type",
                              hint="it is ignored and will be overwritten")
    return CachedAnswer(answer=text, route=route, created_at=float(created), model=model), \
        float(expires)


def _is_number(v: object) -> TypeGuard[int | float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return math.isfinite(v) if isinstance(v, float) else abs(v) < 2 ** 53

"""Answer cache: memory LRU -> diskcache on disk -> optional Redis shared by a fleet.

``make_key`` decides whether an answer may be cached and under which key, ``ttl_for``
how long, and ``AnswerCache`` stores and finds it, surviving broken tiers.
"""
from .base import CachedAnswer, CacheTier, CacheValueError, decode_answer, encode_answer
from .disk import DiskTier
from .keys import make_key, strip_fillers, ttl_for, uncacheable_reason
from .memory import MemoryTier
from .redis_tier import RedisTier
from .tiered import AnswerCache

__all__ = ["AnswerCache", "CachedAnswer", "CacheTier", "CacheValueError", "DiskTier",
           "MemoryTier", "RedisTier", "decode_answer", "encode_answer", "make_key",
           "strip_fillers", "ttl_for", "uncacheable_reason"]

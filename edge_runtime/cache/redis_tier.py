"""Fleet tier: a Redis server shared by several devices, so one device's answer serves all.

Keys are ``edge-runtime:answer:v1:<cache key>``; values are written with ``SET .. EX``
(whole seconds, rounded up). Every command uses short socket timeouts
(``cache.redis_timeout_s``) and no client-side retries: a slow or absent Redis costs one
timeout, after which the tiered cache takes this tier out of service and probes it
again after a backoff. The ``redis`` package is optional (``pip install
'edge-runtime[redis]'``) and imported only when a Redis URL is configured.
"""
from __future__ import annotations

import importlib
import logging
import math
from typing import Any

from ..errors import CacheTierError
from .base import CacheValueError

log = logging.getLogger(__name__)

NAMESPACE = "edge-runtime:answer:v1:"


class RedisTier:
    """A Redis client for ``url`` (``redis://host:port/db``, ``rediss://`` for TLS).

    The constructor does not connect and never raises for a missing package, a bad URL
    or an absent server: ``probe()`` (a PING) raises ``CacheTierError`` naming the fix.
    """

    name = "redis"

    def __init__(self, url: str, timeout_s: float = 0.05, *, namespace: str = NAMESPACE) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.namespace = namespace
        self._client: Any = None
        self._errors: Any = None
        self._setup_error: CacheTierError | None = None
        try:
            redis = importlib.import_module("redis")
            retry = importlib.import_module("redis.retry")
            backoff = importlib.import_module("redis.backoff")
        except ImportError:
            self._setup_error = CacheTierError(
                "the redis package is not installed",
                hint="pip install 'edge-runtime[redis]', or unset cache.redis_url")
            return
        self._errors = redis.exceptions
        try:
            self._client = redis.Redis.from_url(
                url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
                retry=retry.Retry(backoff.NoBackoff(), 0), health_check_interval=0)
        except (ValueError, TypeError) as exc:
            self._setup_error = CacheTierError(
                f"cache.redis_url {_redact(url)!r} is not a usable Redis URL: {exc}",
                hint="use redis://host:port/db (or rediss:// for TLS)")

    def get(self, key: str) -> bytes | None:
        client = self._require_client()
        try:
            value = client.get(self.namespace + key)
        except (self._errors.RedisError, OSError) as exc:
            if "WRONGTYPE" in str(exc):                # one bad key, not a bad tier
                raise CacheValueError(f"redis answer key holds a non-string value: {exc}",
                                      hint="it is overwritten on the next put") from None
            raise self._error(exc) from None
        if value is not None and not isinstance(value, bytes):
            raise CacheValueError("redis returned a non-bytes value",
                                  hint="do not set decode_responses on the cache connection")
        return value

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        client = self._require_client()
        try:
            if ttl_s <= 0:
                client.delete(self.namespace + key)
            else:
                client.set(self.namespace + key, value, ex=max(1, math.ceil(ttl_s)))
        except (self._errors.RedisError, OSError) as exc:
            raise self._error(exc) from None

    def probe(self) -> None:
        client = self._require_client()
        try:
            if not client.ping():
                raise CacheTierError(f"redis at {_redact(self.url)} did not answer PING",
                                     hint="check the server")
        except (self._errors.RedisError, OSError) as exc:
            raise self._error(exc) from None

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            except (self._errors.RedisError, OSError):
                log.debug("closing the redis client failed", exc_info=True)

    def _require_client(self) -> Any:
        if self._client is None:
            assert self._setup_error is not None
            raise self._setup_error
        return self._client

    def _error(self, exc: BaseException) -> CacheTierError:
        text = str(exc) or exc.__class__.__name__
        where = _redact(self.url)
        if isinstance(exc, self._errors.AuthenticationError) or "auth" in text.lower():
            hint = "put the right password in cache.redis_url (redis://:PASSWORD@host:port/db)"
        elif isinstance(exc, self._errors.TimeoutError):
            hint = (f"redis did not answer within cache.redis_timeout_s={self.timeout_s} s; "
                    "check the network or raise the timeout")
        else:
            hint = (f"start redis at {where} or fix cache.redis_url; answers are kept on the "
                    "device meanwhile")
        return CacheTierError(f"redis at {where}: {text}", hint=hint)


def _redact(url: str) -> str:
    """``url`` without its password, for logs."""
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user + ':***' if ':' in creds else creds}@{host}"

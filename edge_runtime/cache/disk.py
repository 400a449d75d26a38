"""On-disk tier: a ``diskcache.Cache`` (SQLite) in one directory; survives restarts.

Values are stored as ``8-byte big-endian float expiry (wall-clock epoch seconds on the
injected clock) + payload``; the expiry is checked on every read, and diskcache's own
``expire`` (real time) removes old rows in the background. diskcache evicts the least
recently stored rows when the directory grows past ``size_mb``.

A database that SQLite reports as corrupt ("file is not a database", "database disk
image is malformed") is moved aside to ``cache.db.corrupt-<UTC timestamp>`` (the newest
``keep_corrupt`` such files are kept for inspection) and a fresh database is started:
at open, and on the next ``probe`` when corruption shows up later.
"""
from __future__ import annotations

import logging
import sqlite3
import struct
import threading
import time
from pathlib import Path
from typing import Any

import diskcache

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import CacheTierError
from .base import CacheValueError

log = logging.getLogger(__name__)

DB_NAME = diskcache.core.DBNAME          # "cache.db"
_HEADER = struct.Struct(">d")
_PROBE_KEY = "edge-runtime:probe"
_INLINE_BYTES = 1 << 30           # every value inline: no value files (answers are < 64 KiB)


class _NoPickleDisk(diskcache.Disk):
    """Refuses to unpickle anything read back: this tier stores only bytes and str keys,
    so a pickled row can only come from a foreign or tampered database.

    Values are stored inline in SQLite (``disk_min_file_size`` is set above any answer),
    so a row never names a file: one that does (diskcache joins the stored ``filename``
    onto the directory: an absolute or ``../`` path, a FIFO) is refused unread, and
    removing such a row never deletes anything outside the cache directory. Every read is
    then one SQLite lookup, bounded by the busy timeout."""

    def get(self, key: Any, raw: bool) -> Any:
        if not raw:
            raise CacheValueError("disk cache holds a pickled key; refusing to unpickle it",
                                  hint="delete the cache directory if this persists")
        return super().get(key, raw)

    def fetch(self, mode: int, filename: Any, value: Any, read: bool) -> Any:
        if mode == diskcache.core.MODE_PICKLE:
            raise CacheValueError("disk cache holds a pickled value; refusing to unpickle it",
                                  hint="delete the cache directory if this persists")
        if mode != diskcache.core.MODE_RAW or filename is not None or value is None:
            raise CacheValueError("disk cache row points at a file instead of holding its "
                                  "value; refusing to read it",
                                  hint="answers are stored inline; delete the cache "
                                       "directory if this persists")
        return super().fetch(mode, filename, value, read)

    def remove(self, file_path: Any) -> None:
        """Delete a value file only when it looks like one diskcache writes (``ab/cd/<hex>.val``
        inside the directory, a regular file): never the database, never anything outside."""
        try:
            root = Path(self._directory).resolve()
            target = (root / str(file_path)).resolve()
            rel = target.relative_to(root)
            if len(rel.parts) == 3 and target.suffix == ".val" and target.is_file():
                target.unlink()
                return
        except (OSError, ValueError):
            pass
        log.debug("disk cache: not removing %r: not a value file of this cache", file_path)


def _is_corrupt(exc: BaseException) -> bool:
    """SQLite corruption is a DatabaseError that is not an OperationalError (I/O, locks,
    permissions, full disk are OperationalErrors)."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


class DiskTier:
    """Answers in ``directory`` (created if missing), at most about ``size_mb`` MB.

    The constructor never raises for I/O problems: an unusable directory leaves the tier
    closed and ``probe()`` raises ``CacheTierError`` naming the fix (and reopens the
    database once the problem is gone). Thread-safe (diskcache keeps one SQLite
    connection per thread).
    """

    name = "disk"

    def __init__(self, directory: str | Path, size_mb: int, clock: Clock = SYSTEM_CLOCK, *,
                 sqlite_timeout_s: float = 0.25, keep_corrupt: int = 3) -> None:
        self.directory = Path(directory).expanduser()
        self.size_limit_bytes = max(1, int(size_mb)) * 1024 * 1024
        self.sqlite_timeout_s = sqlite_timeout_s
        self.keep_corrupt = keep_corrupt
        self._clock = clock
        self._lock = threading.Lock()         # guards open / close / move aside
        self._cache: diskcache.Cache | None = None
        self._corrupt = False
        self._open_error: CacheTierError | None = None
        with self._lock:
            try:
                self._open_locked()
            except CacheTierError as exc:
                self._open_error = exc

    # -- CacheTier ----------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        cache = self._require_open()
        try:
            raw = cache.get(key)
        except CacheValueError:
            raise
        except (sqlite3.Error, OSError, diskcache.Timeout) as exc:
            raise self._op_error("read", exc) from None
        if raw is None:
            return None
        if not isinstance(raw, bytes) or len(raw) < _HEADER.size:
            raise CacheValueError("disk cache row is not an edge-runtime value",
                                  hint="it is ignored and will be overwritten")
        (expires_at,) = _HEADER.unpack_from(raw)
        if expires_at <= self._clock.time():
            self._delete_quietly(cache, key)
            return None
        return raw[_HEADER.size:]

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        cache = self._require_open()
        try:
            if ttl_s <= 0:
                cache.delete(key)
                return
            cache.set(key, _HEADER.pack(self._clock.time() + ttl_s) + value, expire=ttl_s)
        except (sqlite3.Error, OSError, diskcache.Timeout) as exc:
            raise self._op_error("write", exc) from None

    def probe(self) -> None:
        """Reopen if closed or corrupt (moving a corrupt file aside), then write, read and
        delete a probe row; raise ``CacheTierError`` if any step fails."""
        with self._lock:
            if self._cache is None or self._corrupt:
                self._close_locked()
                self._open_locked()
            cache = self._cache
        assert cache is not None
        try:
            cache.set(_PROBE_KEY, b"ok", expire=60)
            ok = cache.get(_PROBE_KEY) == b"ok"
            cache.delete(_PROBE_KEY)
        except (sqlite3.Error, OSError, diskcache.Timeout) as exc:
            raise self._op_error("probe", exc) from None
        if not ok:
            raise CacheTierError(
                f"disk cache {self.directory} did not return what was just written",
                hint="check the filesystem; delete the directory to reset the cache")

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def __len__(self) -> int:
        cache = self._require_open()
        return len(cache)

    # -- internals ----------------------------------------------------------------------

    def _require_open(self) -> diskcache.Cache:
        cache = self._cache
        if cache is None:
            raise self._open_error or CacheTierError(
                f"disk cache {self.directory} is not open", hint="it is reopened on the next probe")
        return cache

    def _open_locked(self) -> None:
        self._open_error = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            try:
                self._cache = self._new_cache()
            except sqlite3.DatabaseError as exc:
                if not _is_corrupt(exc):
                    raise
                self._move_aside(exc)
                self._cache = self._new_cache()
        except (sqlite3.Error, OSError, diskcache.Timeout) as exc:
            self._cache = None
            self._open_error = self._op_error("open", exc)
            raise self._open_error from None
        self._corrupt = False

    def _new_cache(self) -> diskcache.Cache:
        cache = diskcache.Cache(str(self.directory), timeout=self.sqlite_timeout_s,
                                disk=_NoPickleDisk, size_limit=self.size_limit_bytes,
                                disk_min_file_size=_INLINE_BYTES,
                                eviction_policy="least-recently-stored", statistics=False)
        try:
            len(cache)                        # reads the Settings table: catches a bad file now
        except BaseException:
            cache.close()
            raise
        return cache

    def _close_locked(self) -> None:
        cache, self._cache = self._cache, None
        if cache is not None:
            try:
                cache.close()
            except (sqlite3.Error, OSError):
                log.debug("closing disk cache %s failed", self.directory, exc_info=True)

    def _move_aside(self, exc: BaseException) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self._clock.time()))
        db = self.directory / DB_NAME
        target = db.with_name(f"{DB_NAME}.corrupt-{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = db.with_name(f"{DB_NAME}.corrupt-{stamp}-{n}")
        db.rename(target)
        for suffix in ("-wal", "-shm"):                 # stale journals would confuse a new db
            side = db.with_name(DB_NAME + suffix)
            if side.exists():
                side.rename(target.with_name(target.name + suffix))
        log.warning("answer cache: disk cache file %s was corrupt (%s); moved it to %s and "
                    "started a fresh one", db, exc, target.name)
        self._prune_corrupt()

    def _prune_corrupt(self) -> None:
        olds = sorted(self.directory.glob(f"{DB_NAME}.corrupt-*"), key=lambda p: p.stat().st_mtime)
        mains = [p for p in olds if not p.name.endswith(("-wal", "-shm"))]
        for p in mains[:-self.keep_corrupt] if self.keep_corrupt > 0 else mains:
            for f in (p, p.with_name(p.name + "-wal"), p.with_name(p.name + "-shm")):
                f.unlink(missing_ok=True)
            log.info("answer cache: removed old corrupt disk cache file %s", p.name)

    def _op_error(self, what: str, exc: BaseException) -> CacheTierError:
        text = str(exc) or exc.__class__.__name__
        low = text.lower()
        if _is_corrupt(exc):
            self._corrupt = True
            hint = "the file is moved aside and a fresh cache started on the next probe"
        elif "full" in low or getattr(exc, "errno", None) == 28:
            hint = f"free space on the filesystem of {self.directory} or lower cache.disk_size_mb"
        elif any(w in low for w in ("readonly", "read-only", "permission", "unable to open")) \
                or isinstance(exc, (PermissionError, NotADirectoryError, FileExistsError)):
            hint = (f"make {self.directory} a writable directory for the daemon's user, "
                    "or set cache.disk_dir")
        elif isinstance(exc, diskcache.Timeout) or "locked" in low:
            hint = "another process holds the cache database; it is retried after a backoff"
        else:
            hint = f"check {self.directory}; delete it to reset the cache"
        return CacheTierError(f"disk cache {what} failed in {self.directory}: {text}", hint=hint)

    def _delete_quietly(self, cache: diskcache.Cache, key: str) -> None:
        try:
            cache.delete(key)
        except (sqlite3.Error, OSError, diskcache.Timeout):
            log.debug("deleting expired key from disk cache failed", exc_info=True)

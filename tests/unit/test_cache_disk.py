"""DiskTier: expiry on the injected clock, size bound, survival across re-open, and the
faults a real directory can have (corrupt database, path that is not a directory)."""
from __future__ import annotations

import os
import pickle
import sqlite3
import threading
from pathlib import Path

import pytest

from edge_runtime.cache.base import CacheValueError
from edge_runtime.cache.disk import DB_NAME, DiskTier
from edge_runtime.clock import FakeClock
from edge_runtime.errors import CacheTierError


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_value_expires_on_the_injected_clock(tmp_path: Path, clock: FakeClock) -> None:
    tier = DiskTier(tmp_path / "d", 8, clock)
    tier.set("k", b"answer", ttl_s=60)
    clock.advance(59)
    assert tier.get("k") == b"answer"
    clock.advance(1)
    assert tier.get("k") is None
    assert len(tier) == 0               # expired rows are deleted when seen
    tier.close()


def test_values_survive_closing_and_reopening(tmp_path: Path, clock: FakeClock) -> None:
    first = DiskTier(tmp_path / "d", 8, clock)
    first.set("k", b"kept", ttl_s=3600)
    first.close()
    second = DiskTier(tmp_path / "d", 8, clock)
    second.probe()
    assert second.get("k") == b"kept"
    second.close()


def test_database_stays_within_its_size_limit(tmp_path: Path, clock: FakeClock) -> None:
    d = tmp_path / "d"
    tier = DiskTier(d, 1, clock)
    blob = os.urandom(20_000)

    def write(n: int, tag: str) -> int:
        for i in range(n):
            tier.set(f"{tag}{i}", blob, ttl_s=3600)
        return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())

    after_6mb = write(300, "a")
    after_30mb = write(1500, "b")
    assert (d / DB_NAME).stat().st_size <= 1.1 * 1024 * 1024
    assert after_30mb <= after_6mb      # the SQLite write-ahead log is bounded too
    assert len(tier) < 60
    assert tier.get("b1499") == blob and tier.get("b0") is None and tier.get("a299") is None
    tier.close()


def test_corrupt_database_at_start_is_moved_aside(tmp_path: Path, clock: FakeClock,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / DB_NAME).write_bytes(b"this is not sqlite " * 200)
    tier = DiskTier(d, 8, clock)
    tier.probe()                        # healthy: a fresh database
    tier.set("k", b"v", ttl_s=60)
    assert tier.get("k") == b"v"
    aside = [p.name for p in d.iterdir() if p.name.startswith(f"{DB_NAME}.corrupt-")]
    assert len(aside) == 1
    assert (d / aside[0]).read_bytes().startswith(b"this is not sqlite")
    assert "corrupt" in caplog.text and aside[0] in caplog.text
    tier.close()


def test_only_the_newest_corrupt_files_are_kept(tmp_path: Path, clock: FakeClock) -> None:
    d = tmp_path / "d"
    d.mkdir()
    for _ in range(5):
        (d / DB_NAME).write_bytes(b"garbage" * 100)
        DiskTier(d, 8, clock, keep_corrupt=2).close()
        clock.advance(1)
    assert len(list(d.glob(f"{DB_NAME}.corrupt-*"))) == 2


def test_corruption_found_while_running_is_repaired_by_probe(tmp_path: Path, clock: FakeClock) -> None:
    d = tmp_path / "d"
    tier = DiskTier(d, 8, clock)
    for i in range(20):
        tier.set(f"k{i}", os.urandom(200), ttl_s=60)
    db = d / DB_NAME
    with open(db, "r+b") as f:          # garbage over the live database file
        f.write(os.urandom(db.stat().st_size))
    errors: list[BaseException] = []

    def write_from_a_new_thread() -> None:   # a new thread = a new SQLite connection
        try:
            tier.set("new", b"x", ttl_s=60)
        except BaseException as exc:        # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    t = threading.Thread(target=write_from_a_new_thread)
    t.start()
    t.join()
    assert len(errors) == 1 and isinstance(errors[0], CacheTierError)
    assert "malformed" in errors[0].message or "not a database" in errors[0].message
    tier.probe()                        # moves the file aside, starts fresh
    assert list(d.glob(f"{DB_NAME}.corrupt-*"))
    tier.set("k", b"fresh", ttl_s=60)
    assert tier.get("k") == b"fresh"
    tier.close()


def test_a_file_where_the_directory_should_be_fails_then_recovers(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "answers"
    path.write_text("not a directory")
    tier = DiskTier(path, 8, clock)     # must not raise
    with pytest.raises(CacheTierError) as info:
        tier.probe()
    assert "answers" in info.value.message and "cache.disk_dir" in (info.value.hint or "")
    with pytest.raises(CacheTierError):
        tier.get("k")
    path.unlink()
    tier.probe()
    tier.set("k", b"v", ttl_s=5)
    assert tier.get("k") == b"v"
    tier.close()


def _insert_raw_row(db: Path, key: str, mode: int, value: bytes) -> None:
    con = sqlite3.connect(db)
    con.execute("INSERT INTO Cache (key, raw, store_time, expire_time, access_time, access_count,"
                " tag, size, mode, filename, value) VALUES (?, 1, 0, NULL, 0, 0, NULL, 0, ?, NULL, ?)",
                (key, mode, value))
    con.commit()
    con.close()


def test_rows_that_are_not_ours_are_bad_values_not_crashes(tmp_path: Path, clock: FakeClock) -> None:
    d = tmp_path / "d"
    tier = DiskTier(d, 8, clock)
    _insert_raw_row(d / DB_NAME, "short", 1, b"abc")                        # shorter than the header
    _insert_raw_row(d / DB_NAME, "pickled", 4, pickle.dumps({"x": 1}))    # MODE_PICKLE
    with pytest.raises(CacheValueError):
        tier.get("short")
    with pytest.raises(CacheValueError, match="unpickle"):
        tier.get("pickled")
    tier.probe()                         # the tier itself is fine
    tier.close()


def test_read_only_directory_fails_with_a_hint(tmp_path: Path, clock: FakeClock) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions; the read-only mount test in "
                    "tests/integration/test_cache_disk_faults.py covers this case")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        tier = DiskTier(d, 8, clock)
        with pytest.raises(CacheTierError) as info:
            tier.probe()
        assert "writable" in (info.value.hint or "")
    finally:
        d.chmod(0o755)

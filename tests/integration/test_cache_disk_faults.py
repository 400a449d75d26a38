"""DiskTier / AnswerCache on real broken filesystems: a full disk and a read-only mount.

Needs root (or CAP_SYS_ADMIN) to mount a small tmpfs; skipped with the reason otherwise.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from edge_runtime.cache.base import CachedAnswer
from edge_runtime.cache.tiered import AnswerCache
from edge_runtime.clock import FakeClock
from edge_runtime.config import CacheConfig

pytestmark = pytest.mark.integration

BIG = CachedAnswer(answer="x" * 4000, route="local", created_at=1.0)


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs mounted at tmp_path/fs, unmounted afterwards."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        _mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt))
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_disk_fails_the_tier_and_recovers_when_space_returns(small_fs: Path) -> None:
    clock = FakeClock()
    cache = AnswerCache.from_config(CacheConfig(disk_dir=str(small_fs / "answers"), disk_size_mb=64),
                                    small_fs, clock)
    assert cache.tier_states()["disk"] == "ok"
    for i in range(400):                        # 1.6 MB into a 1 MiB filesystem
        cache.put(f"k{i}", BIG, ttl_s=600)
        if cache.tier_states()["disk"] != "ok":
            break
    state = cache.tier_states()["disk"]
    assert state.startswith("failed: ") and "full" in state
    assert cache.get(f"k{i}") == BIG            # memory keeps serving
    _mount("-o", "remount,size=16m", str(small_fs))
    clock.advance(5)
    cache.put("after", BIG, ttl_s=600)
    assert cache.tier_states()["disk"] == "ok"
    cache.close()


def test_read_only_disk_fails_the_tier_and_recovers_when_writable(small_fs: Path, tmp_path: Path) -> None:
    clock = FakeClock()
    (small_fs / "answers").mkdir()
    _mount("-o", "remount,ro", str(small_fs))
    cache = AnswerCache.from_config(CacheConfig(disk_dir=str(small_fs / "answers")), tmp_path, clock)
    state = cache.tier_states()["disk"]
    assert state.startswith("failed: ") and "answers" in state
    cache.put("k", BIG, ttl_s=600)
    assert cache.get("k") == BIG
    _mount("-o", "remount,rw", str(small_fs))
    clock.advance(5)
    cache.put("k2", BIG, ttl_s=600)
    assert cache.tier_states()["disk"] == "ok"
    assert cache.stats()["tiers"]["disk"]["errors"] >= 1
    cache.close()

"""heap.trim: glibc's malloc_trim where there is one, a quiet no-op elsewhere; heap.collapse_new:
the anonymous memory mapped since a snapshot backed by 2 MB pages (Linux)."""
from __future__ import annotations

import ctypes
import mmap
import os
import platform

import pytest

from edge_runtime import heap


def test_trim_returns_memory_on_glibc():
    big = [bytes(1000) for _ in range(20000)]   # ~20 MB of small blocks, then freed
    del big
    result = heap.trim()
    assert isinstance(result, bool)
    if platform.libc_ver()[0] == "glibc":
        assert result


def test_trim_without_a_c_library_is_a_no_op(monkeypatch):
    monkeypatch.setattr(heap.ctypes.util, "find_library", lambda name: None)
    assert heap.trim() is False


MAPS = """\
00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/python3
00651000-00652000 rw-p 00051000 08:02 173521      /usr/bin/python3
01000000-01500000 rw-p 00000000 00:00 0           [heap]
7f0000100000-7f0000a00000 rw-p 00000000 00:00 0
7f0000a00000-7f0000c00000 r--p 00000000 00:00 0
7f0000c00000-7f0001000000 rw-s 00000000 00:05 42  /dev/zero (deleted)
7f0001000000-7f0001400000 rw-p 00000000 08:02 1   /data/model.onnx.data
7ffc00000000-7ffc00400000 rw-p 00000000 00:00 0   [stack]
"""


def test_anon_huge_slots_are_whole_2mb_slots_of_private_anonymous_writable_maps(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text(MAPS)
    slots = heap.anon_huge_slots(str(maps))
    mb2 = heap.HUGE_PAGE
    # the heap 0x1000000-0x1500000 holds slots 8, 9 (0x1400000.. is cut short); the
    # anonymous map 0x7f0000100000-0x7f0000a00000 holds the slots from 0x7f0000200000 on
    expected = {0x1000000 // mb2, 0x1200000 // mb2} | set(
        range(0x7f0000200000 // mb2, 0x7f0000a00000 // mb2))
    assert slots == expected          # no file, shared, read-only or stack mapping
    assert heap.anon_huge_slots(str(tmp_path / "none")) == frozenset()


def _thp_collapse_works() -> bool:
    try:
        mode = open("/sys/kernel/mm/transparent_hugepage/enabled").read()
        major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    except (OSError, ValueError):
        return False
    return "[never]" not in mode and (major, minor) >= (6, 1)


@pytest.mark.skipif(not _thp_collapse_works(), reason="needs Linux >= 6.1 with THP enabled")
def test_collapse_new_backs_a_new_anonymous_map_with_huge_pages():
    before = heap.anon_huge_slots()
    buf = mmap.mmap(-1, 8 * heap.HUGE_PAGE,          # private anonymous, 16 MB
                    flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf.write(b"\1" * len(buf))                     # faulted in as 4 KB pages (THP madvise)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    done = heap.collapse_new(before)
    assert done >= 4 * heap.HUGE_PAGE                # the slots wholly inside it, at least
    huge = _anon_huge_kb(addr)
    assert huge >= 4 * 2048
    assert buf[:4] == b"\1\1\1\1" and buf[-1:] == b"\1"   # contents kept
    assert heap.collapse_new(heap.anon_huge_slots()) == 0   # nothing new since


@pytest.mark.skipif(not _thp_collapse_works(), reason="needs Linux >= 6.1 with THP enabled")
def test_collapse_new_leaves_a_mostly_untouched_reserve_alone():
    """An allocator's reserve, touched here and there, stays small: collapsing it would make
    all of it resident."""
    before = heap.anon_huge_slots()
    buf = mmap.mmap(-1, 8 * heap.HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for off in range(0, len(buf), 64 * 4096):          # 1 page in 64 resident
        buf[off] = 1
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    faulted = _anon_huge_kb(addr)          # THP "always" may have used 2 MB pages already
    assert heap.collapse_new(before) == 0
    assert _anon_huge_kb(addr) == faulted


def _anon_huge_kb(addr: int) -> int:
    """AnonHugePages (kB) of the mapping holding ``addr`` (/proc/self/smaps)."""
    inside = False
    for line in open("/proc/self/smaps"):
        head = line.split()
        if "-" in head[0] and not head[0].endswith(":"):
            lo, hi = (int(x, 16) for x in head[0].split("-"))
            inside = lo <= addr < hi
        elif inside and head[0] == "AnonHugePages:":
            return int(head[1])
    return 0


def _resident_kb(path: str) -> int:
    """Rss of the process's mappings of ``path`` (kB), from /proc/self/smaps."""
    total, ours = 0, False
    with open("/proc/self/smaps", encoding="utf-8", errors="replace") as f:
        for line in f:
            head = line.split()
            if head and not head[0].endswith(":"):        # a mapping's first line
                ours = len(head) == 6 and head[5] == path
            elif ours and head[0] == "Rss:":
                total += int(head[1])
    return total


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux /proc")
def test_release_file_pages_drops_a_mapped_files_pages_and_keeps_its_bytes(tmp_path):
    size = 8 << 20
    data = os.urandom(size)
    (tmp_path / "weights.bin").write_bytes(data)
    (tmp_path / "other.bin").write_bytes(bytes(1 << 20))
    path, other = (os.path.realpath(tmp_path / n) for n in ("weights.bin", "other.bin"))
    with open(path, "rb") as fh, open(other, "rb") as oh:
        # private and writable, as onnxruntime maps an initializer of its external data
        m = mmap.mmap(fh.fileno(), 0, flags=mmap.MAP_PRIVATE,
                      prot=mmap.PROT_READ | mmap.PROT_WRITE)
        keep = mmap.mmap(oh.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    try:
        assert m[:] == data and keep[:] == bytes(1 << 20)    # every page read: resident
        assert _resident_kb(path) >= 7 << 10
        before_other = _resident_kb(other)
        done = heap.release_file_pages(path)
        if done == 0:
            pytest.skip("the kernel refused madvise")
        assert done == size
        assert _resident_kb(path) < 1 << 10                  # reclaimed
        assert _resident_kb(other) == before_other            # not its mapping
        assert m[12345:12400] == data[12345:12400] and m[:] == data   # nothing lost
    finally:
        m.close()
        keep.close()


def _synced(path, data: bytes) -> str:
    """``data`` written to ``path`` and on the disk: its page-cache pages are clean, the
    kind a reclaim may drop."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return os.path.realpath(path)


def test_released_pages_fault_back_from_the_page_cache_not_the_disk(tmp_path):
    """A token-table row read after the release is a minor fault: the page stayed in the
    page cache (MADV_PAGEOUT dropped it there too, and every read went to the disk)."""
    import resource

    data = os.urandom(4 << 20)
    path = _synced(tmp_path / "weights.bin", data)
    with open(path, "rb") as fh:
        m = mmap.mmap(fh.fileno(), 0, flags=mmap.MAP_PRIVATE,
                      prot=mmap.PROT_READ | mmap.PROT_WRITE)
    try:
        assert m[:] == data
        if heap.release_file_pages(path) == 0:
            pytest.skip("the kernel refused madvise")
        assert _resident_kb(path) < 1 << 10
        before = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
        assert m[:] == data
        assert resource.getrusage(resource.RUSAGE_SELF).ru_majflt == before
    finally:
        m.close()


def test_a_mapping_the_process_wrote_is_left_alone(tmp_path):
    """Dropping a private mapping's written page would bring back the file's bytes: such a
    mapping keeps its pages (and its write); a mapping of the same file only read is
    released."""
    data = os.urandom(1 << 20)
    path = _synced(tmp_path / "weights.bin", data)
    with open(path, "rb") as fh:
        wrote = mmap.mmap(fh.fileno(), 0, flags=mmap.MAP_PRIVATE,
                          prot=mmap.PROT_READ | mmap.PROT_WRITE)
        read = mmap.mmap(fh.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    try:
        wrote[:4] = b"edge"
        assert read[:] == data
        assert heap.release_file_pages(path) == len(data)       # the read mapping only
        assert wrote[:4] == b"edge" and wrote[4:] == data[4:]
        assert read[:] == data
    finally:
        wrote.close()
        read.close()


def test_release_file_pages_of_an_unmapped_file_or_without_proc(tmp_path):
    assert heap.release_file_pages(str(tmp_path / "nothing.bin")) == 0
    assert heap.release_file_pages("x", maps=str(tmp_path / "no-maps")) == 0

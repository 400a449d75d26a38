"""Give freed heap memory back to the operating system (glibc ``malloc_trim``), and back a
loaded model's memory with 2 MB pages (Linux transparent huge pages, :func:`collapse_new`).

Loading a large tokenizer (Gemma 3's 262k-token BPE: ~165 MB while its JSON is parsed,
~95 MB kept) leaves freed arenas that glibc keeps mapped; trimming them before the next big
allocation (the onnxruntime session) keeps the process's peak RSS from stacking the two.
A no-op (returns False) where the C library has no ``malloc_trim`` (musl, macOS).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import mmap
from typing import Any


def _libc(*names: str) -> list[Any] | None:
    """The C library's functions ``names``; None where there is no such library or one of
    them is missing (musl has no malloc_trim, macOS no /proc)."""
    lib = ctypes.util.find_library("c")
    try:
        found = ctypes.CDLL(lib, use_errno=True) if lib else None
        return [getattr(found, n) for n in names] if found is not None else None
    except (OSError, AttributeError):
        return None


def trim() -> bool:
    """Release free heap pages; True when the C library did so."""
    fns = _libc("malloc_trim")
    if fns is None:
        return False
    fn = fns[0]
    fn.argtypes = [ctypes.c_size_t]
    return bool(fn(0))


# -- 2 MB pages for the model's weights ----------------------------------------------------
# A decode step streams every weight (SmolLM2-135M ~110 MB, Gemma 3 270M ~190 MB of
# onnxruntime's pre-packed copies) through the TLB: in 4 KB pages that is ~30-50k page walks
# a token. Backed by 2 MB pages, a decode step ran 1.03-1.09x faster (two sessions of one
# model in one process, one of them collapsed, in both load orders; 2-core Zen 4 VM, THP
# "madvise", 2026-12-04); only slots that are mostly resident already are collapsed
# (MIN_RESIDENT), so the resident memory stays as it was (VmRSS after loading SmolLM2 /
# Gemma 3: 212 / 376 MB without, 212 / 378 MB with, 116 / 158 MB of it on 2 MB pages).
HUGE_PAGE = 2 << 20
MADV_HUGEPAGE = 14     # Linux: back this range with huge pages when it faults
MADV_COLLAPSE = 25     # Linux >= 6.1: do it now, synchronously


def _mappings(maps: str) -> list[tuple[int, int, str, str]]:
    """The process's mappings from ``maps`` (/proc/self/maps): (start, end, permissions,
    path or ""); empty where there is no such file (not Linux)."""
    try:
        with open(maps, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.rstrip("\n").split(maxsplit=5)
        if len(parts) >= 5:
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi, parts[1], parts[5] if len(parts) > 5 else ""))
    return out


def anon_huge_slots(maps: str = "/proc/self/maps") -> frozenset[int]:
    """The 2 MB-aligned slots (address // HUGE_PAGE) lying wholly inside the process's
    private anonymous writable mappings (the heap and malloc's mmaps); empty where there is
    no /proc (not Linux)."""
    slots: set[int] = set()
    for lo, hi, perms, path in _mappings(maps):
        if not perms.startswith("rw") or perms[3] != "p":
            continue
        if path and path != "[heap]":
            continue                     # a file, a stack, vdso ...: not ours to touch
        slots.update(range(-(-lo // HUGE_PAGE), hi // HUGE_PAGE))
    return frozenset(slots)


# a slot is collapsed only when at least this share of its 4 KB pages is resident already:
# weights written by the session's pre-packing are; an allocator's reserve is not, and a
# collapse would make all of it resident (SmolLM2: +90 MB at load without this check)
MIN_RESIDENT = 7 / 8


def collapse_new(before: frozenset[int], maps: str = "/proc/self/maps") -> int:
    """Back the anonymous 2 MB slots that appeared since ``before`` (a snapshot of
    :func:`anon_huge_slots`) and are mostly resident (MIN_RESIDENT) with transparent huge
    pages; returns the bytes collapsed. Best effort: 0 where the kernel refuses (THP
    "never", a kernel before 6.1, not Linux)."""
    new = sorted(anon_huge_slots(maps) - before)
    if not new:
        return 0
    fns = _libc("madvise", "mincore")
    if fns is None:
        return 0
    madvise, mincore = fns
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    pages = HUGE_PAGE // mmap.PAGESIZE
    resident = ctypes.create_string_buffer(pages)
    done = 0
    for slot in new:
        addr = slot * HUGE_PAGE
        if mincore(addr, HUGE_PAGE, resident) != 0:
            continue                      # unmapped since the snapshot
        if sum(b & 1 for b in resident.raw) < MIN_RESIDENT * pages:
            continue
        if madvise(addr, HUGE_PAGE, MADV_HUGEPAGE) != 0:
            return done                   # THP off: nothing else will work either
        if madvise(addr, HUGE_PAGE, MADV_COLLAPSE) == 0:
            done += HUGE_PAGE
    return done


# -- the weight file's pages ---------------------------------------------------------------
# onnxruntime memory-maps each initializer of a model's external data file (private
# mappings). The weights it pre-packs are copied out and their mappings released; what
# stays mapped is read in place, above all the LLM's token table: a Gather of one row per
# token fed and of each candidate row the head rescores. Loading reads the file front to
# back and the kernel maps the pages around each fault, so after the load much of the table
# is resident though a decode touches a few rows.
MADV_RANDOM = 1        # Linux: no read-ahead or fault-around for this range
MADV_DONTNEED = 4      # Linux: unmap the range's pages from this process; a clean file page
#                        stays in the page cache and faults back in without a disk read
# (MADV_PAGEOUT, which the engine used first, reclaims a clean file page from the page cache
# too: each token-table row read after it was a read from the disk, 229-257 major faults in
# a fresh process's first 64-token answer of SmolLM2-135M on this box, none with
# MADV_DONTNEED; the RSS after either is the same.)


def _written(path: str, smaps: str) -> set[int]:
    """Start addresses of the process's mappings of ``path`` holding pages it wrote (a
    private mapping's own copies: ``Anonymous`` above 0 kB in /proc/self/smaps)."""
    starts, start = set(), None
    try:
        with open(smaps, encoding="utf-8", errors="replace") as f:
            for line in f:
                head = line.split()
                if head and not head[0].endswith(":"):          # a mapping's first line
                    ours = len(head) == 6 and head[5] == path
                    start = int(head[0].split("-")[0], 16) if ours else None
                elif head and start is not None and head[0] == "Anonymous:" and int(head[1]) > 0:
                    starts.add(start)
    except OSError:
        pass
    return starts


def release_file_pages(path: str, maps: str = "/proc/self/maps",
                       smaps: str = "/proc/self/smaps") -> int:
    """For the mappings of the file ``path``: ask for no read-ahead on them (a later read
    faults in the 4 KB page it touches, from the page cache) and drop their resident pages
    from this process; returns the bytes of mapping so advised. A mapping holding a page
    the process wrote is left as it is (dropping it would lose the write). Best effort: 0
    where there is no /proc or the kernel refuses (not Linux)."""
    ranges = [(lo, hi - lo) for lo, hi, _, mapped in _mappings(maps) if mapped == path]
    fns = _libc("madvise") if ranges else None
    if fns is None:
        return 0
    madvise = fns[0]
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    written = _written(path, smaps)
    done = 0
    for addr, size in ranges:
        if addr in written:
            continue
        if madvise(addr, size, MADV_RANDOM) == 0 and madvise(addr, size, MADV_DONTNEED) == 0:
            done += size
    return done

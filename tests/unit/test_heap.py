"""heap.trim: glibc's malloc_trim where there is one, a quiet no-op elsewhere."""
from __future__ import annotations

import platform

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

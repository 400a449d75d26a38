"""Give freed heap memory back to the operating system (glibc ``malloc_trim``).

Loading a large tokenizer (Gemma 3's 262k-token BPE: ~165 MB while its JSON is parsed,
~95 MB kept) leaves freed arenas that glibc keeps mapped; trimming them before the next big
allocation (the onnxruntime session) keeps the process's peak RSS from stacking the two.
A no-op (returns False) where the C library has no ``malloc_trim`` (musl, macOS).
"""
from __future__ import annotations

import ctypes
import ctypes.util


def trim() -> bool:
    """Release free heap pages; True when the C library did so."""
    name = ctypes.util.find_library("c")
    try:
        fn = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        fn = None
    if fn is None:
        return False
    fn.argtypes = [ctypes.c_size_t]
    return bool(fn(0))

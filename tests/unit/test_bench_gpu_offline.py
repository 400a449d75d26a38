"""benchmarks/gpu_offline/prune_fatbin.py: only the kept architecture's cubins survive."""
import struct

from benchmarks.gpu_offline.prune_fatbin import MAGIC, prune


def _entry(arch: int, payload: bytes) -> bytes:
    header = bytearray(64)
    struct.pack_into("<HHIQ", header, 0, 2, 0x101, len(header), len(payload))
    struct.pack_into("<I", header, 28, arch)
    return bytes(header) + payload


def _fatbin(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return MAGIC + struct.pack("<HHQ", 1, 16, len(body)) + body


def test_other_architectures_are_zeroed_and_the_kept_one_is_untouched():
    sm90, sm80, sm120 = b"\x90" * 40, b"\x80" * 24, b"\x12" * 8
    blob = bytearray(b"ELF..." + MAGIC + b"xx" + _fatbin(_entry(80, sm80), _entry(90, sm90))
                     + b"code" + _fatbin(_entry(120, sm120)))
    before = bytes(blob)
    kept, zeroed = prune(blob, 90)
    assert (kept, zeroed) == (40, 32) and len(blob) == len(before)
    assert sm90 in blob and sm80 not in blob and sm120 not in blob
    assert blob.startswith(b"ELF..." + MAGIC + b"xx") and b"code" in blob  # the rest as it was

"""Zero every CUDA fatbin entry of a shared library that is not for one GPU architecture,
so the file compresses to a fraction (onnxruntime-gpu 1.31.1's CUDA provider: 284 MB,
of which 142 MB are cubins for other architectures; xz: 52 MB after). Only for carrying
the GPU check to an offline machine whose architecture is known (the H200: sm_90); the
driver loads the entry that matches the GPU and never reads the zeroed ones.

    python benchmarks/gpu_offline/prune_fatbin.py IN.so OUT.so --sm 90
"""
from __future__ import annotations

import argparse
import struct

MAGIC = struct.pack("<I", 0xBA55ED50)


def prune(data: bytearray, keep_sm: int) -> tuple[int, int]:
    """Zero the payloads of entries for other architectures in place; (kept, zeroed) bytes."""
    pos = kept = zeroed = 0
    while (i := data.find(MAGIC, pos)) >= 0:
        _version, header, size = struct.unpack_from("<HHQ", data, i + 4)
        if header != 16:                       # not a fatbin header: the bytes just match
            pos = i + 4
            continue
        p, end = i + header, i + header + size
        while p < end:
            _kind, _unknown, entry_header, payload = struct.unpack_from("<HHIQ", data, p)
            arch = struct.unpack_from("<I", data, p + 28)[0]
            body = slice(p + entry_header, p + entry_header + payload)
            if arch == keep_sm:
                kept += payload
            else:
                data[body] = bytes(payload)
                zeroed += payload
            p += entry_header + payload
        pos = end
    return kept, zeroed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--sm", type=int, required=True, help="the architecture kept, e.g. 90")
    a = ap.parse_args()
    data = bytearray(open(a.src, "rb").read())
    kept, zeroed = prune(data, a.sm)
    open(a.dst, "wb").write(data)
    print(f"sm_{a.sm}: kept {kept / 1e6:.1f} MB of cubins, zeroed {zeroed / 1e6:.1f} MB")


if __name__ == "__main__":
    main()

"""Re-pack GGUF quantized blocks into com.microsoft ``MatMulNBits`` layouts, bit-exactly.

MatMulNBits computes, per block of ``block_size`` weights along K, ``w = (q - zp) * scale``
with ``B`` stored as [N, n_blocks, block_size * bits / 8] uint8 (4-bit: element 2k in the low
nibble of byte k, 2k+1 in the high nibble) and integer zero points.

* Q4_0 (``w = d * (q - 8)``): scale d, zero point 8 -> exact.
* Q4_1 (``w = d * q + m = d * (q - 8) + (m + 8d)``): scale d, the default zero point 8
  (no zero-point input: ORT's symmetric kernel), plus the block offset ``m + 8d`` as an
  exact correction ``y += blocksum(x) @ M`` (a [n_blocks, N] fp32 matrix). Centring q
  keeps the int8-activation path (accuracy_level 4) from cancelling a large common term. ORT's CPU kernel does
  accept a float zero point ``-m/d`` (also exact) but then dequantizes the whole matrix on
  every call: measured 0.7-1.1 ms vs 0.03-0.07 ms for a 576x1536 matmul, so the correction
  path is used.
* Q8_0 (``w = d * q``, q int8): stored as q + 128 (uint8), 8-bit, zero point 128 -> exact.

GGUF block layouts (ggml): Q4_0 = {f16 d; u8 qs[16]}, Q4_1 = {f16 d; f16 m; u8 qs[16]},
Q8_0 = {f16 d; i8 qs[32]}; in ``qs[j]`` the low nibble is element j, the high one j + 16.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ModelLoadError
from .gguf_weights import QTensor

BLOCK = 32


@dataclass
class NBitsWeight:
    """Inputs of one MatMulNBits node plus the optional Q4_1 block-minimum correction."""

    n: int                      # output features
    k: int                      # input features
    bits: int
    b: np.ndarray               # uint8 [N, n_blocks, BLOCK * bits / 8]
    scales: np.ndarray          # fp32 [N * n_blocks]
    zero_points: np.ndarray | None  # uint8, packed per MatMulNBits rules; None = default
    mins: np.ndarray | None     # fp32 [n_blocks, N] (Q4_1 only): y += blocksum(x) @ mins


def _blocks(t: QTensor, block_bytes: int) -> np.ndarray:
    if t.cols % BLOCK:
        raise ModelLoadError(f"tensor {t.name} has {t.cols} columns, not a multiple of {BLOCK}",
                             hint="this GGUF layout is not supported by the builder")
    nb = t.cols // BLOCK
    raw = np.ascontiguousarray(t.raw, dtype=np.uint8)
    return raw.reshape(t.rows, nb, block_bytes)


def _unpack_ggml_nibbles(qs: np.ndarray) -> np.ndarray:
    """[..., 16] ggml nibbles -> [..., 32] values 0..15 in element order."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=-1)


def _pack_nbits4(q: np.ndarray) -> np.ndarray:
    """[..., 32] values 0..15 -> [..., 16] MatMulNBits bytes (even element in low nibble)."""
    return (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)


def _f16(b: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(b).view(np.float16)[..., 0].astype(np.float32)


def q4_1_to_nbits(t: QTensor) -> NBitsWeight:
    blk = _blocks(t, 20)
    d, m = _f16(blk[..., 0:2]), _f16(blk[..., 2:4])
    q = _unpack_ggml_nibbles(blk[..., 4:20])
    offset = (m.astype(np.float64) + 8.0 * d.astype(np.float64)).astype(np.float32)
    return NBitsWeight(t.rows, t.cols, 4, _pack_nbits4(q), d.reshape(-1), None,
                       np.ascontiguousarray(offset.T))


def q4_0_to_nbits(t: QTensor) -> NBitsWeight:
    blk = _blocks(t, 18)
    d = _f16(blk[..., 0:2])
    q = _unpack_ggml_nibbles(blk[..., 2:18])
    return NBitsWeight(t.rows, t.cols, 4, _pack_nbits4(q), d.reshape(-1), None, None)


def q8_0_to_nbits(t: QTensor) -> NBitsWeight:
    blk = _blocks(t, 34)
    d = _f16(blk[..., 0:2])
    q = blk[..., 2:34].view(np.int8).astype(np.int16) + 128
    zp = np.full(d.size, 128, np.uint8)
    return NBitsWeight(t.rows, t.cols, 8, q.astype(np.uint8), d.reshape(-1), zp, None)


CONVERTERS = {"Q4_1": q4_1_to_nbits, "Q4_0": q4_0_to_nbits, "Q8_0": q8_0_to_nbits}


def to_nbits(t: QTensor) -> NBitsWeight:
    conv = CONVERTERS.get(t.qtype)
    if conv is None:
        raise ModelLoadError(f"tensor {t.name} has GGUF type {t.qtype}; the builder handles "
                             f"{sorted(CONVERTERS)}", hint="use a Q4_0/Q4_1/Q8_0 GGUF")
    return conv(t)


def concat_rows(ws: list[NBitsWeight]) -> NBitsWeight:
    """Stack several weights with the same K and format along N (e.g. q|k|v, gate|up)."""
    first = ws[0]
    if any(w.k != first.k or w.bits != first.bits or (w.mins is None) != (first.mins is None)
           or (w.zero_points is None) != (first.zero_points is None) for w in ws):
        raise ModelLoadError("cannot fuse weights of different shape or format",
                             hint="this GGUF mixes quantization types within a layer")
    mins = None if first.mins is None else np.concatenate([w.mins for w in ws], axis=1)
    return NBitsWeight(sum(w.n for w in ws), first.k, first.bits,
                       np.concatenate([w.b for w in ws], axis=0),
                       np.concatenate([w.scales for w in ws]),
                       None if first.zero_points is None
                       else np.concatenate([w.zero_points for w in ws]), mins)


def dequantize_nbits(w: NBitsWeight) -> np.ndarray:
    """fp32 [N, K] from the MatMulNBits layout (used by tests to prove the re-pack exact)."""
    nb = w.k // BLOCK
    if w.bits == 4:
        q = np.stack([w.b & 0x0F, w.b >> 4], axis=-1).reshape(w.n, nb, BLOCK).astype(np.float32)
        if w.zero_points is None:
            zp = np.full((w.n, nb), 8.0, np.float32)
        else:
            zb = w.zero_points.reshape(w.n, -1)
            zp = np.stack([zb & 0x0F, zb >> 4], axis=-1).reshape(w.n, -1)[:, :nb]
            zp = zp.astype(np.float32)
    else:
        q = w.b.astype(np.float32)
        zp = w.zero_points.reshape(w.n, nb).astype(np.float32)
    out = (q - zp[..., None]) * w.scales.reshape(w.n, nb)[..., None]
    if w.mins is not None:
        out = out + w.mins.T[..., None]
    return out.reshape(w.n, w.k)

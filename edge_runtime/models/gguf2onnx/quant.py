"""Re-pack GGUF quantized blocks into com.microsoft ``MatMulNBits`` layouts, bit-exactly.

MatMulNBits computes, per block of ``block_size`` weights along K, ``w = (q - zp) * scale``
with ``B`` stored as [N, n_blocks, block_size * bits / 8] uint8 (4-bit: element 2k in the low
nibble of byte k, 2k+1 in the high nibble) and integer zero points. A block form
``w = s * q + m`` (an offset per block) is kept exact by centring q (zero point z) and adding
``y += blocksum(x) @ M`` with ``M = m + z * s`` (a [n_blocks, N] fp32 matrix); centring keeps
the int8-activation path (accuracy_level 4) from cancelling a large common term. ORT's CPU
kernel does accept a float zero point ``-m/s`` (also exact) but then dequantizes the whole
matrix on every call (measured 0.7-1.1 ms vs 0.03-0.07 ms for a 576x1536 matmul).
:func:`fold_offsets` gives such a weight a one-node form instead, not exact (see there).

==========  =====================================  ==========================================
GGUF type   ggml block                             ONNX (all exact)
==========  =====================================  ==========================================
Q4_0        32: ``d * (q - 8)``, q 4-bit           4-bit, block 32, scale d, default zp 8
Q4_1        32: ``d * q + m``                      4-bit, block 32, zp 8 + offset m + 8d
Q5_0        32: ``d * (q - 16)``, q 5-bit          8-bit, block 32, scale d, zp 16
Q5_1        32: ``d * q + m``, q 5-bit             8-bit, block 32, zp 16 + offset m + 16d
Q8_0        32: ``d * q``, q int8                  8-bit, block 32, q + 128, zp 128
Q4_K        256 = 8 x 32: ``d*sc * q - dmin*mn``   4-bit, block 32, scale d*sc, zp 8 + offset
Q5_K        256 = 8 x 32, q 5-bit, same form       8-bit, block 32, scale d*sc, zp 16 + offset
Q6_K        256 = 16 x 16: ``d*sc * (q - 32)``     8-bit, block 16, scale d*sc, zp 32
==========  =====================================  ==========================================

(``d*sc``: an fp16 times a 6- or 8-bit integer, exact in fp32.) Any other type the ``gguf``
package can dequantize (Q2_K, Q3_K, IQ*, ...) is re-quantized to symmetric 8-bit blocks of 32
(``approx_to_nbits``): not exact, and ``NBitsWeight.max_abs_error`` carries the measured
error against the GGUF's own dequantization so the build can log it. F32/F16/BF16 tensors
are not block types: the graph uses them as plain fp32 MatMul weights.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ModelLoadError
from .gguf_weights import QTensor

BLOCK = 32
QK_K = 256
FLOAT_TYPES = ("F32", "F16", "BF16")


@dataclass
class NBitsWeight:
    """Inputs of one MatMulNBits node plus the optional block-offset correction."""

    n: int                      # output features
    k: int                      # input features
    bits: int
    b: np.ndarray               # uint8 [N, n_blocks, block * bits / 8]
    scales: np.ndarray          # fp32 [N * n_blocks]
    zero_points: np.ndarray | None  # uint8, packed per MatMulNBits rules; None = default
    mins: np.ndarray | None     # fp32 [n_blocks, N]: y += blocksum(x) @ mins
    block: int = BLOCK
    max_abs_error: float = 0.0  # vs the GGUF dequantization; 0 for the exact mappings

    @property
    def fmt(self) -> tuple:
        return (self.k, self.bits, self.block, self.mins is None, self.zero_points is None)


def _blocks(t: QTensor, block_bytes: int, block: int = BLOCK) -> np.ndarray:
    if t.cols % block:
        raise ModelLoadError(f"tensor {t.name} has {t.cols} columns, not a multiple of {block}",
                             hint="this GGUF layout is not supported by the builder")
    nb = t.cols // block
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


def _offset(m: np.ndarray, zp: int, s: np.ndarray) -> np.ndarray:
    """[rows, nb] block offsets ``m + zp * s`` -> the [nb, rows] correction matrix."""
    off = (m.astype(np.float64) + zp * s.astype(np.float64)).astype(np.float32)
    return np.ascontiguousarray(off.T)


def _eight_bit(t: QTensor, q: np.ndarray, s: np.ndarray, zp: int, m: np.ndarray | None = None,
               block: int = BLOCK) -> NBitsWeight:
    """q [rows, nb, block] 0..255, s [rows, nb] -> an 8-bit weight with zero point ``zp``."""
    return NBitsWeight(t.rows, t.cols, 8, q.astype(np.uint8), s.reshape(-1).astype(np.float32),
                       np.full(s.size, zp, np.uint8), None if m is None else _offset(m, zp, s),
                       block)


def q4_0_to_nbits(t: QTensor) -> NBitsWeight:
    blk = _blocks(t, 18)
    d = _f16(blk[..., 0:2])
    q = _unpack_ggml_nibbles(blk[..., 2:18])
    return NBitsWeight(t.rows, t.cols, 4, _pack_nbits4(q), d.reshape(-1), None, None)


def q4_1_to_nbits(t: QTensor) -> NBitsWeight:
    blk = _blocks(t, 20)
    d, m = _f16(blk[..., 0:2]), _f16(blk[..., 2:4])
    q = _unpack_ggml_nibbles(blk[..., 4:20])
    return NBitsWeight(t.rows, t.cols, 4, _pack_nbits4(q), d.reshape(-1), None,
                       _offset(m, 8, d))


def _q5_values(qh: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Q5_0/Q5_1 fields -> [..., 32] values 0..31 (bit j of the uint32 qh = element j's 5th)."""
    h = np.ascontiguousarray(qh).view("<u4")[..., 0]
    bits = ((h[..., None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.uint8)
    return _unpack_ggml_nibbles(qs) | (bits << 4)


def q5_0_to_nbits(t: QTensor) -> NBitsWeight:
    blk = _blocks(t, 22)
    d = _f16(blk[..., 0:2])
    return _eight_bit(t, _q5_values(blk[..., 2:6], blk[..., 6:22]), d, 16)


def q5_1_to_nbits(t: QTensor) -> NBitsWeight:
    blk = _blocks(t, 24)
    d, m = _f16(blk[..., 0:2]), _f16(blk[..., 2:4])
    return _eight_bit(t, _q5_values(blk[..., 4:8], blk[..., 8:24]), d, 16, m)


def q8_0_to_nbits(t: QTensor) -> NBitsWeight:
    blk = _blocks(t, 34)
    d = _f16(blk[..., 0:2])
    q = blk[..., 2:34].view(np.int8).astype(np.int16) + 128
    return _eight_bit(t, q, d, 128)


def _k_scales_mins(sc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 12 packed bytes of Q4_K/Q5_K -> 8 six-bit scales and 8 six-bit mins (ggml's
    get_scale_min_k4)."""
    sc = sc.astype(np.uint16)
    lo_s, lo_m = sc[..., 0:4] & 63, sc[..., 4:8] & 63
    hi_s = (sc[..., 8:12] & 0x0F) | ((sc[..., 0:4] >> 6) << 4)
    hi_m = (sc[..., 8:12] >> 4) | ((sc[..., 4:8] >> 6) << 4)
    return (np.concatenate([lo_s, hi_s], -1).astype(np.float32),
            np.concatenate([lo_m, hi_m], -1).astype(np.float32))


def _k_super(t: QTensor, block_bytes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q4_K/Q5_K super-blocks -> raw [rows, nsb, bytes], sub-block scale and min [rows, nb]."""
    blk = _blocks(t, block_bytes, QK_K)
    d, dmin = _f16(blk[..., 0:2]), _f16(blk[..., 2:4])
    sc, mn = _k_scales_mins(blk[..., 4:16])
    s = (d[..., None] * sc).reshape(t.rows, -1)        # exact: fp16 x 6-bit int
    m = -(dmin[..., None] * mn).reshape(t.rows, -1)
    return blk, s, m


def q4_k_to_nbits(t: QTensor) -> NBitsWeight:
    blk, s, m = _k_super(t, 144)
    qs = blk[..., 16:144].reshape(t.rows, -1, 4, 32)       # 4 chunks of 64 elements
    q = np.stack([qs & 0x0F, qs >> 4], axis=3).reshape(t.rows, -1, BLOCK)
    return NBitsWeight(t.rows, t.cols, 4, _pack_nbits4(q), s.reshape(-1), None, _offset(m, 8, s))


def q5_k_to_nbits(t: QTensor) -> NBitsWeight:
    blk, s, m = _k_super(t, 176)
    qh = blk[..., 16:48]                                    # [rows, nsb, 32]
    qs = blk[..., 48:176].reshape(t.rows, -1, 4, 32)
    j = np.arange(4)[None, None, :, None]
    lo = (qs & 0x0F) | (((qh[:, :, None, :] >> (2 * j)) & 1) << 4)
    hi = (qs >> 4) | (((qh[:, :, None, :] >> (2 * j + 1)) & 1) << 4)
    q = np.stack([lo, hi], axis=3).reshape(t.rows, -1, BLOCK)
    return _eight_bit(t, q, s, 16, m)


def q6_k_to_nbits(t: QTensor) -> NBitsWeight:
    blk = _blocks(t, 210, QK_K)
    ql = blk[..., 0:128].reshape(t.rows, -1, 2, 2, 32)     # [half, l-chunk (0/32), 32]
    qh = blk[..., 128:192].reshape(t.rows, -1, 2, 1, 32)
    sc = blk[..., 192:208].view(np.int8).astype(np.float32)  # [rows, nsb, 16]
    d = _f16(blk[..., 208:210])
    # within a half of 128: y[l + 32*g] for g = 0..3 uses ql[l + 32*(g%2)] nibble g//2 and
    # qh bits 2g..2g+1
    parts = []
    for g in range(4):
        nib = (ql[..., g % 2, :] >> (4 * (g // 2))) & 0x0F
        parts.append(nib | (((qh[..., 0, :] >> (2 * g)) & 3) << 4))
    q = np.stack(parts, axis=3).reshape(t.rows, -1, 16)      # element order, blocks of 16
    s = (d[..., None] * sc).reshape(t.rows, -1)
    return _eight_bit(t, q, s, 32, block=16)


CONVERTERS = {"Q4_0": q4_0_to_nbits, "Q4_1": q4_1_to_nbits, "Q5_0": q5_0_to_nbits,
              "Q5_1": q5_1_to_nbits, "Q8_0": q8_0_to_nbits, "Q4_K": q4_k_to_nbits,
              "Q5_K": q5_k_to_nbits, "Q6_K": q6_k_to_nbits}
SUPPORTED = ", ".join(list(CONVERTERS) + list(FLOAT_TYPES))


def dequantize_gguf(t: QTensor) -> np.ndarray:
    """fp32 [rows, cols] by the gguf package's own numpy dequantizer."""
    import gguf

    if t.qtype == "F32":
        return np.asarray(t.raw, dtype=np.float32).reshape(t.rows, t.cols)
    try:
        qt = gguf.GGMLQuantizationType[t.qtype]
        out = gguf.quants.dequantize(t.raw, qt)
    except (KeyError, NotImplementedError):
        raise ModelLoadError(f"tensor {t.name} has GGUF type {t.qtype}, which neither the "
                             f"builder nor the gguf package can read; supported: {SUPPORTED}",
                             hint="re-quantize the model to one of the supported types") from None
    return np.asarray(out, dtype=np.float32).reshape(t.rows, t.cols)


def approx_to_nbits(t: QTensor) -> NBitsWeight:
    """Any dequantizable type -> symmetric 8-bit blocks of 32 (round to nearest), with the
    measured max abs error against the GGUF dequantization."""
    w = dequantize_gguf(t)
    if t.cols % BLOCK:
        raise ModelLoadError(f"tensor {t.name} has {t.cols} columns, not a multiple of {BLOCK}",
                             hint="this GGUF layout is not supported by the builder")
    blocks = w.reshape(t.rows, -1, BLOCK)
    s = np.abs(blocks).max(-1) / 127.0
    s[s == 0] = 1.0
    q = np.clip(np.rint(blocks / s[..., None]), -127, 127)
    err = float(np.abs(q * s[..., None] - blocks).max())
    out = _eight_bit(t, q + 128, s.astype(np.float32), 128)
    out.max_abs_error = err
    return out


def requantize_4bit(w: NBitsWeight, block: int = BLOCK, rows: int = 8192) -> NBitsWeight:
    """``w``'s values re-quantized to symmetric 4-bit blocks of ``block`` (Q4_0's rounding:
    the block's largest magnitude maps to -8; a last partial block is padded with zeros, as
    MatMulNBits reads it), with the max abs error against ``w``. Not exact: used only where
    an exact step follows (the tied head's candidates, which are rescored from the table's
    exact rows). Done ``rows`` output rows at a time (Gemma 3's 262k-row table stays a few
    hundred MB of build memory)."""
    nb = -(-w.k // block)
    packed = np.empty((w.n, nb, block // 2), np.uint8)
    scales = np.empty((w.n, nb), np.float32)
    err = 0.0
    for r in range(0, w.n, rows):
        v = dequantize_nbits(split_rows(w, r, min(r + rows, w.n)))
        v = np.pad(v, ((0, 0), (0, nb * block - w.k))).reshape(-1, nb, block)
        peak = np.take_along_axis(v, np.abs(v).argmax(-1)[..., None], -1)[..., 0]
        d = peak / -8.0
        d[d == 0] = 1.0
        q = np.clip(np.rint(v / d[..., None]) + 8, 0, 15)
        err = max(err, float(np.abs((q - 8) * d[..., None] - v).max()))
        packed[r:r + len(v)] = _pack_nbits4(q.astype(np.uint8))
        scales[r:r + len(v)] = d
    return NBitsWeight(w.n, w.k, 4, packed, scales.reshape(-1), None, None, block, err)


def to_nbits(t: QTensor, *, allow_approx: bool = True) -> NBitsWeight:
    conv = CONVERTERS.get(t.qtype)
    if conv is not None:
        return conv(t)
    if t.qtype in FLOAT_TYPES or not allow_approx:
        raise ModelLoadError(f"tensor {t.name} has GGUF type {t.qtype}; the builder maps "
                             f"{', '.join(CONVERTERS)} exactly",
                             hint="use a GGUF quantized with one of those types")
    return approx_to_nbits(t)


def concat_rows(ws: list[NBitsWeight]) -> NBitsWeight:
    """Stack several weights with the same K and format along N (e.g. q|k|v, gate|up)."""
    first = ws[0]
    if not can_fuse(ws):
        raise ModelLoadError("cannot fuse weights of different shape or format",
                             hint="this GGUF mixes quantization types within a layer")
    mins = None if first.mins is None else np.concatenate([w.mins for w in ws], axis=1)
    return NBitsWeight(sum(w.n for w in ws), first.k, first.bits,
                       np.concatenate([w.b for w in ws], axis=0),
                       np.concatenate([w.scales for w in ws]),
                       None if first.zero_points is None
                       else np.concatenate([w.zero_points for w in ws]), mins, first.block,
                       max(w.max_abs_error for w in ws))


def split_rows(w: NBitsWeight, start: int, stop: int) -> NBitsWeight:
    """Output rows ``start:stop`` of ``w`` (the same blocks, views where possible)."""
    nb = -(-w.k // w.block)
    zp = None
    if w.zero_points is not None:
        zp = np.ascontiguousarray(w.zero_points.reshape(w.n, -1)[start:stop]).reshape(-1)
    return NBitsWeight(stop - start, w.k, w.bits, w.b[start:stop],
                       np.ascontiguousarray(w.scales.reshape(w.n, nb)[start:stop]).reshape(-1),
                       zp, None if w.mins is None else np.ascontiguousarray(w.mins[:, start:stop]),
                       w.block, w.max_abs_error)


def can_fuse(ws: list[NBitsWeight]) -> bool:
    return all(w.fmt == ws[0].fmt for w in ws)


def _pack_zero_points(z: np.ndarray, bits: int) -> np.ndarray:
    """[N, n_blocks] integer zero points -> MatMulNBits' layout (4-bit: two a byte, each row
    padded to whole bytes; 8-bit: one a byte)."""
    z = z.astype(np.uint8)
    if bits == 8:
        return z.reshape(-1)
    if z.shape[1] % 2:
        z = np.concatenate([z, np.zeros((z.shape[0], 1), np.uint8)], axis=1)
    return _pack_nbits4(z).reshape(-1)


def fold_offsets(w: NBitsWeight, means: bool = False) -> NBitsWeight:
    """``w``'s block form ``s * q + m`` as ONE MatMulNBits over ``[x, blocksums(x)]`` (or,
    with ``means``, ``[x, block means of x]``): the offset's whole steps become each
    block's integer zero point ``z = round(-m / s)`` (clipped to the code range) and what is
    left, ``r = m + z * s`` (at most half a step inside the range), becomes extra weight
    rows, K + n_blocks inputs in all, quantized in blocks of ``w.block`` at ``w.bits`` with
    their own scales and zero points. Not exact: the residual's rounding is at most 1/30 of
    the range of the residuals in its block (4-bit), 1/510 (8-bit); ``max_abs_error`` carries
    the largest error on a weight against the exact form. The graph feeds the means with an
    AveragePool and a Concat, cheaper than the exact form's correction (see :mod:`.graph`)."""
    if w.mins is None or w.k % w.block:
        raise ValueError("fold_offsets needs a weight with block offsets and whole blocks")
    nb, top = w.k // w.block, (1 << w.bits) - 1
    s = w.scales.reshape(w.n, nb).astype(np.float64)
    m = w.mins.T.astype(np.float64) - zero_points(w) * s   # the block offsets, zero point 0
    z = np.clip(np.rint(-m / np.where(s == 0, 1.0, s)), 0, top)
    r = m + z * s                                       # [N, nb] what the zero points miss
    ne = -(-nb // w.block)
    unit = w.block if means else 1      # a mean's weight is the offset times the block
    flat = np.zeros((w.n, ne * w.block))
    flat[:, :nb] = r * unit
    rb = flat.reshape(w.n, ne, w.block)
    lo, hi = np.minimum(rb.min(-1), 0.0), np.maximum(rb.max(-1), 0.0)
    rs = (hi - lo) / top
    rs = np.where(rs == 0, 1.0, rs).astype(np.float32).astype(np.float64)
    rz = np.clip(np.rint(-lo / rs), 0, top)
    rq = np.clip(np.rint(rb / rs[..., None] + rz[..., None]), 0, top)
    err = float(np.abs(rs[..., None] * (rq - rz[..., None]) - rb).max()) / unit
    rq = rq.astype(np.uint8)
    extra = _pack_nbits4(rq) if w.bits == 4 else rq
    return NBitsWeight(w.n, w.k + nb, w.bits, np.concatenate([w.b, extra], axis=1),
                       np.concatenate([s, rs], axis=1).astype(np.float32).reshape(-1),
                       _pack_zero_points(np.concatenate([z, rz], axis=1), w.bits), None,
                       w.block, max(w.max_abs_error, err))


def zero_points(w: NBitsWeight) -> np.ndarray:
    """[N, n_blocks] each block's zero point, unpacked (MatMulNBits' default when the weight
    has none: 2 ** (bits - 1))."""
    nb = -(-w.k // w.block)      # a last partial block is zero-padded
    if w.zero_points is None:
        return np.full((w.n, nb), 1 << (w.bits - 1), np.float64)
    if w.bits == 8:
        return w.zero_points.reshape(w.n, nb).astype(np.float64)
    zb = w.zero_points.reshape(w.n, -1)
    return np.stack([zb & 0x0F, zb >> 4], axis=-1).reshape(w.n, -1)[:, :nb].astype(np.float64)


def dequantize_nbits(w: NBitsWeight) -> np.ndarray:
    """fp32 [N, K] from the MatMulNBits layout (used by tests to prove the re-pack exact)."""
    bs = w.block
    nb = -(-w.k // bs)           # a last partial block is zero-padded
    if w.bits == 4:
        q = np.stack([w.b & 0x0F, w.b >> 4], axis=-1).reshape(w.n, nb, bs).astype(np.float32)
    else:
        q = w.b.reshape(w.n, nb, bs).astype(np.float32)
    zp = zero_points(w).astype(np.float32)
    out = (q - zp[..., None]) * w.scales.reshape(w.n, nb)[..., None]
    if w.mins is not None:
        out = out + w.mins.T[..., None]
    return out.reshape(w.n, nb * bs)[:, :w.k]


def check_types(tensors) -> None:
    """Raise ModelLoadError (naming what is supported) for a tensor type the builder can
    neither map exactly nor dequantize, before anything is built."""
    bad = set()
    for t in tensors:
        if t.qtype in CONVERTERS or t.qtype in FLOAT_TYPES:
            continue
        try:
            dequantize_gguf(QTensor(t.name, t.qtype, 1, t.cols, np.asarray(t.raw)[:1]))
        except ModelLoadError:
            bad.add(t.qtype)
    if bad:
        raise ModelLoadError(f"GGUF block type(s) {', '.join(sorted(bad))} not supported; the "
                             f"builder maps {', '.join(CONVERTERS)} exactly and reads "
                             f"{', '.join(FLOAT_TYPES)}",
                             hint="re-quantize the model to one of those types")

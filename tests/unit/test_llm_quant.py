"""GGUF blocks -> MatMulNBits layouts are bit-exact (checked against gguf's dequantizer)."""
from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from edge_runtime.models.gguf2onnx.gguf_weights import QTensor, dequantize  # noqa: E402
from edge_runtime.models.gguf2onnx.quant import (concat_rows, dequantize_nbits,  # noqa: E402
                                                  to_nbits)

BLOCK_BYTES = {"Q4_0": 18, "Q4_1": 20, "Q8_0": 34}


def _random_tensor(qtype: str, rows: int, cols: int, seed: int = 0) -> QTensor:
    rng = np.random.default_rng(seed)
    nb = cols // 32
    raw = rng.integers(0, 256, (rows, nb, BLOCK_BYTES[qtype]), dtype=np.uint8)
    # sane fp16 scale (and min) fields so no inf/nan sneaks in
    d = (rng.random((rows, nb)) * 0.05 + 1e-3).astype(np.float16)
    raw[..., 0:2] = d[..., None].view(np.uint8).reshape(rows, nb, 2)
    if qtype == "Q4_1":
        m = (-rng.random((rows, nb)) * 0.3).astype(np.float16)
        raw[..., 2:4] = m[..., None].view(np.uint8).reshape(rows, nb, 2)
    return QTensor("t", qtype, rows, cols, raw.reshape(rows, nb * BLOCK_BYTES[qtype]))


@pytest.mark.parametrize("qtype", ["Q4_0", "Q4_1", "Q8_0"])
def test_repack_is_exact(qtype):
    t = _random_tensor(qtype, 24, 96)
    ref = dequantize(t)
    got = dequantize_nbits(to_nbits(t))
    assert got.shape == ref.shape == (24, 96)
    assert np.allclose(got, ref, rtol=0, atol=1e-6 * np.abs(ref).max())


def test_q4_1_uses_default_zero_point_and_block_offsets():
    w = to_nbits(_random_tensor("Q4_1", 8, 64))
    assert w.bits == 4 and w.zero_points is None
    assert w.b.shape == (8, 2, 16) and w.mins.shape == (2, 8)


def test_fused_rows_stack_in_order():
    a, b = _random_tensor("Q4_1", 8, 64, 1), _random_tensor("Q4_1", 4, 64, 2)
    fused = dequantize_nbits(concat_rows([to_nbits(a), to_nbits(b)]))
    assert np.array_equal(fused, np.concatenate([dequantize_nbits(to_nbits(a)),
                                                 dequantize_nbits(to_nbits(b))]))

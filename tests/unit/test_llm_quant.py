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


ALL_EXACT = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K")


def _gguf_tensor(qtype: str, rows: int, cols: int, seed: int = 0) -> QTensor:
    """A tensor as the gguf package writes it: quantized by gguf.quants.quantize where it
    implements the type, else random K-quant super-blocks with sane scales."""
    from tests.gguf_fixtures import quantized

    raw, _ = quantized(np.random.default_rng(seed), qtype, rows, cols)
    return QTensor("t", qtype, rows, cols, raw)


@pytest.mark.parametrize("qtype", ALL_EXACT)
def test_every_supported_block_type_repacks_exactly(qtype):
    t = _gguf_tensor(qtype, 12, 512)
    ref = np.asarray(gguf.quants.dequantize(t.raw, gguf.GGMLQuantizationType[qtype]),
                     np.float32)
    w = to_nbits(t)
    got = dequantize_nbits(w)
    assert np.abs(ref).max() > 0
    assert np.array_equal(got, ref), np.abs(got - ref).max()
    assert w.max_abs_error == 0.0
    assert (w.bits, w.block) == {"Q4_0": (4, 32), "Q4_1": (4, 32), "Q4_K": (4, 32),
                                 "Q6_K": (8, 16)}.get(qtype, (8, 32))


def test_k_quant_sub_block_minimums_become_block_offsets():
    w = to_nbits(_gguf_tensor("Q4_K", 4, 512))
    assert w.zero_points is None and w.mins.shape == (16, 4)   # 512 / 32 blocks x rows


def test_mixed_block_types_fuse_only_when_formats_agree():
    from edge_runtime.models.gguf2onnx.quant import can_fuse

    q5, q8, q4k = (to_nbits(_gguf_tensor(q, 8, 256, i))
                   for i, q in enumerate(("Q5_0", "Q8_0", "Q4_K")))
    assert can_fuse([q5, q8])          # both 8-bit blocks of 32 with per-block zero points
    assert not can_fuse([q5, q4k])
    fused = dequantize_nbits(concat_rows([q5, q8]))
    assert np.array_equal(fused, np.concatenate([dequantize_nbits(q5), dequantize_nbits(q8)]))


def test_other_types_are_requantized_with_measured_error():
    from edge_runtime.models.gguf2onnx.quant import approx_to_nbits

    t = _gguf_tensor("MXFP4", 8, 256)
    ref = dequantize(t)
    w = approx_to_nbits(t)
    err = np.abs(dequantize_nbits(w) - ref).max()
    assert 0 < err and np.isclose(w.max_abs_error, err, rtol=1e-5)
    assert err <= np.abs(ref).max() / 127 / 2 * 1.01        # half a step of 8-bit blocks


def test_undecodable_block_type_names_what_is_supported():
    from edge_runtime.errors import ModelLoadError
    from edge_runtime.models.gguf2onnx.quant import check_types

    t = QTensor("blk.0.attn_q.weight", "Q8_1", 1, 32, np.zeros((1, 36), np.uint8))
    with pytest.raises(ModelLoadError) as err:
        check_types([t])
    assert "Q8_1" in err.value.message and "Q4_K" in err.value.message


@pytest.mark.parametrize("block", [32, 64])
def test_requantize_4bit_rounds_each_block_to_nearest_with_its_measured_error(block):
    """The tied head's 4-bit copy: Q4_0's rounding per block (the largest magnitude maps to
    -8; 96 columns in blocks of 64 leave a last block half zero padding, as MatMulNBits
    reads it), chunked over rows without changing the result, error as measured."""
    from edge_runtime.models.gguf2onnx.quant import requantize_4bit

    w8 = to_nbits(_random_tensor("Q8_0", 40, 96, seed=3))
    v = dequantize_nbits(w8)
    w4 = requantize_4bit(w8, block, rows=7)
    nb = -(-96 // block)
    assert (w4.bits, w4.block, w4.mins, w4.zero_points) == (4, block, None, None)
    assert w4.b.shape == (40, nb, block // 2) and w4.scales.shape == (40 * nb,)
    got = dequantize_nbits(w4)
    assert got.shape == (40, 96)
    blocks = np.pad(v, ((0, 0), (0, nb * block - 96))).reshape(40, nb, block)
    peak = np.take_along_axis(blocks, np.abs(blocks).argmax(-1)[..., None], -1)
    d = peak / -8.0
    want = ((np.clip(np.rint(blocks / d) + 8, 0, 15) - 8) * d).reshape(40, -1)[:, :96]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    err = np.abs(got - v)
    assert w4.max_abs_error == pytest.approx(err.max(), rel=1e-6) and err.max() > 0
    # half a step, or one step where the side opposite the peak is clipped (7 steps, not 8)
    step = np.repeat(np.abs(d[..., 0]), block, axis=1)[:, :96]
    assert np.all(err <= step * (1 + 1e-6))
    assert requantize_4bit(w8, block, rows=40).b.tobytes() == w4.b.tobytes()


def test_a_padded_4bit_copy_runs_in_matmulnbits_as_dequantized():
    """192 columns in blocks of 128 end in a half-padded block (as SmolLM2's 576 do):
    onnxruntime's MatMulNBits (accuracy level 1) gives x @ the dequantized copy."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from edge_runtime.models.gguf2onnx.quant import requantize_4bit

    w4 = requantize_4bit(to_nbits(_random_tensor("Q8_0", 24, 192, seed=5)), 128)
    node = helper.make_node("MatMulNBits", ["x", "B", "s"], ["y"], domain="com.microsoft",
                            K=192, N=24, bits=4, block_size=128, accuracy_level=1)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 192])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 24])],
        [numpy_helper.from_array(w4.b, "B"), numpy_helper.from_array(w4.scales, "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((2, 192)).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], x @ dequantize_nbits(w4).T,
                               rtol=1e-4, atol=1e-4)

"""The folded build (gguf2onnx ``fold_offsets``): a block form ``s * q + m`` as one
MatMulNBits over ``[x, block means of x]``, its offsets' whole steps as integer zero points
and the rest as extra weight rows. Checked against the exact blocks: the weights within the
error the fold reports, onnxruntime's node on the dequantized weights, tiny random models
against the exact build."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("gguf")
onnx = pytest.importorskip("onnx")

from edge_runtime.models.gguf2onnx.quant import (dequantize_nbits, fold_offsets,  # noqa: E402
                                                  to_nbits)
from tests.gguf_fixtures import build_variants  # noqa: E402
from tests.unit.test_llm_quant import _gguf_tensor  # noqa: E402

IDS = list(range(5, 37))
OFFSET_TYPES = ("Q4_1", "Q5_1", "Q4_K", "Q5_K")


def _means(x: np.ndarray, block: int) -> np.ndarray:
    return x.reshape(*x.shape[:-1], -1, block).mean(axis=-1)


@pytest.mark.parametrize("qtype", OFFSET_TYPES)
@pytest.mark.parametrize("means", [False, True])
def test_folded_weight_is_the_exact_one_within_its_reported_error(qtype, means):
    w = to_nbits(_gguf_tensor(qtype, 16, 512, seed=3))
    assert w.mins is not None
    f = fold_offsets(w, means=means)
    nb = w.k // w.block
    assert (f.k, f.n, f.bits, f.block, f.mins) == (w.k + nb, w.n, w.bits, w.block, None)
    # the codes are the GGUF's own; only zero points, the extra rows and their scales are new
    assert np.array_equal(f.b[:, :nb], w.b)
    exact, folded = dequantize_nbits(w), dequantize_nbits(f)
    assert folded.shape == (w.n, w.k + nb)
    x = np.random.default_rng(0).standard_normal((3, w.k)).astype(np.float64)
    extra = _means(x, w.block) if means else x.reshape(3, nb, w.block).sum(-1)
    got = np.concatenate([x, extra], axis=1) @ folded.T.astype(np.float64)
    want = x @ exact.T.astype(np.float64)
    # each weight is off by at most the reported error, the same for a whole block
    bound = f.max_abs_error * np.abs(x).sum(axis=1, keepdims=True) + 1e-4
    assert (np.abs(got - want) <= bound).all()
    assert 0 < f.max_abs_error
    # what the zero points leave, rounded to half of one of 2^bits - 1 steps of its range
    r = _residuals(w)
    top = 2 ** w.bits - 1
    assert f.max_abs_error <= (max(r.max(), 0) - min(r.min(), 0)) / (2 * top) * (1 + 1e-3)
    if qtype in ("Q4_1", "Q5_1"):   # quantized from real numbers: every offset in range, so
        d = w.scales.reshape(w.n, nb)   # the residuals are at most half a step
        assert np.abs(r).max() <= d.max() / 2 * (1 + 1e-6)


def _residuals(w) -> np.ndarray:
    """[N, n_blocks] the block offsets minus their whole steps (what fold_offsets folds)."""
    nb, top = w.k // w.block, 2 ** w.bits - 1
    d = w.scales.reshape(w.n, nb).astype(np.float64)
    if w.zero_points is None:
        z0 = np.full(d.shape, 2.0 ** (w.bits - 1))
    else:
        z0 = w.zero_points.reshape(w.n, nb).astype(np.float64)   # 8-bit: one a byte
    m = w.mins.T.astype(np.float64) - z0 * d
    return m + np.clip(np.rint(-m / np.where(d == 0, 1.0, d)), 0, top) * d


def test_zero_points_take_the_offsets_whole_steps():
    w = to_nbits(_gguf_tensor("Q4_1", 8, 256, seed=1))
    f = fold_offsets(w)
    nb = w.k // w.block
    zb = f.zero_points.reshape(w.n, -1)
    z = np.stack([zb & 0x0F, zb >> 4], axis=-1).reshape(w.n, -1)[:, :nb].astype(np.float64)
    d = w.scales.reshape(w.n, nb).astype(np.float64)
    m = w.mins.T.astype(np.float64) - 8 * d            # the GGUF's offsets
    assert ((-m / d >= -0.5) & (-m / d <= 15.5)).all()   # gguf's Q4_1: min <= 0 <= max
    assert np.array_equal(z, np.rint(-m / d))
    # what is left for the extra rows: at most half a step
    assert (np.abs(m + z * d) <= d / 2 * (1 + 1e-6)).all()


def test_a_weight_without_offsets_is_not_folded():
    with pytest.raises(ValueError, match="offsets"):
        fold_offsets(to_nbits(_gguf_tensor("Q4_0", 4, 64)))


def test_onnxruntime_runs_the_folded_node_on_x_and_its_block_means():
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    w = to_nbits(_gguf_tensor("Q4_1", 24, 192, seed=7))
    f = fold_offsets(w, means=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 192])
    nodes = [helper.make_node("AveragePool", ["x"], ["m"], kernel_shape=[32], strides=[32]),
             helper.make_node("Concat", ["x", "m"], ["xm"], axis=-1),
             helper.make_node("MatMulNBits", ["xm", "B", "s", "z"], ["y"],
                              domain="com.microsoft", K=f.k, N=f.n, bits=4, block_size=32,
                              accuracy_level=1)]
    graph = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, [1, 2, 24])], [numpy_helper.from_array(f.b, "B"),
                                              numpy_helper.from_array(f.scales, "s"),
                                              numpy_helper.from_array(f.zero_points, "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    xv = np.random.default_rng(1).standard_normal((1, 2, 192)).astype(np.float32)
    want = xv @ dequantize_nbits(w).T
    got = sess.run(None, {"x": xv})[0]
    assert np.abs(got - want).max() <= f.max_abs_error * np.abs(xv).sum(-1).max() + 1e-3


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    return build_variants(tmp_path_factory.mktemp("fold"), {
        "exact": {}, "fold": {"fold_offsets": True},
        "int8": {"int8_ffn": True, "int8_attention": True, "fold_offsets": True},
        "ffn8": {"int8_ffn": True, "fold_offsets": True}})


def _graph(d):
    return onnx.load(str(d / "model.onnx"), load_external_data=False).graph


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_folded_build_has_one_node_per_projection(builds, arch):
    cfg = json.loads((builds[arch, "fold"] / "model_config.json").read_text())
    layers = cfg["num_layers"]
    assert cfg["fold_offsets"] is True and cfg["int8_ffn"] is False
    g = _graph(builds[arch, "fold"])
    ops = [n.op_type for n in g.node]
    # every projection the exact build corrects (QKV, attention output, gate/up and down
    # of each layer, and this fixture's untied head) is one node, with its means
    corrected = _offsets(builds[arch, "exact"])
    assert len(corrected) >= 4 * layers
    assert cfg["folded_projections"] == len(corrected) == ops.count("AveragePool")
    assert ops.count("MatMulNBits") == [n.op_type for n in _graph(
        builds[arch, "exact"]).node].count("MatMulNBits")
    assert not _offsets(builds[arch, "fold"])
    assert "AveragePool" not in [n.op_type for n in _graph(builds[arch, "exact"]).node]
    assert json.loads((builds[arch, "exact"] / "model_config.json").read_text())[
        "fold_offsets"] is False


def _offsets(d) -> list[str]:
    """The exact form's correction matrices of a build's projections (the embedding's
    rows are a Gather, with their own offsets)."""
    return [t.name for t in _graph(d).initializer
            if t.name.endswith(".offsets") and not t.name.startswith("embed.")]


def test_with_the_int8_projections_only_the_down_projection_folds(builds):
    cfg = json.loads((builds["llama", "int8"] / "model_config.json").read_text())
    kept = [n for n in _offsets(builds["llama", "exact"]) if "ffn_down" in n or "lm_head" in n]
    assert cfg["int8_ffn"] is True and cfg["folded_projections"] == len(kept)
    assert len(kept) >= cfg["num_layers"]
    assert [n.op_type for n in _graph(builds["llama", "int8"]).node].count(
        "DynamicQuantizeMatMul") == 3 * cfg["num_layers"]


def test_with_the_int8_ffn_alone_every_other_projection_folds(builds):
    """SmolLM2's shipped build: the FFN gate/up int8, QKV, attention output, down (and this
    fixture's untied head) each one folded MatMulNBits."""
    cfg = json.loads((builds["llama", "ffn8"] / "model_config.json").read_text())
    kept = [n for n in _offsets(builds["llama", "exact"]) if "ffn_gate_up" not in n]
    assert cfg["int8_ffn"] is True and cfg["int8_attention"] is False
    assert cfg["folded_projections"] == len(kept) >= 3 * cfg["num_layers"]
    ops = [n.op_type for n in _graph(builds["llama", "ffn8"]).node]
    assert ops.count("DynamicQuantizeMatMul") == cfg["num_layers"]
    assert not _offsets(builds["llama", "ffn8"])


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_folded_build_follows_the_exact_build(builds, arch):
    from edge_runtime.models.gguf2onnx.reference import onnx_logits

    a = onnx_logits(builds[arch, "exact"], IDS)
    b = onnx_logits(builds[arch, "fold"], IDS)
    assert not np.array_equal(a, b)
    # within 10 % (the K-quant fixture's random minimums often lie outside their block's
    # range: larger residuals than a real model's)
    err = np.abs(a - b).max()
    assert err < 0.1 * np.abs(a).max()
    # the same next token wherever the exact build's top two are further apart than twice
    # the largest error (a tiny random model's logits are often near-tied)
    top2 = np.sort(a, axis=-1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * err
    assert clear.sum() >= 4
    assert np.array_equal(a.argmax(-1)[clear], b.argmax(-1)[clear])
    assert np.mean(a.argmax(-1) == b.argmax(-1)) >= 0.75


def test_fp16_variant_keeps_the_exact_form(builds, tmp_path):
    from edge_runtime.models.gguf2onnx.build import build_llm
    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf
    from edge_runtime.models.gguf2onnx.graph import build_graph

    with pytest.raises(ValueError, match="fp16"):
        build_graph(read_gguf(builds["llama", "gguf"]), precision="fp16", fold_offsets=True)
    info = build_llm(builds["llama", "gguf"], tmp_path / "fp16", precision="fp16",
                     fold_offsets=True)
    assert info["fold_offsets"] is False
    assert "AveragePool" not in [n.op_type for n in _graph(tmp_path / "fp16").node]

"""benchmarks.nbits_floor: one 4-bit MatMulNBits per projection of a build (its K and N, the
int8 GEMMs' too), checked against numpy, and the three timings of a tiny build."""
from __future__ import annotations

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("gguf")

from tests.gguf_fixtures import build_variants  # noqa: E402


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    return build_variants(tmp_path_factory.mktemp("floor"), {
        "int8": {"int8_ffn": True},
        "steps": {"int8_ffn": True, "fold_offsets": True, "fold_steps": True}},
        archs=(("llama", "Q4_1"),))


@pytest.fixture(scope="module")
def built(builds):
    return builds["llama", "int8"]


def test_every_projection_of_the_build_becomes_one_kernel(built, tmp_path):
    from benchmarks.nbits_floor import kernel_graph, projections

    cfg = json.loads((built / "model_config.json").read_text())
    ops = [n.op_type for n in onnx.load(str(built / "model.onnx"),
                                        load_external_data=False).graph.node]
    shapes = projections(built)
    assert len(shapes) == ops.count("MatMulNBits") + ops.count("DynamicQuantizeMatMul")
    assert ops.count("DynamicQuantizeMatMul") == cfg["num_layers"]     # the int8 gate/up
    assert (cfg["hidden_size"], cfg["vocab_size"]) in shapes            # the output head
    names = kernel_graph(shapes, tmp_path / "floor.onnx")
    g = onnx.load(str(tmp_path / "floor.onnx"), load_external_data=False).graph
    assert [n.op_type for n in g.node] == ["MatMulNBits"] * len(shapes)
    assert sorted(names) == sorted({f"x{k}" for k, _ in shapes})


def test_a_fold_steps_build_gives_its_decode_steps_projections(builds):
    """The blocks of a fold_steps build sit in If nodes: the floor takes the one-row branch's
    projections (the 4-bit gate/up, not the prefill's int8 GEMMs), each block's once."""
    from benchmarks.nbits_floor import projections

    stepped, int8 = builds["llama", "steps"], builds["llama", "int8"]
    cfg = json.loads((stepped / "model_config.json").read_text())
    top = [n.op_type for n in onnx.load(str(stepped / "model.onnx"),
                                        load_external_data=False).graph.node]
    assert "If" in top and top.count("MatMulNBits") < cfg["num_layers"]
    step, base = projections(stepped), projections(int8)
    assert [n for _, n in step] == [n for _, n in base]
    # the step branch's projections are folded (the gate/up too, an int8 GEMM in the other
    # build): K gains a row per block of 32, the offsets' remainder
    folded = [(k, kb) for (k, _), (kb, _) in zip(step, base, strict=True) if k != kb]
    assert len(folded) >= 4 * cfg["num_layers"]
    assert all(k == kb + kb // 32 for k, kb in folded)


def test_a_kernel_computes_its_product(tmp_path):
    """The random blocks are a real 4-bit matrix: onnxruntime's output is x @ W."""
    import onnxruntime as ort

    from benchmarks.matmul_kernels import BLOCK
    from benchmarks.nbits_floor import kernel_graph

    kernel_graph([(64, 8)], tmp_path / "one.onnx", seed=3)
    m = onnx.load(str(tmp_path / "one.onnx"))
    init = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    q = init["B0"]                                           # [N, blocks, BLOCK / 2]
    codes = np.stack([q & 0x0F, q >> 4], -1).reshape(8, -1, BLOCK).astype(np.float32)
    zp = init["Z0"].reshape(8, -1)                            # two blocks per byte
    z = np.stack([zp & 0x0F, zp >> 4], -1).reshape(8, -1)[:, :codes.shape[1]]
    w = ((codes - z[..., None]) * init["S0"].reshape(8, -1, 1)).reshape(8, -1)
    x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
    got = ort.InferenceSession(str(tmp_path / "one.onnx"),
                               providers=["CPUExecutionProvider"]).run(None, {"x64": x})[0]
    # accuracy level 4 quantizes x to int8 per block
    assert np.allclose(got, x @ w.T, atol=0.02 * np.abs(x @ w.T).max() + 1e-3)


def test_measure_reports_the_three_timings(built, capsys):
    from benchmarks.nbits_floor import main

    assert main(["--model-dir", str(built), "--steps", "3", "--rounds", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("kernels_1_thread", "kernels_2_threads", "model_step_2_threads"):
        assert out[key] > 0
    assert out["projections"] >= 4 * json.loads(
        (built / "model_config.json").read_text())["num_layers"]
    assert main(["--model-dir", str(built.parent / "none")]) == 2

"""The int8 FFN build (gguf2onnx.graph): the FFN gate/up projections as smoothed int8 GEMMs
(DynamicQuantizeMatMul), calibrated on the numpy reference. Checked on tiny random GGUFs
against the exact build and the reference; the fp16 variant keeps the blocks."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("gguf")
onnx = pytest.importorskip("onnx")

from tests.gguf_fixtures import build_variants  # noqa: E402

IDS = list(range(5, 37))


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    return build_variants(tmp_path_factory.mktemp("int8ffn"),
                          {int8: {"int8_ffn": int8} for int8 in (False, True)})


def _ops(d) -> list[str]:
    proto = onnx.load(str(d / "model.onnx"), load_external_data=False)
    return [n.op_type for n in proto.graph.node]


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_int8_ffn_graph(builds, arch):
    cfg = json.loads((builds[arch, True] / "model_config.json").read_text())
    assert cfg["int8_ffn"] is True
    assert json.loads((builds[arch, False] / "model_config.json").read_text())["int8_ffn"] is False
    ops, exact = _ops(builds[arch, True]), _ops(builds[arch, False])
    layers = cfg["num_layers"]
    assert ops.count("DynamicQuantizeMatMul") == layers    # gate and up in one, then a Split
    assert "DynamicQuantizeMatMul" not in exact
    # the gate/up MatMulNBits (one fused node per layer) is gone, its Split kept
    assert exact.count("MatMulNBits") - ops.count("MatMulNBits") == layers
    assert exact.count("Split") == ops.count("Split")
    inits = {t.name for t in onnx.load(str(builds[arch, True] / "model.onnx"),
                                       load_external_data=False).graph.initializer}
    assert {f"blk.{i}.ffn_norm.weight.smoothed" for i in range(cfg["num_layers"])} <= inits


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_int8_ffn_follows_the_exact_build(builds, arch):
    from edge_runtime.models.gguf2onnx.reference import onnx_logits

    a = onnx_logits(builds[arch, False], IDS)
    b = onnx_logits(builds[arch, True], IDS)
    assert not np.array_equal(a, b)              # it is a different computation ...
    assert np.abs(a - b).max() < 0.05 * np.abs(a).max()   # ... close to the blocks
    assert np.mean(a.argmax(-1) == b.argmax(-1)) >= 0.9


def test_smoothing_is_exact_before_rounding(builds):
    """The divisors go into the norm weight and the multipliers into the weight columns:
    un-smoothing the int8 weights gives the GGUF weights back within the reported error."""
    from edge_runtime.models.gguf2onnx.gguf_weights import dequantize, read_gguf
    from edge_runtime.models.gguf2onnx.graph import _Builder
    from edge_runtime.models.gguf2onnx.reference import ffn_input_ranges

    model = read_gguf(builds["llama", "gguf"])
    ranges = ffn_input_ranges(model, IDS)
    assert sorted(ranges) == list(range(model.hparams.n_layers))
    assert all(r.shape == (model.hparams.hidden,) and (r >= 0).all() for r in ranges.values())
    b = _Builder(model, 4, 4, ffn_ranges=ranges)
    smooth, q, col = b.int8_gate_up(0)
    w = np.concatenate([dequantize(model.tensors[f"blk.0.ffn_{n}.weight"]) for n in ("gate", "up")])
    back = q.T.astype(np.float32) * col[:, None] / smooth[None, :]
    assert q.dtype == np.int8 and np.abs(q).max() == 127
    assert np.abs(back - w).max() == pytest.approx(b.int8_ffn["blk.0.ffn_gate_up"], rel=1e-5)
    # every weight is off by at most half a step of its column, un-smoothed
    bound = 0.5 * col[:, None] / smooth[None, :] * (1 + 1e-4) + 1e-7
    assert (np.abs(back - w) <= bound).all()


def test_reference_embeds_only_the_rows_it_needs(builds):
    from edge_runtime.models.gguf2onnx.gguf_weights import dequantize, read_gguf
    from edge_runtime.models.gguf2onnx.reference import _embed_rows

    t = read_gguf(builds["gemma3", "gguf"]).tensors["token_embd.weight"]
    ids = [7, 3, 7, 30]
    assert np.array_equal(_embed_rows(t, ids), dequantize(t)[ids])


def test_fp16_variant_keeps_the_blocks(builds, tmp_path):
    from edge_runtime.models.gguf2onnx.build import build_llm
    from edge_runtime.models.gguf2onnx.graph import build_graph
    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf

    d = tmp_path / "fp16"
    build_llm(builds["llama", "gguf"], d, precision="fp16", int8_ffn=True)
    assert json.loads((d / "model_config.json").read_text())["int8_ffn"] is False
    assert "DynamicQuantizeMatMul" not in _ops(d)
    with pytest.raises(ValueError, match="fp16"):
        build_graph(read_gguf(builds["llama", "gguf"]), precision="fp16", ffn_ranges={})


def test_manifest_int8_ffn_must_be_a_bool(tmp_path):
    from edge_runtime.errors import ConfigError
    from edge_runtime.models.store import REPO_MANIFEST, load_manifest, load_manifest_text

    shipped = load_manifest(REPO_MANIFEST)
    assert shipped["gemma3-270m"].int8_ffn is shipped["smollm2-135m-instruct"].int8_ffn is True
    text = ('[[model]]\nname = "m"\nrole = "llm"\nlicence = "x"\npypi = "m==1"\n'
            'build = "gguf2onnx"\n{}[[model.files]]\npath = "m.gguf"\nsha256 = "00"\n')
    m = tmp_path / "manifest.toml"
    assert load_manifest_text(text.format(""), m)["m"].int8_ffn is False   # models add's entries
    with pytest.raises(ConfigError, match="int8_ffn must be true or false"):
        load_manifest_text(text.format('int8_ffn = "yes"\n'), m)

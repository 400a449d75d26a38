"""The int8 build (gguf2onnx.graph): the FFN gate/up (``int8_ffn``), attention QKV and
attention output (``int8_attention``) projections as smoothed int8 GEMMs
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
BOTH = {"int8_ffn": True, "int8_attention": True}


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    return build_variants(tmp_path_factory.mktemp("int8ffn"),
                          {False: {}, True: BOTH, "ffn": {"int8_ffn": True},
                           "attn": {"int8_attention": True}})


def _ops(d) -> list[str]:
    proto = onnx.load(str(d / "model.onnx"), load_external_data=False)
    return [n.op_type for n in proto.graph.node]


def _nbits_weights(d) -> list[str]:
    proto = onnx.load(str(d / "model.onnx"), load_external_data=False)
    return [n.input[1] for n in proto.graph.node if n.op_type == "MatMulNBits"]


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_int8_ffn_graph(builds, arch):
    cfg = json.loads((builds[arch, True] / "model_config.json").read_text())
    assert cfg["int8_ffn"] is True and cfg["int8_attention"] is True
    exact_cfg = json.loads((builds[arch, False] / "model_config.json").read_text())
    assert exact_cfg["int8_ffn"] is False and exact_cfg["int8_attention"] is False
    ops, exact = _ops(builds[arch, True]), _ops(builds[arch, False])
    layers = cfg["num_layers"]
    # per layer one for gate and up (then a Split), one for Q, K and V together and one for
    # the attention output
    assert ops.count("DynamicQuantizeMatMul") == 3 * layers
    assert "DynamicQuantizeMatMul" not in exact
    # what stays in blocks: the down projection and the head
    kept = {w.split(".")[2] if w.startswith("blk.") else w.split(".")[0]
            for w in _nbits_weights(builds[arch, True])}
    assert kept == {"ffn_down", "lm_head"}
    assert {"attn_qkv", "ffn_gate_up", "attn_output"} <= {
        w.split(".")[2] for w in _nbits_weights(builds[arch, False]) if w.startswith("blk.")}
    assert exact.count("Split") == ops.count("Split")
    inits = {t.name for t in onnx.load(str(builds[arch, True] / "model.onnx"),
                                       load_external_data=False).graph.initializer}
    assert {f"blk.{i}.{n}_norm.weight.smoothed" for i in range(layers)
            for n in ("ffn", "attn")} <= inits


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
@pytest.mark.parametrize(("key", "int8", "blocks"), [
    ("ffn", {"ffn_gate_up"}, {"attn_qkv", "attn_output", "ffn_down", "lm_head"}),
    ("attn", {"attn_qkv", "attn_output"}, {"ffn_gate_up", "ffn_down", "lm_head"})])
def test_each_option_makes_its_own_projections_int8(builds, arch, key, int8, blocks):
    d = builds[arch, key]
    cfg = json.loads((d / "model_config.json").read_text())
    assert (cfg["int8_ffn"], cfg["int8_attention"]) == (key == "ffn", key == "attn")
    assert _ops(d).count("DynamicQuantizeMatMul") == len(int8) * cfg["num_layers"]
    kept = {w.split(".")[2] if w.startswith("blk.") else w.split(".")[0]
            for w in _nbits_weights(d)}
    assert kept == blocks
    inits = {t.name for t in onnx.load(str(d / "model.onnx"), load_external_data=False
                                       ).graph.initializer}
    smoothed = {n.split(".")[2] for n in inits if n.endswith("_norm.weight.smoothed")}
    assert smoothed == ({"ffn_norm"} if key == "ffn" else {"attn_norm"})


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
@pytest.mark.parametrize("key", ["ffn", "attn"])
def test_each_option_alone_follows_the_exact_build(builds, arch, key):
    from edge_runtime.models.gguf2onnx.reference import onnx_logits

    a, b = onnx_logits(builds[arch, False], IDS), onnx_logits(builds[arch, key], IDS)
    assert not np.array_equal(a, b)
    assert np.abs(a - b).max() < 0.05 * np.abs(a).max()
    assert np.mean(a.argmax(-1) == b.argmax(-1)) >= 0.9


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_int8_ffn_follows_the_exact_build(builds, arch):
    from edge_runtime.models.gguf2onnx.reference import onnx_logits

    a = onnx_logits(builds[arch, False], IDS)
    b = onnx_logits(builds[arch, True], IDS)
    assert not np.array_equal(a, b)              # it is a different computation ...
    assert np.abs(a - b).max() < 0.05 * np.abs(a).max()   # ... close to the blocks
    assert np.mean(a.argmax(-1) == b.argmax(-1)) >= 0.9


@pytest.mark.parametrize("arch", ["qwen2", "qwen3", "phi3"])
def test_int8_qkv_with_bias_norms_or_one_fused_weight(tmp_path, arch):
    """QKV biases (qwen2) are added after the int8 GEMM, q/k norms (qwen3) follow its
    Split, phi3's one attn_qkv weight becomes one int8 GEMM: each stays close to the blocks."""
    from edge_runtime.models.gguf2onnx.reference import onnx_logits

    b = build_variants(tmp_path, {False: {}, True: BOTH}, archs=((arch, "Q4_1"),))
    assert _ops(b[arch, True]).count("DynamicQuantizeMatMul") == 3 * json.loads(
        (b[arch, True] / "model_config.json").read_text())["num_layers"]
    a, q = onnx_logits(b[arch, False], IDS), onnx_logits(b[arch, True], IDS)
    assert not np.array_equal(a, q)
    # within 10 % (qwen3's k_norm rescales the tiny random keys: 5.1 % here, the others < 5)
    err = np.abs(a - q).max()
    assert err < 0.1 * np.abs(a).max()
    # the same next token wherever the exact build's top two are further apart than twice
    # the largest error (a tiny random model's logits are often near-tied: qwen3 28 of 32)
    top2 = np.sort(a, axis=-1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * err
    assert clear.sum() >= len(IDS) // 4
    assert np.array_equal(a.argmax(-1)[clear], q.argmax(-1)[clear])
    assert np.mean(a.argmax(-1) == q.argmax(-1)) >= 0.85


def test_smoothing_is_exact_before_rounding(builds):
    """The divisors go into the norm weight and the multipliers into the weight columns:
    un-smoothing the int8 weights gives the GGUF weights back within the reported error."""
    from edge_runtime.models.gguf2onnx.gguf_weights import dequantize, read_gguf
    from edge_runtime.models.gguf2onnx.graph import _Builder
    from edge_runtime.models.gguf2onnx.reference import ffn_input_ranges

    model = read_gguf(builds["llama", "gguf"])
    attn: dict = {}
    ranges = ffn_input_ranges(model, IDS, attn=attn)
    for r in (ranges, attn):
        assert sorted(r) == list(range(model.hparams.n_layers))
        assert all(v.shape == (model.hparams.hidden,) and (v >= 0).all() for v in r.values())
    assert not np.array_equal(ranges[0], attn[0])
    b = _Builder(model, 4, 4, ffn_ranges=ranges, attn_ranges=attn)
    for kind, names, rng in (("ffn_gate_up", ("ffn_gate", "ffn_up"), ranges[0]),
                             ("attn_qkv", ("attn_q", "attn_k", "attn_v"), attn[0])):
        key = f"blk.0.{kind}"
        smooth, q, col = b.int8_weights([f"blk.0.{n}.weight" for n in names], rng, key)
        w = np.concatenate([dequantize(model.tensors[f"blk.0.{n}.weight"]) for n in names])
        back = q.T.astype(np.float32) * col[:, None] / smooth[None, :]
        assert q.dtype == np.int8 and np.abs(q).max() == 127
        assert np.abs(back - w).max() == pytest.approx(b.int8_ffn[key], rel=1e-5)
        # every weight is off by at most half a step of its column, un-smoothed
        bound = 0.5 * col[:, None] / smooth[None, :] * (1 + 1e-4) + 1e-7
        assert (np.abs(back - w) <= bound).all()


def test_output_smoothing_moves_into_v_exactly(builds):
    """The attention output's input channels are V's channels weighted per head: dividing V's
    output rows by s and multiplying the output weight's columns by s (one value per kv head
    and dim, shared by the heads of a group) leaves V @ W_o unchanged in real numbers, and the
    int8 weights round that within half a step per column."""
    from edge_runtime.models.gguf2onnx.gguf_weights import dequantize, read_gguf
    from edge_runtime.models.gguf2onnx.graph import _Builder
    from edge_runtime.models.gguf2onnx.reference import ffn_input_ranges

    model = read_gguf(builds["gemma3", "gguf"])
    hp = model.hparams
    attn: dict = {}
    out: dict = {}
    ranges = ffn_input_ranges(model, IDS, attn=attn, out=out)
    assert sorted(out) == list(range(hp.n_layers))
    assert all(v.shape == (hp.n_heads * hp.head_dim,) and (v > 0).all() for v in out.values())
    b = _Builder(model, 4, 4, ffn_ranges=ranges, attn_ranges=attn, out_ranges=out)
    mult, div = b.out_smoothing(0)
    group = hp.n_heads // hp.n_kv_heads
    assert group > 1 and div.shape == (hp.n_kv_heads * hp.head_dim,)
    assert np.array_equal(mult.reshape(hp.n_kv_heads, group, hp.head_dim),
                          np.repeat(div.reshape(hp.n_kv_heads, 1, hp.head_dim), group, axis=1))
    assert not np.allclose(div, div[0])
    smooth, q, col = b.int8_weights(["blk.0.attn_output.weight"], None, "o", smooth=mult)
    assert np.array_equal(smooth, mult)
    w = dequantize(model.tensors["blk.0.attn_output.weight"])
    back = q.T.astype(np.float32) * col[:, None] / smooth[None, :]
    assert np.abs(back - w).max() <= (0.5 * col[:, None] / smooth[None, :]).max() * 1.0001
    # V's rows divided: the int8 values are those of the plain weights, the column scales / s
    rows = np.ones(q.shape[0], np.float32)   # any [N] divisor: here the identity for o itself
    _, q2, col2 = b.int8_weights(["blk.0.attn_output.weight"], None, "o2", smooth=mult,
                                 row_div=rows * 2.0)
    assert np.array_equal(q2, q) and np.allclose(col2, col / 2.0)
    assert b.int8_ffn["o2"] == pytest.approx(b.int8_ffn["o"], rel=1e-5)


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
    build_llm(builds["llama", "gguf"], d, precision="fp16", **BOTH)
    cfg = json.loads((d / "model_config.json").read_text())
    assert cfg["int8_ffn"] is False and cfg["int8_attention"] is False
    assert "DynamicQuantizeMatMul" not in _ops(d)
    for ranges in ("ffn_ranges", "attn_ranges"):
        with pytest.raises(ValueError, match="fp16"):
            build_graph(read_gguf(builds["llama", "gguf"]), precision="fp16", **{ranges: {}})


@pytest.mark.parametrize("key", ["int8_ffn", "int8_attention", "fold_offsets", "fold_steps"])
def test_manifest_build_options_must_be_bools(tmp_path, key):
    from edge_runtime.errors import ConfigError
    from edge_runtime.models.store import REPO_MANIFEST, load_manifest, load_manifest_text

    shipped = load_manifest(REPO_MANIFEST)
    assert shipped["gemma3-270m"].build_options == {
        "int8_ffn": True, "int8_attention": True, "fold_offsets": False, "fold_steps": False}
    # SmolLM2's int8 attention cost it top-1 on longer text (README): the FFN alone, folded,
    # and its decode steps read the gate/up's own blocks
    assert shipped["smollm2-135m-instruct"].build_options == {
        "int8_ffn": True, "int8_attention": False, "fold_offsets": True, "fold_steps": True}
    text = ('[[model]]\nname = "m"\nrole = "llm"\nlicence = "x"\npypi = "m==1"\n'
            'build = "gguf2onnx"\n{}[[model.files]]\npath = "m.gguf"\nsha256 = "00"\n')
    m = tmp_path / "manifest.toml"
    # models add's entries: the exact blocks
    assert load_manifest_text(text.format(""), m)["m"].build_options == {
        "int8_ffn": False, "int8_attention": False, "fold_offsets": False, "fold_steps": False}
    needs = "int8_ffn = true\n" if key == "fold_steps" else ""
    assert getattr(load_manifest_text(text.format(f"{needs}{key} = true\n"), m)["m"],
                   key) is True
    with pytest.raises(ConfigError, match=f"{key} must be true or false"):
        load_manifest_text(text.format(f'{key} = "yes"\n'), m)

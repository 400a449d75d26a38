"""edge-runtime's decode-step kernels, compiled here (``models build`` does it on a device):
DecodeAttention against onnxruntime's own GroupQueryAttention, GatedMeans against numpy, bad
input as onnxruntime errors naming the problem, and the real SmolLM2 model's step-ops graph
against the fp32 reference."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from onnx import TensorProto as T  # noqa: E402
from onnx import helper  # noqa: E402

from edge_runtime.config import load_config  # noqa: E402
from tests.llm_fixtures import llm_gguf, llm_model_dir  # noqa: E402,F401  (fixtures)


@pytest.fixture(scope="module")
def library() -> Path:
    from edge_runtime.llm.step_ops import build_library

    if not shutil.which("cc"):
        pytest.skip("no C compiler (cc): the step ops cannot be built on this machine")
    return build_library(load_config().paths.resolved_home())


def _session(nodes, inputs, outputs, lib: Path | None, threads: int = 2):
    ops = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1),
           helper.make_opsetid("edge_runtime", 1)]
    g = helper.make_graph(nodes, "g", inputs, outputs)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    if lib is not None:
        so.register_custom_ops_library(str(lib))
    return ort.InferenceSession(helper.make_model(g, opset_imports=ops).SerializeToString(),
                                so, providers=["CPUExecutionProvider"])


def _attention(lib, H, KV, D, M, interleaved, ours: bool, means_block: int = 0):
    B = 2
    ins = [helper.make_tensor_value_info("qkv", T.FLOAT, [B, 1, (H + 2 * KV) * D]),
           helper.make_tensor_value_info("pk", T.FLOAT, [B, KV, M, D]),
           helper.make_tensor_value_info("pv", T.FLOAT, [B, KV, M, D]),
           helper.make_tensor_value_info("sl", T.INT32, [B]),
           helper.make_tensor_value_info("cos", T.FLOAT, [M, D // 2]),
           helper.make_tensor_value_info("sin", T.FLOAT, [M, D // 2]),
           helper.make_tensor_value_info("pos", T.INT64, [B, 1])]
    outs = [helper.make_tensor_value_info(n, T.FLOAT, None) for n in ("o", "k", "v")]
    attrs = {"num_heads": H, "kv_num_heads": KV, "rotary_interleaved": interleaved,
             "scale": 1 / np.sqrt(D)}
    if ours:
        node = helper.make_node("DecodeAttention", ["qkv", "pk", "pv", "sl", "cos", "sin", "pos"],
                                ["o", "k", "v"], domain="edge_runtime", **attrs,
                                **({"means_block": means_block} if means_block else {}))
        return _session([node], ins, outs, lib)
    ins.insert(4, helper.make_tensor_value_info("tl", T.INT32, []))
    node = helper.make_node("GroupQueryAttention",
                            ["qkv", "", "", "pk", "pv", "sl", "tl", "cos", "sin", "pos"],
                            ["o", "k", "v"], domain="com.microsoft", do_rotary=1,
                            local_window_size=-1, **attrs)
    return _session([node], ins, outs, None)


def _feeds(rng, H, KV, D, M, lengths):
    B = len(lengths)
    ang = np.arange(M)[:, None] * 10000.0 ** (-np.arange(D // 2) / (D // 2))[None]
    return {"qkv": rng.standard_normal((B, 1, (H + 2 * KV) * D)).astype(np.float32) * 2,
            "pk": rng.standard_normal((B, KV, M, D)).astype(np.float32),
            "pv": rng.standard_normal((B, KV, M, D)).astype(np.float32),
            "sl": np.array(lengths, np.int32),
            "cos": np.cos(ang).astype(np.float32), "sin": np.sin(ang).astype(np.float32),
            "pos": (np.array(lengths, np.int64)[:, None] + 3) % M}   # positions need not be rows


@pytest.mark.parametrize("H, KV, D, interleaved", [
    (9, 3, 64, 1),      # SmolLM2-135M
    (4, 1, 128, 0),     # one KV head, a wider head, rotary on halves
    (8, 8, 32, 1),      # plain multi-head
])
@pytest.mark.parametrize("lengths", [(0, 1), (63, 64), (65, 200), (255, 7)])
def test_decode_attention_is_group_query_attention(library, H, KV, D, interleaved, lengths):
    M = 256
    ref = _attention(library, H, KV, D, M, interleaved, ours=False)
    ours = _attention(library, H, KV, D, M, interleaved, ours=True)
    feeds = _feeds(np.random.default_rng(sum(lengths) + D), H, KV, D, M, lengths)
    want = ref.run(None, {**feeds, "tl": np.array(max(lengths) + 1, np.int32)})
    got = ours.run(None, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=2e-5, atol=2e-6)
    for b, n in enumerate(lengths):        # the caches agree on every row up to the new one
        for w, g in zip(want[1:], got[1:], strict=True):
            np.testing.assert_allclose(g[b, :, :n + 1], w[b, :, :n + 1], rtol=1e-6, atol=1e-6)


def test_decode_attention_appends_the_block_means_a_folded_projection_reads(library):
    H, KV, D, M = 9, 3, 64, 128
    feeds = _feeds(np.random.default_rng(5), H, KV, D, M, (17, 70))
    want = _attention(library, H, KV, D, M, 1, ours=False).run(
        None, {**feeds, "tl": np.array(71, np.int32)})[0]
    got = _attention(library, H, KV, D, M, 1, ours=True, means_block=32).run(None, feeds)[0]
    assert got.shape == (2, 1, H * D + H * D // 32)
    np.testing.assert_allclose(got[..., :H * D], want, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(got[..., H * D:], want.reshape(2, 1, -1, 32).mean(-1),
                               rtol=1e-5, atol=1e-6)


def test_decode_attention_appends_in_place_when_present_is_past(library):
    """Bound as the engine binds it (present = past's buffer) the op writes only the new
    row: the rest of the cache is the caller's, untouched."""
    H, KV, D, M = 9, 3, 64, 128
    sess = _attention(library, H, KV, D, M, 1, ours=True)
    feeds = _feeds(np.random.default_rng(1), H, KV, D, M, (40, 90))
    before = feeds["pk"].copy()
    vals = {k: ort.OrtValue.ortvalue_from_numpy(v) for k, v in feeds.items()}
    io = sess.io_binding()
    for k, v in vals.items():
        io.bind_ortvalue_input(k, v)
    io.bind_output("o")
    io.bind_ortvalue_output("k", vals["pk"])
    io.bind_ortvalue_output("v", vals["pv"])
    sess.run_with_iobinding(io)
    after = vals["pk"].numpy()
    changed = np.argwhere((after != before).any(-1))
    assert sorted({(int(b), int(t)) for b, _, t in changed}) == [(0, 40), (1, 90)]


@pytest.mark.parametrize("change, message", [
    ({"qkv": np.zeros((2, 2, 15 * 64), np.float32)}, "one new token per sequence"),
    ({"sl": np.array([5, 128], np.int32)}, "outside the KV cache"),
    ({"pos": np.array([[5], [999]], np.int64)}, "outside the cos/sin cache"),
    ({"qkv": np.zeros((2, 1, 14 * 64), np.float32)}, "query must pack"),
])
def test_decode_attention_bad_input_is_an_error_naming_it(library, change, message):
    H, KV, D, M = 9, 3, 64, 128
    ins = [helper.make_tensor_value_info(n, t, None) for n, t in (
        ("qkv", T.FLOAT), ("pk", T.FLOAT), ("pv", T.FLOAT), ("sl", T.INT32), ("cos", T.FLOAT),
        ("sin", T.FLOAT), ("pos", T.INT64))]
    node = helper.make_node("DecodeAttention", [i.name for i in ins], ["o", "k", "v"],
                            domain="edge_runtime", num_heads=H, kv_num_heads=KV,
                            rotary_interleaved=1, scale=0.125)
    sess = _session([node], ins, [helper.make_tensor_value_info(n, T.FLOAT, None)
                                  for n in ("o", "k", "v")], library)
    feeds = {**_feeds(np.random.default_rng(2), H, KV, D, M, (3, 4)), **change}
    with pytest.raises(Exception, match=message):
        sess.run(None, feeds)


def _gated(library, block=32):
    node = helper.make_node("GatedMeans", ["x"], ["y"], domain="edge_runtime", block=block)
    return _session([node], [helper.make_tensor_value_info("x", T.FLOAT, None)],
                    [helper.make_tensor_value_info("y", T.FLOAT, None)], library)


@pytest.mark.parametrize("shape", [(1, 1, 2 * 96), (3, 2, 2 * 1536)])
def test_gated_means_is_silu_gate_times_up_then_block_means(library, shape):
    x = (np.random.default_rng(3).standard_normal(shape) * 6).astype(np.float32)
    x.reshape(-1)[:4] = [-100.0, 100.0, 0.0, -0.0]      # saturated and zero gates
    gate, up = np.split(x.astype(np.float64), 2, axis=-1)
    y = gate / (1 + np.exp(-gate)) * up
    means = y.reshape(*y.shape[:-1], -1, 32).mean(-1)
    got = _gated(library).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, np.concatenate([y, means], -1), rtol=1e-5, atol=1e-5)


def test_gated_means_bad_shape_is_an_error_naming_it(library):
    with pytest.raises(Exception, match="two halves of whole blocks"):
        _gated(library).run(None, {"x": np.zeros((1, 1, 2 * 40), np.float32)})


def test_smollm2_step_ops_graph_matches_the_reference(  # noqa: F811  (fixtures)
        library, llm_gguf, llm_model_dir, tmp_path):
    """The real model: its step-ops graph (made here, in a copy) is what `models check`
    measures when the library is there, at the agreement the plain graph has."""
    from edge_runtime.llm.step_ops import prepare
    from edge_runtime.models.gguf2onnx import check_fidelity

    d = tmp_path / "model"
    d.mkdir()
    for f in llm_model_dir.iterdir():
        if f.is_file() and f.name != "model.step_ops.onnx":
            shutil.copy(f, d)
    if not json.loads((d / "model_config.json").read_text()).get("fold_steps"):
        pytest.skip("the built model has no one-row branch (fold_steps)")
    ops = prepare(d, load_config().paths.resolved_home())
    assert ops["DecodeAttention"] == ops["GatedMeans"] == 30 and ops["SkipNormMeans"] == 59
    ours = check_fidelity(llm_gguf, d, step_ops=library)
    plain = check_fidelity(llm_gguf, d)
    assert ours["graph"] == "model.step_ops.onnx" and plain["graph"] == "model.onnx"
    assert ours["top1_agreement"] >= 0.97
    assert abs(ours["top1_agreement"] - plain["top1_agreement"]) <= 0.02


def _norm(library):
    node = helper.make_node("SkipNormMeans", ["x", "skip", "gamma"], ["y", "sum"],
                            domain="edge_runtime", epsilon=1e-5, block=32)
    return _session([node], [helper.make_tensor_value_info(n, T.FLOAT, None)
                             for n in ("x", "skip", "gamma")],
                    [helper.make_tensor_value_info(n, T.FLOAT, None) for n in ("y", "sum")],
                    library)


@pytest.mark.parametrize("shape", [(1, 1, 576), (2, 3, 64)])
def test_skip_norm_means_is_the_skip_rms_norm_with_block_means(library, shape):
    rng = np.random.default_rng(6)
    x, skip = (rng.standard_normal(shape).astype(np.float32) * 3 for _ in range(2))
    gamma = rng.standard_normal(shape[-1]).astype(np.float32)
    total = x.astype(np.float64) + skip
    y = total / np.sqrt((total ** 2).mean(-1, keepdims=True) + 1e-5) * gamma
    got_y, got_sum = _norm(library).run(None, {"x": x, "skip": skip, "gamma": gamma})
    np.testing.assert_allclose(got_sum, total, rtol=1e-6, atol=1e-6)
    means = y.reshape(*shape[:-1], -1, 32).mean(-1)
    np.testing.assert_allclose(got_y, np.concatenate([y, means], -1), rtol=1e-5, atol=1e-5)


def test_skip_norm_means_rounds_as_onnxruntimes_skip_norm(library):
    """Bit for bit: a norm rounded apart moves the int8 activations of the 4-bit kernel it
    feeds, and with them the next token now and then."""
    node = helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"],
                            ["y", "", "", "sum"], domain="com.microsoft", epsilon=1e-5)
    ref = _session([node], [helper.make_tensor_value_info(n, T.FLOAT, None)
                            for n in ("x", "skip", "gamma")],
                   [helper.make_tensor_value_info(n, T.FLOAT, None) for n in ("y", "sum")],
                   None)
    rng = np.random.default_rng(7)
    for scale in (0.1, 3.0, 40.0):
        feeds = {"x": (rng.standard_normal((1, 1, 576)) * scale).astype(np.float32),
                 "skip": rng.standard_normal((1, 1, 576)).astype(np.float32),
                 "gamma": rng.uniform(0, 2, 576).astype(np.float32)}
        want_y, want_sum = ref.run(None, feeds)
        got_y, got_sum = _norm(library).run(None, feeds)
        assert np.array_equal(got_y[..., :576], want_y) and np.array_equal(got_sum, want_sum)


def test_skip_norm_means_bad_shape_is_an_error_naming_it(library):
    x = np.zeros((1, 1, 64), np.float32)
    with pytest.raises(Exception, match="whole blocks"):
        _norm(library).run(None, {"x": x, "skip": x, "gamma": np.ones(32, np.float32)})


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_a_tiny_models_step_ops_graph_decodes_as_the_plain_one(library, tmp_path, arch):
    """Every op the pass puts into a model (attention, norms, gate for the llama; the norms
    for Gemma 3) computes what the nodes it replaced computed: a prompt's greedy steps give
    the plain graph's logits (the int8 activations of the 4-bit kernels round a value a
    1e-7 apart to the next step now and then, hence the tolerance)."""
    from edge_runtime.llm.runner import KvRunner
    from edge_runtime.llm.step_ops import prepare
    from edge_runtime.models.gguf2onnx.reference import open_built
    from tests.gguf_fixtures import build_variants

    d = build_variants(tmp_path, {"steps": {"int8_ffn": True, "fold_offsets": True,
                                            "fold_steps": True}},
                       archs=((arch, "Q4_1" if arch == "llama" else "Q4_K"),))[arch, "steps"]
    assert prepare(d, load_config().paths.resolved_home())
    runs = []
    for ops in (None, library):
        opened, cfg = open_built(d, "cpu", 1, 64, step_ops=ops)
        assert cfg["opened_file"] == ("model.step_ops.onnx" if ops else "model.onnx")
        runner = KvRunner(opened, cfg, 64)
        out = [runner.feed(list(range(5, 17))).copy()]
        for _ in range(24):
            out.append(runner.feed([int(out[-1].argmax())]).copy())
        runs.append(np.stack(out))
    plain, ours = runs
    assert np.array_equal(plain[0], ours[0])              # the prefill: the plain branch
    assert (plain.argmax(-1) == ours.argmax(-1)).mean() >= 0.95
    np.testing.assert_allclose(ours, plain, atol=0.05 * np.abs(plain).max())

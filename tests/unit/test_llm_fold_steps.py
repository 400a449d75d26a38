"""The ``fold_steps`` build: a call of one row (a decode step) runs the FFN gate/up from the
weights' blocks, offsets folded, while a call of several rows (a prefill chunk, a batched
step) keeps the int8 GEMMs; both in one graph behind an If on the row count, every weight
the two read alike stored once. Checked against the builds each branch stands for."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("gguf")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from tests.gguf_fixtures import LAYERS, build_variants  # noqa: E402

PROMPT = list(range(5, 17))
STEPS = list(range(20, 28))
STEPPED = {"int8_ffn": True, "fold_offsets": True, "fold_steps": True}


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    return build_variants(tmp_path_factory.mktemp("steps"), {
        "ffn8": {"int8_ffn": True, "fold_offsets": True},
        "fold": {"fold_offsets": True},
        "steps": STEPPED,
        "attn8": {"int8_ffn": True, "int8_attention": True},
        "attn8_steps": {"int8_ffn": True, "int8_attention": True, "fold_steps": True}})


def _runner(d, max_len: int = 64):
    from edge_runtime.llm.runner import KvRunner
    from edge_runtime.models.gguf2onnx.reference import open_built

    opened, cfg = open_built(d, "cpu", 1, max_len)
    return KvRunner(opened, cfg, max_len)


def _graph(d):
    return onnx.load(str(d / "model.onnx"), load_external_data=False).graph


def _branch(node, name: str):
    return next(a.g for a in node.attribute if a.name == name)


def _steps(d, prompt=PROMPT, steps=STEPS) -> np.ndarray:
    """The logits of a prefill of ``prompt`` (one call of several rows), then of each token
    of ``steps`` fed alone."""
    r = _runner(d)
    out = [r.feed(prompt).copy()]
    out += [r.feed([t]).copy() for t in steps]
    return np.stack(out)


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_a_prefill_runs_the_int8_build_and_a_step_the_folded_one(builds, arch):
    stepped = _steps(builds[arch, "steps"])
    # several rows: exactly the int8 FFN build's logits
    assert np.array_equal(stepped[0], _steps(builds[arch, "ffn8"])[0])
    # one row at a time from the start: exactly the folded build's
    one = _runner(builds[arch, "steps"])
    fold = _runner(builds[arch, "fold"])
    for t in PROMPT + STEPS:
        assert np.array_equal(one.feed([t]), fold.feed([t]))
    # the two builds differ, so each branch was taken where it should be
    assert not np.array_equal(_steps(builds[arch, "ffn8"]), _steps(builds[arch, "fold"]))


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
@pytest.mark.parametrize("int8_attention", [False, True])
def test_steps_after_an_int8_prefill_follow_the_int8_build(builds, arch, int8_attention):
    """The steps read the KV cache the int8 prefill wrote (with the int8 attention, V divided
    by its smoothing: the step's attention is the same int8 one, so it reads V alike)."""
    base, stepped = ("attn8", "attn8_steps") if int8_attention else ("ffn8", "steps")
    a, b = _steps(builds[arch, base]), _steps(builds[arch, stepped])
    assert np.array_equal(a[0], b[0])
    err = np.abs(a - b).max()
    assert 0 < err < 0.1 * np.abs(a).max()
    top2 = np.sort(a, axis=-1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * err
    assert np.array_equal(a.argmax(-1)[clear], b.argmax(-1)[clear])


def test_the_graph_holds_each_shared_weight_once(builds):
    from edge_runtime.models.gguf2onnx.graph import STEP_BRANCH_LAYERS

    cfg = json.loads((builds["llama", "steps"] / "model_config.json").read_text())
    assert cfg["fold_steps"] is True and cfg["int8_ffn"] is True
    g = _graph(builds["llama", "steps"])
    ifs = [n for n in g.node if n.op_type == "If"]
    assert len(ifs) == -(-LAYERS // STEP_BRANCH_LAYERS)
    assert all(not b.g.initializer for n in ifs for b in n.attribute)   # weights: outer scope
    names = [t.name for t in g.initializer]
    assert len(names) == len(set(names))
    weights = [t for t in onnx.load(str(builds["llama", "steps"] / "model.onnx")).graph
               .initializer if len(t.raw_data) > 1024]
    assert len({t.raw_data for t in weights}) == len(weights)   # no weight stored twice
    sub = [m for n in ifs for b in n.attribute for m in b.g.node]
    step = [m.op_type for n in ifs for m in _branch(n, "then_branch").node]   # one row
    rows = [m.op_type for n in ifs for m in _branch(n, "else_branch").node]
    assert "DynamicQuantizeMatMul" not in step
    assert rows.count("DynamicQuantizeMatMul") == LAYERS
    # the folded QKV, attention output and down weights are the int8 FFN build's, read by
    # both branches; only the gate/up differ
    ffn8 = {t.name for t in _graph(builds["llama", "ffn8"]).initializer}
    shared = [i for m in sub for i in m.input if i in ffn8 and i.endswith(".B")]
    assert {i for i in shared if "ffn_gate_up" not in i} == {
        n for n in ffn8 if n.endswith(".B") and n.startswith("blk.") and "gate_up" not in n}


def test_each_if_takes_its_share_of_the_blocks(builds, tmp_path, monkeypatch):
    from edge_runtime.models.gguf2onnx import graph
    from edge_runtime.models.gguf2onnx.build import build_llm

    monkeypatch.setattr(graph, "STEP_BRANCH_LAYERS", 1)
    build_llm(builds["llama", "gguf"], tmp_path / "one", **STEPPED)
    ifs = [n for n in _graph(tmp_path / "one").node if n.op_type == "If"]
    assert len(ifs) == LAYERS
    assert [list(n.output)[2:] for n in ifs] == [
        [f"present.{i}.key", f"present.{i}.value"] for i in range(LAYERS)]
    assert np.array_equal(_steps(tmp_path / "one"), _steps(builds["llama", "steps"]))


def test_fold_steps_needs_the_int8_ffn_and_a_cpu_build(builds, tmp_path):
    from edge_runtime.errors import ConfigError
    from edge_runtime.models.gguf2onnx.build import build_llm
    from edge_runtime.models.store import load_manifest_text

    info = build_llm(builds["llama", "gguf"], tmp_path / "fp16", precision="fp16", **STEPPED)
    assert info["fold_steps"] is False
    assert "If" not in [n.op_type for n in _graph(tmp_path / "fp16").node]
    info = build_llm(builds["llama", "gguf"], tmp_path / "no8", fold_steps=True)
    assert info["fold_steps"] is False
    text = ('[[model]]\nname = "m"\nrole = "llm"\nlicence = "x"\npypi = "m==1"\n'
            'build = "gguf2onnx"\nfold_steps = true\n[[model.files]]\npath = "m.gguf"\n'
            'sha256 = "00"\n')
    with pytest.raises(ConfigError, match="needs int8_ffn"):
        load_manifest_text(text, tmp_path / "manifest.toml")


def test_a_constant_is_made_once_per_name_and_values():
    from edge_runtime.models.gguf2onnx.graph import _Graph

    g = _Graph()
    a = g.const("w", np.arange(4, dtype=np.float32))
    assert g.const("w", np.arange(4, dtype=np.float32)) == a == "w"
    b = g.const("w", np.ones(4, np.float32))
    assert b != "w"
    assert [t.name for t in g.inits] == ["w", b]

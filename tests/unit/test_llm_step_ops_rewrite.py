"""The step-ops graph pass and the parts of the step-ops build that need no compiler: which
nodes of a ``fold_steps`` model's one-row branches become edge-runtime's ops (and which
stay onnxruntime's), the header unpacking from a Debian package, the typed errors when a
compiler or header is missing, and the engine's choice between the two graphs."""
from __future__ import annotations

import io
import json
import logging
import tarfile
from collections import Counter

import pytest

pytest.importorskip("gguf")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402

from edge_runtime.llm.step_ops import StepOpsUnavailable, variant_of  # noqa: E402
from edge_runtime.llm.step_ops import compile as ops_compile  # noqa: E402
from edge_runtime.llm.step_ops import headers  # noqa: E402
from edge_runtime.llm.step_ops.rewrite import rewrite, write_variant  # noqa: E402
from tests.gguf_fixtures import LAYERS, build_variants  # noqa: E402

STEPPED = {"int8_ffn": True, "fold_offsets": True, "fold_steps": True}


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    return build_variants(tmp_path_factory.mktemp("step_ops"),
                          {"steps": STEPPED, "plain": {"int8_ffn": True}})


def _load(d):
    return onnx.load(str(d / "model.onnx"), load_external_data=False)


def _branches(model):
    for n in model.graph.node:
        if n.op_type == "If":
            yield {a.name: a.g for a in n.attribute}


def _ops(g) -> Counter:
    return Counter(n.op_type for n in g.node)


def test_llama_step_branches_get_both_ops_and_the_prefill_branches_none(builds):
    model = _load(builds["llama", "steps"])
    before = [(_ops(b["then_branch"]), _ops(b["else_branch"])) for b in _branches(model)]
    counts = rewrite(model, head_dim=json.loads(
        (builds["llama", "steps"] / "model_config.json").read_text())["head_dim"])
    # the first block's first norm has no residual to add (SimplifiedLayerNormalization)
    assert counts == {"DecodeAttention": LAYERS, "GatedMeans": LAYERS,
                      "SkipNormMeans": 2 * LAYERS - 1}
    for (then0, else0), b in zip(before, _branches(model), strict=True):
        then1 = _ops(b["then_branch"])
        assert then1["GroupQueryAttention"] == then1["Sigmoid"] == 0
        assert then1["SkipSimplifiedLayerNormalization"] == 0
        assert then1["DecodeAttention"] == then0["GroupQueryAttention"]
        # one AveragePool + Concat pair goes with each op; Split, Sigmoid, two Mul with the
        # gate; what is left of the pairs is the first norm's
        assert then1["AveragePool"] == then1["Concat"] == then1["SimplifiedLayerNormalization"]
        assert sum(then0.values()) - sum(then1.values()) == (
            2 * (then1["DecodeAttention"] + then1["SkipNormMeans"]) + 5 * then1["GatedMeans"])
        assert _ops(b["else_branch"]) == else0          # prefill chunks: untouched
    assert any(o.domain == "edge_runtime" for o in model.opset_import)


def test_gemma_keeps_onnxruntimes_attention_and_geglu(builds):
    """Gemma 3 norms Q and K per head before the attention, so Q, K and V reach it apart
    (the op takes them packed), and its GeGLU FFN is no SiLU gate: both stay onnxruntime's.
    Its norms that feed a folded projection become SkipNormMeans like anyone's."""
    model = _load(builds["gemma3", "steps"])
    before = [_ops(b["then_branch"]) for b in _branches(model)]
    counts = rewrite(model, head_dim=16)
    assert set(counts) == {"SkipNormMeans"}
    after = [_ops(b["then_branch"]) for b in _branches(model)]
    for b0, b1 in zip(before, after, strict=True):
        assert b1["GroupQueryAttention"] == b0["GroupQueryAttention"]
        assert b1["Split"] == b0["Split"] and b1["Mul"] == b0["Mul"]
        assert b0["SkipSimplifiedLayerNormalization"] - b1["SkipSimplifiedLayerNormalization"] \
            == b1["SkipNormMeans"]


def test_a_model_without_one_row_branches_gets_no_variant(builds, tmp_path):
    d = builds["llama", "plain"]
    cfg = json.loads((d / "model_config.json").read_text())
    assert write_variant(d, cfg) == Counter()
    assert not (d / "model.step_ops.onnx").exists()


@pytest.mark.parametrize("attrs, inputs", [
    ({"softcap": 30.0}, None),                     # Gemma 2's logit cap
    ({"local_window_size": 512}, None),            # a sliding window
    ({"do_rotary": 0}, None),                      # rotary done outside
    ({}, ["q", "k", "v", "pk", "pv", "sl", "tl", "cos", "sin", "pos"]),   # unpacked QKV
    ({}, ["qkv", "", "", "pk", "pv", "sl", "tl", "cos", "sin", ""]),      # no position ids
])
def test_an_attention_the_op_cannot_do_stays_onnxruntimes(attrs, inputs):
    a = {"num_heads": 4, "kv_num_heads": 2, "do_rotary": 1, "local_window_size": -1,
         "scale": 0.25, **attrs}
    node = helper.make_node("GroupQueryAttention", inputs or [
        "qkv", "", "", "pk", "pv", "sl", "tl", "cos", "sin", "pos"], ["o", "k", "v"],
        domain="com.microsoft", **a)
    then = helper.make_graph([node], "then", [], [])
    els = helper.make_graph([], "else", [], [])
    top = helper.make_node("If", ["one_row"], ["o", "k", "v"], then_branch=then,
                           else_branch=els)
    model = helper.make_model(helper.make_graph([top], "g", [], []))
    assert rewrite(model, head_dim=16) == Counter()
    then = next(a.g for a in model.graph.node[0].attribute if a.name == "then_branch")
    assert then.node[0].op_type == "GroupQueryAttention"


# -- headers ---------------------------------------------------------------------------------

def _deb(files: dict[str, bytes]) -> bytes:
    """A minimal .deb: an ar archive with debian-binary and a data.tar.xz holding ``files``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out = b"!<arch>\n"
    for name, data in (("debian-binary", b"2.0\n"), ("data.tar.xz", buf.getvalue())):
        out += f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode()
        out += data + (b"\n" if len(data) % 2 else b"")
    return out


def test_headers_come_out_of_a_deb_and_nothing_else(tmp_path):
    deb = _deb({"./usr/include/onnxruntime/onnxruntime_c_api.h": b"/* api */",
                "./usr/include/onnxruntime/core/providers/x.h": b"/* x */",
                "./usr/lib/x86_64-linux-gnu/libonnxruntime.so": b"ELF",
                "./usr/include/onnxruntime/../../../etc/evil.h": b"no"})
    dest = tmp_path / "include"
    headers.unpack_headers(deb, dest)
    assert (dest / "onnxruntime_c_api.h").read_bytes() == b"/* api */"
    assert (dest / "core/providers/x.h").is_file()
    assert sorted(p.name for p in dest.rglob("*") if p.is_file()) == [
        "onnxruntime_c_api.h", "x.h"]
    assert not (tmp_path / "etc").exists()


@pytest.mark.parametrize("deb, message", [
    (b"PK\x03\x04 a zip", "not a .deb"),
    (_deb({"./usr/include/onnxruntime/other.h": b""}), "no onnxruntime_c_api.h"),
])
def test_a_bad_package_is_a_typed_error_that_leaves_nothing(tmp_path, deb, message):
    with pytest.raises(StepOpsUnavailable, match=message):
        headers.unpack_headers(deb, tmp_path / "include")
    assert list(tmp_path.iterdir()) == []


def test_no_header_and_no_download_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(headers, "SYSTEM_DIRS", ())
    with pytest.raises(StepOpsUnavailable, match="C API header") as err:
        headers.find_headers(tmp_path / "include", fetch=False)
    assert "libonnxruntime-dev" in (err.value.hint or "")


def test_a_downloaded_package_with_another_hash_is_refused(tmp_path, monkeypatch):
    class Response(io.BytesIO):
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(headers, "SYSTEM_DIRS", ())
    monkeypatch.setattr(headers.urllib.request, "urlopen",
                        lambda url, timeout: Response(_deb({})))
    monkeypatch.setattr(headers.platform, "machine", lambda: "x86_64")
    with pytest.raises(StepOpsUnavailable, match="is not the pinned"):
        headers.find_headers(tmp_path / "include")
    assert not (tmp_path / "include").exists()


def test_no_compiler_is_a_typed_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", "no-such-cc-for-edge-runtime")
    with pytest.raises(StepOpsUnavailable, match="no C compiler") as err:
        ops_compile.build_library(tmp_path)
    assert "gcc" in (err.value.hint or "")


def test_the_library_name_follows_the_source(tmp_path, monkeypatch):
    a = ops_compile.library_path(tmp_path)
    monkeypatch.setattr(ops_compile, "source_text", lambda: b"int changed;")
    b = ops_compile.library_path(tmp_path)
    assert a != b and a.parent == b.parent == tmp_path / "ops"
    assert ops_compile.find_library(tmp_path) is None


# -- the engine's choice ---------------------------------------------------------------------

def _with_fake_variant(builds, tmp_path):
    """A copy of the llama build whose config records a step-ops graph (the plain one, so
    it loads without the library)."""
    import shutil
    d = tmp_path / "model"
    shutil.copytree(builds["llama", "steps"], d)
    (d / "model.step_ops.onnx").write_bytes((d / "model.onnx").read_bytes())
    cfg = json.loads((d / "model_config.json").read_text())
    cfg["step_ops"] = {"model_file": "model.step_ops.onnx", "library": "libops.so", "ops": {}}
    (d / "model_config.json").write_text(json.dumps(cfg))
    return d


def _recording_factory(fail_variant: bool):
    from edge_runtime.errors import ModelLoadError
    from edge_runtime.llm.providers import open_session

    calls = []

    def factory(path, names, threads, cache_dir=None, profiles=None, spin_us=0,
                custom_ops=None):
        calls.append((path.name, custom_ops))
        if custom_ops is not None and fail_variant:
            raise ModelLoadError("unknown op DecodeAttention")
        return open_session(path, names, threads, cache_dir, profiles, spin_us=spin_us)

    factory.calls = calls
    return factory


def test_the_engine_opens_the_variant_only_with_the_library(builds, tmp_path):
    from edge_runtime.llm.onnx_engine import OnnxLlmEngine

    d = _with_fake_variant(builds, tmp_path)
    lib = tmp_path / "libops.so"
    for ops, want in ((None, ("model.onnx", None)), (lib, ("model.step_ops.onnx", lib))):
        f = _recording_factory(fail_variant=False)
        OnnxLlmEngine(d, providers=("cpu",), threads=1, context_tokens=32, step_ops=ops,
                      session_factory=f)
        assert f.calls == [want]
    assert variant_of(builds["llama", "steps"], json.loads(
        (builds["llama", "steps"] / "model_config.json").read_text())) is None
    # a graph made for another build of the ops is not opened with this one
    f = _recording_factory(fail_variant=False)
    OnnxLlmEngine(d, providers=("cpu",), threads=1, context_tokens=32,
                  step_ops=tmp_path / "libops-newer.so", session_factory=f)
    assert f.calls == [("model.onnx", None)]


def test_a_variant_that_does_not_load_falls_back_to_the_plain_graph(builds, tmp_path, caplog):
    from edge_runtime.llm.onnx_engine import OnnxLlmEngine

    d = _with_fake_variant(builds, tmp_path)
    f = _recording_factory(fail_variant=True)
    with caplog.at_level(logging.WARNING):
        eng = OnnxLlmEngine(d, providers=("cpu",), threads=1, context_tokens=32,
                            step_ops=tmp_path / "libops.so", session_factory=f)
    assert [c[0] for c in f.calls] == ["model.step_ops.onnx", "model.onnx"]
    assert "step-ops graph did not load" in caplog.text
    assert eng.device == "cpu"


# -- edge-runtime doctor -----------------------------------------------------------------

def test_doctor_says_whether_decode_steps_run_on_the_kernels(tmp_path):
    from edge_runtime.config import load_config
    from edge_runtime.doctor import _check_step_ops

    model = tmp_path / "model"
    model.mkdir()
    (model / "model.onnx").write_bytes(b"")
    (model / "model.step_ops.onnx").write_bytes(b"")
    cfg = load_config(env={}).with_overrides(paths={"home": str(tmp_path / "home")},
                                              llm={"model_dir": str(model)})
    assert _check_step_ops(cfg.with_overrides(llm={"step_ops": False})).startswith("off")
    assert "not built" in _check_step_ops(cfg) and "models build" in _check_step_ops(cfg)
    lib = ops_compile.library_path(tmp_path / "home")
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    record = {"model_file": "model.step_ops.onnx", "ops": {"DecodeAttention": 2}}
    for rec, says in ((None, "no decode-step graph"),
                      ({**record, "library": "libedge_step_ops-old.so"}, "another build"),
                      ({**record, "library": lib.name}, "decodes on them (2 DecodeAttention)")):
        (model / "model_config.json").write_text(json.dumps({"step_ops": rec} if rec else {}))
        assert says in _check_step_ops(cfg)

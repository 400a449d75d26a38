"""The builder's and the engine's typed errors for absent or broken inputs."""
from __future__ import annotations

import json

import pytest

from edge_runtime.errors import ModelLoadError, ModelMissingError
from edge_runtime.llm import load_engine


def test_missing_gguf_is_model_missing(tmp_path):
    pytest.importorskip("gguf")
    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf

    with pytest.raises(ModelMissingError) as err:
        read_gguf(tmp_path / "absent.gguf")
    assert "models build" in err.value.hint


def test_garbage_gguf_is_model_load_error(tmp_path):
    pytest.importorskip("gguf")
    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf

    p = tmp_path / "bad.gguf"
    p.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(ModelLoadError):
        read_gguf(p)


def test_engine_dir_without_files_is_model_missing(tmp_path):
    with pytest.raises(ModelMissingError) as err:
        load_engine(tmp_path)
    assert "edge-runtime models build" in err.value.hint


def test_engine_config_without_keys_is_model_load_error(tmp_path):
    (tmp_path / "model_config.json").write_text(json.dumps({"model_file": "model.onnx"}))
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelLoadError) as err:
        load_engine(tmp_path)
    assert "edge-runtime models build" in err.value.hint


def test_engine_unreadable_config_is_model_load_error(tmp_path):
    (tmp_path / "model_config.json").write_text("{not json")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelLoadError):
        load_engine(tmp_path)


# -- bad GGUFs: a typed error before anything is written; the previous build keeps working --

def _tiny(tmp_path, name="tiny.gguf", **kw):
    pytest.importorskip("onnx")
    from tests.gguf_fixtures import write_arch_gguf
    return write_arch_gguf(tmp_path / name, "llama", "Q4_0", **kw)


def _write_bare(path, arch, tokens=True, qtype_name="Q4_0"):
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(1)
    w.add_embedding_length(32)
    w.add_feed_forward_length(64)
    w.add_head_count(2)
    if tokens:
        w.add_tokenizer_model("gpt2")
        w.add_token_list(["a", "b"])
        w.add_token_merges(["a b"])
    qt = gguf.GGMLQuantizationType[qtype_name]
    _, size = gguf.GGML_QUANT_SIZES[qt]
    w.add_tensor("token_embd.weight", np.zeros((2, size), np.uint8), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_unsupported_architecture_names_the_supported_ones(tmp_path):
    pytest.importorskip("gguf")
    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf

    with pytest.raises(ModelLoadError) as err:
        read_gguf(_write_bare(tmp_path / "m.gguf", "mamba"))
    msg = err.value.message
    assert "'mamba'" in msg and "llama, qwen2, qwen3, gemma3, phi3" in msg


def test_gguf_without_tokenizer_is_a_clear_error(tmp_path):
    pytest.importorskip("gguf")
    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf

    with pytest.raises(ModelLoadError) as err:
        read_gguf(_write_bare(tmp_path / "m.gguf", "llama", tokens=False))
    assert "no tokenizer" in err.value.message


def test_unsupported_block_type_is_rejected_before_building(tmp_path):
    pytest.importorskip("gguf")
    import gguf
    import numpy as np

    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf

    src = _tiny(tmp_path)
    reader = gguf.GGUFReader(str(src))
    w = gguf.GGUFWriter(str(tmp_path / "q81.gguf"), "llama")
    for f in reader.fields.values():   # copy the metadata, then one Q8_1 weight
        if f.name.startswith(("llama.", "tokenizer.")):
            w.add_key_value(f.name, f.contents(), f.types[0],
                            f.types[-1] if f.types[0] == gguf.GGUFValueType.ARRAY else None)
    for t in reader.tensors:
        if t.name == "blk.0.attn_q.weight":
            _, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_1]
            w.add_tensor(t.name, np.zeros((t.shape[1], t.shape[0] // 32 * size), np.uint8),
                         raw_dtype=gguf.GGMLQuantizationType.Q8_1)
        else:
            w.add_tensor(t.name, np.asarray(t.data), raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ModelLoadError) as err:
        read_gguf(tmp_path / "q81.gguf")
    assert "Q8_1" in err.value.message and "Q6_K" in err.value.message


def test_truncated_gguf_is_model_load_error(tmp_path):
    pytest.importorskip("gguf")
    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf

    p = _tiny(tmp_path)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(ModelLoadError) as err:
        read_gguf(p)
    assert "truncated" in err.value.message or "lacks tensors" in err.value.message


def _fingerprint(d):
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def test_failed_rebuild_keeps_the_previous_model(tmp_path, monkeypatch):
    pytest.importorskip("gguf")
    from edge_runtime.models.gguf2onnx import build
    from edge_runtime.models.gguf2onnx.build import build_llm

    out = tmp_path / "onnx"
    build_llm(_tiny(tmp_path), out)
    before = _fingerprint(out)
    bad = _tiny(tmp_path, "bad.gguf")
    bad.write_bytes(bad.read_bytes()[:5000])
    with pytest.raises(ModelLoadError):
        build_llm(bad, out)
    assert _fingerprint(out) == before

    def boom(*a, **kw):   # a failure half-way through the build itself
        raise RuntimeError("disk full")

    monkeypatch.setattr(build, "build_graph", boom)
    with pytest.raises(RuntimeError):
        build_llm(_tiny(tmp_path, "other.gguf", seed=3), out)
    assert _fingerprint(out) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["onnx"]   # no debris
    load_engine(out, providers=("cpu",), threads=1, context_tokens=32)


def _store_with(tmp_path, gguf, options: str = ""):
    """A model store whose manifest has one entry, "tiny", with ``gguf`` as its pulled file
    (``options``: more TOML lines for the entry, build options)."""
    from edge_runtime.config import load_config
    from edge_runtime.models.store import ModelStore, sha256_file

    manifest = tmp_path / "manifest.toml"
    manifest.write_text(
        '[[model]]\nname = "tiny"\nrole = "llm"\nlicence = "test"\nurl = "file:///none"\n'
        f'build = "gguf2onnx"\n{options}[[model.files]]\npath = "tiny.gguf"\n'
        f'sha256 = "{sha256_file(gguf)}"\n')
    cfg = load_config(env={}, overrides={"paths": {"home": str(tmp_path / "home"),
                                                   "manifest": str(manifest)}})
    store = ModelStore(cfg)
    store.files_dir("tiny").mkdir(parents=True)
    (store.files_dir("tiny") / "tiny.gguf").write_bytes(gguf.read_bytes())
    return store


def test_store_build_of_a_bad_source_keeps_the_built_model(tmp_path):
    pytest.importorskip("gguf")
    from edge_runtime.models.gguf2onnx.build import build_llm

    good = _tiny(tmp_path)
    store = _store_with(tmp_path, _write_bare(tmp_path / "bad.gguf", "mamba"))
    out = store.built_dir("tiny")
    build_llm(good, out)                       # what a previous, good build left
    before = _fingerprint(out)
    with pytest.raises(ModelLoadError) as err:
        store.build("tiny", force=True)
    assert "supported: llama" in err.value.message
    assert _fingerprint(out) == before


def test_store_rebuilds_a_model_an_older_builder_made_and_keeps_a_current_one(tmp_path, caplog):
    pytest.importorskip("gguf")
    import json
    import logging

    from edge_runtime.models.gguf2onnx import BUILDER_VERSION
    from edge_runtime.models.store import built_by

    store = _store_with(tmp_path, _tiny(tmp_path))
    out = store.build("tiny")
    assert built_by(out) == BUILDER_VERSION
    graph = (out / "model.onnx").stat().st_mtime_ns
    store.build("tiny")                                   # current: left as it is
    assert (out / "model.onnx").stat().st_mtime_ns == graph
    cfg_file = out / "model_config.json"
    old = json.loads(cfg_file.read_text()) | {"builder_version": "gguf2onnx-1"}
    cfg_file.write_text(json.dumps(old))
    with caplog.at_level(logging.INFO, logger="edge_runtime.models.store"):
        store.build("tiny")
    assert built_by(out) == BUILDER_VERSION
    assert "built by gguf2onnx-1; rebuilding with " + BUILDER_VERSION in caplog.text


def test_store_rebuilds_a_model_built_with_other_options_than_its_manifest_asks(tmp_path,
                                                                             caplog):
    pytest.importorskip("gguf")
    import logging

    from edge_runtime.models.store import BUILD_OPTIONS, built_options

    gguf = _tiny(tmp_path)
    (tmp_path / "a").mkdir()
    out = _store_with(tmp_path / "a", gguf).build("tiny")       # the exact blocks
    assert built_options(out) == dict.fromkeys(BUILD_OPTIONS, False)
    store = _store_with(tmp_path, gguf, "fold_offsets = true\n")
    out.rename(store.built_dir("tiny"))                          # as a manifest edit finds it
    with caplog.at_level(logging.INFO, logger="edge_runtime.models.store"):
        out = store.build("tiny")
    assert built_options(out) == {**dict.fromkeys(BUILD_OPTIONS, False), "fold_offsets": True}
    assert "as the manifest asks" in caplog.text
    graph = (out / "model.onnx").stat().st_mtime_ns
    store.build("tiny")                                          # as asked: left as it is
    assert (out / "model.onnx").stat().st_mtime_ns == graph
    assert built_options(tmp_path / "missing") == dict.fromkeys(BUILD_OPTIONS, False)


@pytest.mark.parametrize("template", ["{% for m in messages %}{{ m['content'] }",
                                      "{{ raise_exception('no system role') }}",
                                      "{{ messages[0]['content'] | no_such_filter }}"])
def test_chat_template_the_renderer_cannot_handle_fails_the_build_cleanly(tmp_path, template):
    pytest.importorskip("gguf")
    from edge_runtime.models.gguf2onnx.build import build_llm

    out = tmp_path / "onnx"
    build_llm(_tiny(tmp_path), out)
    before = _fingerprint(out)
    with pytest.raises(ModelLoadError) as err:
        build_llm(_tiny(tmp_path, "t.gguf", chat_template=template), out)
    assert "chat template" in err.value.message and "t.gguf" in err.value.message
    assert _fingerprint(out) == before


def test_phi3_long_rope_variant_is_refused_by_name(tmp_path):
    pytest.importorskip("gguf")
    import gguf
    import numpy as np

    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf
    from tests.gguf_fixtures import write_arch_gguf

    src = write_arch_gguf(tmp_path / "phi3.gguf", "phi3", "Q8_0")
    assert read_gguf(src).hparams.arch == "phi3"
    reader = gguf.GGUFReader(str(src))
    w = gguf.GGUFWriter(str(tmp_path / "long.gguf"), "phi3")
    for f in reader.fields.values():
        if f.name.startswith(("phi3.", "tokenizer.")):
            w.add_key_value(f.name, f.contents(), f.types[0],
                            f.types[-1] if f.types[0] == gguf.GGUFValueType.ARRAY else None)
    for t in reader.tensors:
        w.add_tensor(t.name, np.asarray(t.data), raw_dtype=t.tensor_type)
    w.add_tensor("rope_factors_long.weight", np.ones(32, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ModelLoadError) as err:
        read_gguf(tmp_path / "long.gguf")
    assert "rope_factors_long" in err.value.message


def test_store_without_the_build_extra_keeps_a_built_model_and_says_what_a_build_needs(
        tmp_path, monkeypatch):
    pytest.importorskip("gguf")
    import sys

    from edge_runtime.errors import ConfigError

    store = _store_with(tmp_path, _tiny(tmp_path))
    out = store.build("tiny")
    monkeypatch.setitem(sys.modules, "edge_runtime.models.gguf2onnx", None)  # not installed
    assert store.build("tiny") == out                  # the daemon starts on what it has
    with pytest.raises(ConfigError) as err:
        store.build("tiny", force=True)                # a rebuild asked for cannot happen
    assert "edge-runtime[build]" in (err.value.hint or "")
    (out / "model.onnx").unlink()
    with pytest.raises(ConfigError):
        store.build("tiny")

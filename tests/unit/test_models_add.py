"""`edge-runtime models add FILE.gguf`: check, hash, place, build, record; bad input first."""
from __future__ import annotations

import hashlib
import json

import pytest

from edge_runtime.config import load_config
from edge_runtime.errors import ConfigError, ModelLoadError
from edge_runtime.models.store import ModelStore

pytest.importorskip("gguf")
pytest.importorskip("onnx")


def _store(tmp_path):
    return ModelStore(load_config(overrides={"paths": {"home": str(tmp_path / "home")}},
                                  env={}))


def _tiny(tmp_path, arch="qwen2", qtype="Q4_K", name="My-Tiny-Qwen.Q4_K.gguf"):
    from tests.gguf_fixtures import write_arch_gguf
    (tmp_path / "src").mkdir(exist_ok=True)
    return write_arch_gguf(tmp_path / "src" / name, arch, qtype)


def _written(tmp_path) -> list[str]:
    root = tmp_path / "home" / "models"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_add_hashes_builds_and_records_a_user_entry(tmp_path):
    from edge_runtime.models.user import add_model

    src = _tiny(tmp_path)
    added = add_model(_store(tmp_path), src)
    assert added["name"] == "my-tiny-qwen.q4_k"
    assert added["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert added["architecture"] == "qwen2" and added["layers"] == 2
    assert "Q4_K" in added["block_types"] and added["chat_template"] is True
    fresh = _store(tmp_path)             # a new store reads the entry back from the file
    entry = fresh.entry("my-tiny-qwen.q4_k")
    assert entry.build == "gguf2onnx" and entry.files[0].sha256 == added["sha256"]
    assert entry.url == src.as_uri()
    assert "smollm2-135m-instruct" in fresh.manifest         # merged with the shipped one
    st = fresh.status("my-tiny-qwen.q4_k")
    assert st["built"] is True and st["files"] == {src.name: "verified"}
    cfg = json.loads((fresh.built_dir("my-tiny-qwen.q4_k") / "model_config.json").read_text())
    assert cfg["architecture"] == "qwen2" and cfg["source_sha256"] == added["sha256"]


def test_a_second_model_keeps_the_first_entry(tmp_path):
    from edge_runtime.models.user import add_model

    add_model(_store(tmp_path), _tiny(tmp_path), name="one")
    add_model(_store(tmp_path), _tiny(tmp_path, "gemma3", "Q6_K", "g.gguf"), name="two")
    names = set(_store(tmp_path).manifest)
    assert {"one", "two"} <= names


def test_shipped_name_clash_names_the_flag_and_writes_nothing(tmp_path):
    from edge_runtime.models.user import add_model

    with pytest.raises(ConfigError) as err:
        add_model(_store(tmp_path), _tiny(tmp_path), name="smollm2-135m-instruct")
    assert "--name" in err.value.hint and "shipped" in err.value.message
    assert _written(tmp_path) == []


def test_readding_another_file_under_a_name_needs_force(tmp_path):
    from edge_runtime.models.user import add_model

    add_model(_store(tmp_path), _tiny(tmp_path), name="mine")
    other = _tiny(tmp_path, "llama", "Q5_0", "other.gguf")
    with pytest.raises(ConfigError) as err:
        add_model(_store(tmp_path), other, name="mine")
    assert "--force" in err.value.hint
    add_model(_store(tmp_path), other, name="mine", force=True)
    store = _store(tmp_path)
    assert store.entry("mine").files[0].name == "other.gguf"
    text = (tmp_path / "home" / "models" / "user-manifest.toml").read_text()
    assert text.count("[[model]]") == 1
    assert sorted(p.name for p in store.files_dir("mine").iterdir()) == [
        "other.gguf", "other.gguf.verified"]          # the replaced file is gone


@pytest.mark.parametrize("content", [b"not a gguf at all" * 10, b"GGUF" + b"\x00" * 64])
def test_garbage_is_a_typed_error_before_anything_is_written(tmp_path, content):
    from edge_runtime.models.user import add_model

    p = tmp_path / "bad.gguf"
    p.write_bytes(content)
    with pytest.raises(ModelLoadError):
        add_model(_store(tmp_path), p)
    assert _written(tmp_path) == []


def test_truncated_gguf_is_a_typed_error_before_anything_is_written(tmp_path):
    from edge_runtime.models.user import add_model

    src = _tiny(tmp_path)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    with pytest.raises(ModelLoadError) as err:
        add_model(_store(tmp_path), cut)
    assert _written(tmp_path) == []
    # the user's own file: the fix is to download it again, not `models pull` (shipped only)
    assert "truncated" in err.value.message and "models pull" not in err.value.hint
    assert "download the .gguf again" in err.value.hint


def test_unsupported_architecture_is_rejected_with_the_supported_list(tmp_path):
    from edge_runtime.models.user import add_model
    from tests.unit.test_llm_builder_errors import _write_bare

    p = _write_bare(tmp_path / "mamba.gguf", "mamba")
    with pytest.raises(ModelLoadError) as err:
        add_model(_store(tmp_path), p)
    assert "'mamba'" in err.value.message and "llama, qwen2" in err.value.message
    assert _written(tmp_path) == []


def test_a_failed_build_leaves_no_entry_and_no_file(tmp_path, monkeypatch):
    from edge_runtime.models.user import add_model

    store = _store(tmp_path)

    def boom(name, force=False):
        raise ModelLoadError("disk full")
    monkeypatch.setattr(store, "build", boom)
    with pytest.raises(ModelLoadError):
        add_model(store, _tiny(tmp_path), name="mine")
    assert _written(tmp_path) == []
    assert "mine" not in store.manifest


def test_cli_models_add(tmp_path, capsys):
    from edge_runtime.cli import main

    src = _tiny(tmp_path, "llama", "Q8_0", "tiny-llama.gguf")
    home = f"paths.home={tmp_path / 'home'}"
    assert main(["models", "add", str(src), "--name", "tl", "--json", "--set", home]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "tl" and out["architecture"] == "llama"
    assert main(["models", "list", "tl", "--json", "--set", home]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["built"] is True
    assert main(["models", "add", str(src), "--name", "whisper-tiny-en", "--set", home]) != 0
    assert "--name" in capsys.readouterr().err


def test_cli_models_check_json_prints_top1_agreement(tmp_path, capsys):
    from edge_runtime.cli import main

    src = _tiny(tmp_path, "llama", "Q8_0", "tiny-llama.gguf")
    home = f"paths.home={tmp_path / 'home'}"
    assert main(["models", "add", str(src), "--name", "tl", "--set", home]) == 0
    capsys.readouterr()
    assert main(["models", "check", "tl", "--json", "--set", home]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] == "tl" and 0.9 <= report["top1_agreement"] <= 1.0


def test_cli_models_check_on_a_text_of_ones_own(tmp_path, capsys):
    from edge_runtime.cli import main

    src = _tiny(tmp_path, "llama", "Q8_0", "tiny-llama.gguf")
    home = f"paths.home={tmp_path / 'home'}"
    assert main(["models", "add", str(src), "--name", "tl", "--set", home]) == 0
    capsys.readouterr()
    assert main(["models", "check", "tl", "--set", home]) == 0
    default = json.loads(capsys.readouterr().out)["tokens"]
    text = tmp_path / "mine.txt"
    text.write_text("Turn on the kitchen lights. " * 3, encoding="utf-8")
    assert main(["models", "check", "tl", "--text", str(text), "--set", home]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tokens"] != default and 0.0 <= report["top1_agreement"] <= 1.0
    (tmp_path / "empty.txt").write_text(" \n", encoding="utf-8")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    for name, says in (("empty.txt", "is empty"), ("none.txt", "cannot read"),
                       ("latin1.txt", "cannot read")):
        assert main(["models", "check", "tl", "--text", str(tmp_path / name),
                     "--set", home]) != 0
        assert says in capsys.readouterr().err


def test_cli_models_check_on_a_gpu_provider_this_onnxruntime_lacks_names_the_fix(
        tmp_path, capsys):
    import onnxruntime as ort

    from edge_runtime.cli import main
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA provider")
    src = _tiny(tmp_path, "llama", "Q8_0", "tiny-llama.gguf")
    home = f"paths.home={tmp_path / 'home'}"
    assert main(["models", "add", str(src), "--name", "tl", "--set", home]) == 0
    capsys.readouterr()
    assert main(["models", "check", "tl", "--provider", "cpu", "--json", "--set", home]) == 0
    assert json.loads(capsys.readouterr().out)["provider"] == "cpu"
    assert main(["models", "check", "tl", "--provider", "cuda", "--set", home]) != 0
    err = capsys.readouterr().err
    assert "could not start its cuda provider" in err and "onnxruntime-gpu" in err


def test_a_failed_replacement_keeps_the_previous_model(tmp_path, monkeypatch):
    from edge_runtime.models.user import add_model

    add_model(_store(tmp_path), _tiny(tmp_path), name="mine")
    store = _store(tmp_path)
    built = store.built_dir("mine") / "model.onnx"
    before = built.read_bytes()

    def boom(name, force=False):
        raise ModelLoadError("disk full")
    monkeypatch.setattr(store, "build", boom)
    with pytest.raises(ModelLoadError):
        add_model(store, _tiny(tmp_path, "llama", "Q5_0", "other.gguf"), name="mine",
                  force=True)
    assert built.read_bytes() == before
    fresh = _store(tmp_path)
    assert fresh.entry("mine").files[0].name == "My-Tiny-Qwen.Q4_K.gguf"
    assert fresh.status("mine")["files"] == {"My-Tiny-Qwen.Q4_K.gguf": "verified"}
    assert not (fresh.files_dir("mine") / "other.gguf").exists()


def test_a_failed_same_file_name_replacement_keeps_the_old_source(tmp_path, monkeypatch):
    from edge_runtime.models.user import add_model

    add_model(_store(tmp_path), _tiny(tmp_path), name="mine")
    store = _store(tmp_path)
    monkeypatch.setattr(store, "build", lambda name, force=False: (_ for _ in ()).throw(
        ModelLoadError("disk full")))
    newer = tmp_path / "v2"
    newer.mkdir()
    from tests.gguf_fixtures import write_arch_gguf
    write_arch_gguf(newer / "My-Tiny-Qwen.Q4_K.gguf", "qwen2", "Q4_K", seed=7)
    with pytest.raises(ModelLoadError):
        add_model(store, newer / "My-Tiny-Qwen.Q4_K.gguf", name="mine", force=True)
    st = _store(tmp_path).status("mine")
    assert st["files"] == {"My-Tiny-Qwen.Q4_K.gguf": "verified"} and st["built"] is True

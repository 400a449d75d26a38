"""Manifest files without a published sha256 (pin = "first-download"): the first pull is
trusted, said so in a warning and pinned; later pulls and checks must match the pin. The
source is a real file:// URL (urllib fetches it like an https one)."""
from __future__ import annotations

import logging
import shutil

import pytest

from edge_runtime.config import load_config
from edge_runtime.errors import ConfigError, ModelMissingError
from edge_runtime.models.store import ModelStore, PullError, load_manifest, sha256_file


def _store(tmp_path, content: bytes, pin: str = 'pin = "first-download"'):
    src = tmp_path / "src" / "weights.gguf"
    src.parent.mkdir(exist_ok=True)
    src.write_bytes(content)
    manifest = tmp_path / "manifest.toml"
    manifest.write_text('[[model]]\nname = "m"\nrole = "llm"\nlicence = "MIT"\n'
                        f'url = "{src.as_uri()}"\n\n[[model.files]]\npath = "weights.gguf"\n'
                        f"{pin}\n")
    cfg = load_config(env={}).with_overrides(paths={"home": str(tmp_path / "home"),
                                                    "manifest": str(manifest)})
    return ModelStore(cfg), src


def test_first_pull_is_trusted_loudly_and_pinned(tmp_path, caplog):
    store, src = _store(tmp_path, b"first weights " * 500)
    assert store.status("m")["files"] == {"weights.gguf": "missing"}
    with pytest.raises(ModelMissingError):
        store.require_source("m")
    with caplog.at_level(logging.WARNING, logger="edge_runtime.models.store"):
        (path,) = store.pull("m")
    sha = sha256_file(src)
    assert "no published sha256" in caplog.text and sha in caplog.text
    assert store.expected_sha("m", store.entry("m").files[0]) == sha
    status = store.status("m")
    assert status["files"] == {"weights.gguf": "verified"}
    assert status["pinned_on_first_download"] == ["weights.gguf"]
    assert store.require_source("m") == path


def test_a_changed_source_or_file_is_refused_after_the_pin(tmp_path):
    store, src = _store(tmp_path, b"first weights " * 500)
    (path,) = store.pull("m")
    src.write_bytes(b"other weights " * 500)            # the URL now serves something else
    with pytest.raises(PullError, match="first download, pinned"):
        store.pull("m", force=True)
    assert store.require_source("m") == path            # the pinned file is kept
    shutil.copyfile(src, path)                          # the stored file swapped in place
    assert store.status("m")["files"] == {"weights.gguf": "corrupt"}
    with pytest.raises(ModelMissingError, match="corrupt"):
        store.require_source("m")


def test_a_file_needs_a_sha256_or_the_explicit_pin(tmp_path):
    with pytest.raises(ConfigError, match="needs a sha256"):
        _store(tmp_path, b"x", pin="")


def test_shipped_url_entries_are_pinned_on_first_download_and_not_defaults():
    urls = [e for e in load_manifest().values() if e.url]
    assert {e.name for e in urls} >= {"qwen2.5-0.5b-instruct", "qwen2.5-1.5b-instruct",
                                      "llama-3.2-1b-instruct", "smollm2-360m-instruct",
                                      "smollm2-1.7b-instruct", "gemma-3-1b-it"}
    for e in urls:
        assert e.role == "llm" and e.build == "gguf2onnx" and not e.default
        assert e.url.startswith("https://") and e.url.endswith(e.files[0].name)
        assert e.files[0].sha256 or e.files[0].pin == "first-download"

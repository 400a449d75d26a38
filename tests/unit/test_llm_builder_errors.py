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

"""Shared fixtures. Integration tests need the built model: `make models` (CI does it)."""
from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The built SmolLM2 ONNX directory (EDGE_TEST_MODEL_DIR, else the default store)."""
    env = os.environ.get("EDGE_TEST_MODEL_DIR")
    if env:
        d = Path(env)
    else:
        from edge_runtime.config import load_config
        from edge_runtime.models.store import ModelStore
        d = ModelStore(load_config(env={})).built_dir("smollm2-135m-instruct")
    if not (d / "model.onnx").is_file():
        pytest.fail(f"no built model in {d}: run `make models` (or set EDGE_TEST_MODEL_DIR)")
    return d


@pytest.fixture(scope="session")
def tiny_llm(tmp_path_factory) -> Path:
    """A tiny random llama (:func:`tests.llm_fixtures.write_tiny_gguf`) built with exact
    blocks (accuracy level 1): its ONNX directory, the GGUF beside it as ``tiny.gguf``.
    Built once per run; tests only read it."""
    pytest.importorskip("gguf")
    pytest.importorskip("onnx")
    from edge_runtime.models.gguf2onnx import build_llm
    from tests.llm_fixtures import write_tiny_gguf
    d = tmp_path_factory.mktemp("tiny_llm")
    build_llm(write_tiny_gguf(d / "tiny.gguf"), d / "onnx", accuracy_level=1,
              lm_head_accuracy_level=1)
    return d / "onnx"

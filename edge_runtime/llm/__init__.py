"""Local LLM: a synchronous streaming engine on onnxruntime.

``load_engine(model_dir, providers=..., threads=...)`` opens a model built by
``edge-runtime models build`` (see :mod:`edge_runtime.models.gguf2onnx`).
"""
from __future__ import annotations

from .base import LlmEngine
from .onnx_engine import OnnxLlmEngine, load_engine

__all__ = ["LlmEngine", "OnnxLlmEngine", "load_engine"]

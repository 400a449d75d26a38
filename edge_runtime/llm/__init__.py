"""Local LLM: a synchronous streaming engine on onnxruntime.

``load_engine(model_dir, providers=..., threads=..., max_batch=...)`` opens a model built by
``edge-runtime models build`` (see :mod:`edge_runtime.models.gguf2onnx`); ``max_batch`` > 1
gives a :class:`BatchingEngine` (many caller threads, batched decode steps).
:class:`ConversationStore` keeps multi-turn dialogue under a token budget.
"""
from __future__ import annotations

from .base import LlmEngine
from .batching import BatchingEngine
from .conversation import ConversationStore, Turn
from .onnx_engine import OnnxLlmEngine, load_engine

__all__ = ["BatchingEngine", "ConversationStore", "LlmEngine", "OnnxLlmEngine", "Turn",
           "load_engine"]

"""Local LLM: a synchronous streaming engine on onnxruntime.

``load_engine(model_dir, providers=..., threads=..., max_batch=...)`` opens a model built by
``edge-runtime models build`` (see :mod:`edge_runtime.models.gguf2onnx`); ``max_batch`` > 1
gives a :class:`BatchingEngine` (many caller threads, batched decode steps; ``llm.max_batch
= 0`` is resolved to the device profile's first: ``DeviceProfile.llm_max_batch``).
:class:`ConversationStore` keeps multi-turn dialogue under a token budget.

Every engine has the same load API for the scheduler: ``capacity``, ``batch_target``,
``active``, ``queued``, ``step_time_s(batch)``, ``prefill_time_s(tokens)`` (see
:mod:`edge_runtime.llm.batching`; the plain engines answer for one session at a time).
"""
from __future__ import annotations

from .base import LlmEngine
from .batching import BatchingEngine
from .conversation import ConversationStore, Turn
from .onnx_engine import OnnxLlmEngine, load_engine

__all__ = ["BatchingEngine", "ConversationStore", "LlmEngine", "OnnxLlmEngine", "Turn",
           "load_engine"]

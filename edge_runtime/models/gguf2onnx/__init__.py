"""GGUF -> ONNX builder for llama, qwen2, qwen3, gemma3 and phi3 decoders (gguf, onnx, numpy).

``build_llm(gguf_path, out_dir)`` writes model.onnx, tokenizer.json and model_config.json;
``check_fidelity(gguf_path, model_dir)`` compares the result with an fp32 numpy reference.
"""
from __future__ import annotations

from .build import BUILDER_VERSION, build_llm
from .reference import check_fidelity

__all__ = ["BUILDER_VERSION", "build_llm", "check_fidelity"]

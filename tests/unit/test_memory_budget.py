"""The device profile's memory budget, checked before the LLM is loaded."""
from __future__ import annotations

import json

import pytest

from edge_runtime.config import load_config
from edge_runtime.models.budget import (MB, MemoryBudgetError, check_llm_budget, llm_memory,
                                        voice_memory)

GEMMA_270M = {"num_layers": 18, "num_key_value_heads": 1, "head_dim": 256,
              "kv_cache_dtype": "float32", "model_file": "model.onnx",
              "external_data_file": "model.onnx.data"}


def _model_dir(tmp_path, weights_mb: int, **mc):
    d = tmp_path / "home" / "models" / "m" / "onnx"
    d.mkdir(parents=True)
    (d / "model_config.json").write_text(json.dumps({**GEMMA_270M, **mc}))
    (d / "model.onnx").write_bytes(b"x" * 1000)
    with open(d / "model.onnx.data", "wb") as f:      # sparse: only the size matters
        f.truncate(weights_mb * MB - 1000)
    (d / "tokenizer.json").write_text("{}")           # not weights: not counted
    return d


def _cfg(tmp_path, **sections):
    base = {"paths": {"home": str(tmp_path / "home")}, "voice": {"enabled": False}}
    for k, v in sections.items():
        base[k] = {**base.get(k, {}), **v}
    return load_config(overrides=base, env={})


def test_llm_memory_is_weights_plus_kv_at_the_context(tmp_path):
    d = _model_dir(tmp_path, 500)
    m = llm_memory(d, context_tokens=32768)
    assert m.weights == 500 * MB
    assert m.kv_cache == 18 * 2 * 1 * 256 * 32768 * 4          # 1.125 GiB
    assert m.total == m.weights + m.kv_cache and m.tokens == 32768
    half = llm_memory(_model_dir(tmp_path / "b", 1, kv_cache_dtype="float16"),
                      context_tokens=1024)
    assert half.kv_cache == 18 * 2 * 256 * 1024 * 2


def test_micro_batching_holds_max_batch_sessions_of_the_batch_context(tmp_path):
    m = llm_memory(_model_dir(tmp_path, 1), context_tokens=4096, max_batch=4,
                   batch_context_tokens=1024)
    assert m.tokens == 4 * 1024 and m.kv_cache == 18 * 2 * 256 * 4096 * 4


def test_over_budget_names_model_numbers_setting_and_fix(tmp_path):
    d = _model_dir(tmp_path, 500)
    cfg = _cfg(tmp_path, device={"profile": "orin-nano-8gb", "memory_budget_mb": 1536},
               llm={"model": "gemma3-270m", "context_tokens": 32768, "max_batch": 1})
    with pytest.raises(MemoryBudgetError) as err:
        check_llm_budget(cfg, d)
    msg = err.value.message
    assert msg.startswith("gemma3-270m needs 1.61 GB (weights 500 MB + KV cache 1.12 GB at "
                          "llm.context_tokens 32768)")
    assert "device.memory_budget_mb allows 1.50 GB for the LLM" in msg
    assert "lower llm.context_tokens" in err.value.hint
    assert err.value.code == "model_too_large"


def test_the_profile_budget_applies_by_default(tmp_path):
    d = _model_dir(tmp_path, 5000)
    cfg = _cfg(tmp_path, device={"profile": "x86-cpu"}, llm={"max_batch": 1})
    with pytest.raises(MemoryBudgetError) as err:
        check_llm_budget(cfg, d)
    assert "the x86-cpu profile allows 4.00 GB for the LLM" in err.value.message
    cfg = _cfg(tmp_path, device={"profile": "orin-nano-8gb"}, llm={"max_batch": 1})
    figures = check_llm_budget(cfg, d)              # 6000 MB: fits
    assert figures["weights"] == 5000 * MB and figures["budget"] == 6000 * MB


def test_batched_overflow_names_the_batch_settings(tmp_path):
    d = _model_dir(tmp_path, 100)
    cfg = _cfg(tmp_path, device={"memory_budget_mb": 200},
               llm={"max_batch": 8, "batch_context_tokens": 2048, "context_tokens": 2048})
    with pytest.raises(MemoryBudgetError) as err:
        check_llm_budget(cfg, d)
    assert "llm.max_batch 8 x llm.batch_context_tokens 2048" in err.value.message
    assert "llm.batch_context_tokens" in err.value.hint


def test_asr_and_tts_count_when_voice_is_on(tmp_path):
    d = _model_dir(tmp_path, 100)
    models = tmp_path / "home" / "models"
    asr = models / "whisper-tiny-en" / "files"
    asr.mkdir(parents=True)
    (asr / "model.bin").write_bytes(b"a" * 3 * MB)
    (asr / "model.bin.verified").write_text("stamp")    # not a model file
    tts = models / "piper-joe-medium" / "files"
    tts.mkdir(parents=True)
    (tts / "en_US-joe-medium.onnx").write_bytes(b"t" * 2 * MB)
    on = _cfg(tmp_path, voice={"enabled": True})
    assert voice_memory(on, models) == {"asr": 3 * MB, "tts": 2 * MB}
    assert voice_memory(_cfg(tmp_path), models) == {"asr": 0, "tts": 0}
    kv = 18 * 2 * 256 * 2048 * 4
    fits = 100 * MB + kv + 5 * MB
    tight = _cfg(tmp_path, voice={"enabled": True}, llm={"max_batch": 1},
                 device={"memory_budget_mb": fits // MB + 1})
    assert check_llm_budget(tight, d)["asr"] == 3 * MB
    over = _cfg(tmp_path, voice={"enabled": True}, llm={"max_batch": 1},
                device={"memory_budget_mb": fits // MB - 1})
    with pytest.raises(MemoryBudgetError) as err:
        check_llm_budget(over, d)
    assert "less ASR 3 MB and TTS 2 MB" in err.value.message


def test_negative_budget_is_a_config_error(tmp_path):
    from edge_runtime.errors import ConfigError
    with pytest.raises(ConfigError):
        _cfg(tmp_path, device={"memory_budget_mb": -1})


def test_load_llm_over_budget_serves_without_the_llm(tmp_path):
    from edge_runtime.models.store import ModelStore
    from edge_runtime.runtime import load_llm

    d = _model_dir(tmp_path, 100)
    cfg = _cfg(tmp_path, llm={"model_dir": str(d), "model": "big"},
               device={"memory_budget_mb": 50})
    engine, error = load_llm(cfg, ModelStore(cfg))
    assert engine is None and isinstance(error, MemoryBudgetError)
    assert error.message.startswith("big needs")

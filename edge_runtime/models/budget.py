"""The device profile's memory budget, checked before the LLM is loaded.

What the models take: the LLM's weights (the built ONNX files' sizes; onnxruntime maps
them), its KV cache at the configured context (layers x 2 x kv_heads x head_dim x tokens x
bytes per element; with micro-batching ``max_batch`` sessions of ``batch_context_tokens``
each), and the ASR and TTS model files when voice is on. Their sum must fit the profile's
``model_memory_mb`` (or ``device.memory_budget_mb`` when set); if it does not,
:class:`MemoryBudgetError` names what does not fit, the numbers and the fix, and the daemon
serves without the local LLM (``runtime.load_llm``).

The KV figure is an upper bound: sliding-window layers (gemma3) are counted at the full
context, as the engine allocates them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..config import Config
from ..errors import EdgeError, ModelLoadError

MB = 1 << 20
_BYTES = {"float32": 4, "float16": 2, "fp16": 2, "bfloat16": 2, "int8": 1}


class MemoryBudgetError(EdgeError):
    code, stage, http_status = "model_too_large", "models", 503


@dataclass(frozen=True)
class LlmMemory:
    weights: int          # bytes
    kv_cache: int         # bytes
    tokens: int           # KV positions held at most (all sessions)

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache


def _gb(n: float) -> str:
    return f"{n / (1 << 30):.2f} GB" if n >= 1 << 30 else f"{n / MB:.0f} MB"


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir()
                   if p.is_file() and not p.name.endswith(".verified"))
    return 0


def llm_memory(model_dir: Path, *, context_tokens: int, max_batch: int = 1,
               batch_context_tokens: int = 1024) -> LlmMemory:
    """Weights + KV cache of the model built in ``model_dir`` at the given context."""
    try:
        mc = json.loads((model_dir / "model_config.json").read_text())
        per_token = (int(mc["num_layers"]) * 2 * int(mc["num_key_value_heads"])
                     * int(mc["head_dim"]) * _BYTES.get(str(mc.get("kv_cache_dtype")), 4))
        files = [mc.get("model_file", "model.onnx"), mc.get("external_data_file", "")]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelLoadError(f"cannot read the model config in {model_dir}: {exc}",
                             hint="rebuild it: `edge-runtime models build --force`") from None
    weights = sum(_size(model_dir / f) for f in files if f)
    tokens = context_tokens if max_batch <= 1 else \
        max_batch * min(context_tokens, batch_context_tokens)
    return LlmMemory(weights=weights, kv_cache=per_token * tokens, tokens=tokens)


def voice_memory(cfg: Config, models_dir: Path) -> dict[str, int]:
    """Bytes of the ASR and TTS models the daemon loads with voice on (0: none, or absent)."""
    if not cfg.voice.enabled:
        return {"asr": 0, "tts": 0}
    asr = Path(cfg.asr.model_dir).expanduser() if cfg.asr.model_dir else \
        models_dir / "whisper-tiny-en" / "files" if cfg.asr.backend == "whisper" else None
    tts = Path(cfg.tts.model_path).expanduser() if cfg.tts.model_path else \
        models_dir / "piper-joe-medium" / "files" / "en_US-joe-medium.onnx" \
        if cfg.tts.backend == "piper" else None
    return {"asr": _size(asr) if asr else 0, "tts": _size(tts) if tts else 0}


def check_llm_budget(cfg: Config, model_dir: Path) -> dict:
    """Raise MemoryBudgetError when LLM + ASR + TTS exceed the device's model budget;
    return the figures (bytes) otherwise."""
    from ..device import get_profile

    profile = get_profile(cfg.device.profile)
    budget_mb = cfg.device.memory_budget_mb or profile.model_memory_mb
    c = cfg.llm
    llm = llm_memory(model_dir, context_tokens=c.context_tokens,
                     max_batch=profile.llm_max_batch(c.max_batch),
                     batch_context_tokens=c.batch_context_tokens)
    voice = voice_memory(cfg, cfg.paths.models_dir)
    budget = budget_mb * MB
    left = budget - voice["asr"] - voice["tts"]
    figures = {"budget": budget, "weights": llm.weights, "kv_cache": llm.kv_cache, **voice}
    if llm.total <= left:
        return figures
    if max(profile.llm_max_batch(c.max_batch), 1) > 1:
        ctx = (f"{llm.tokens} tokens: llm.max_batch {profile.llm_max_batch(c.max_batch)} x "
               f"llm.batch_context_tokens {min(c.context_tokens, c.batch_context_tokens)}")
        fix = "lower llm.batch_context_tokens or llm.max_batch, or pick a smaller llm.model"
    else:
        ctx = f"llm.context_tokens {c.context_tokens}"
        fix = "lower llm.context_tokens or pick a smaller llm.model"
    source = "device.memory_budget_mb" if cfg.device.memory_budget_mb else \
        f"the {profile.name} profile"
    raise MemoryBudgetError(
        f"{c.model} needs {_gb(llm.total)} (weights {_gb(llm.weights)} + KV cache "
        f"{_gb(llm.kv_cache)} at {ctx}) but {source} allows {_gb(max(left, 0))} for the LLM "
        f"({_gb(budget)} for all models, less ASR {_gb(voice['asr'])} and TTS "
        f"{_gb(voice['tts'])})", hint=fix)

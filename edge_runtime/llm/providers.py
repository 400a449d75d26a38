"""Map provider names to onnxruntime execution providers and open sessions with fallback.

ONNX Runtime silently drops a provider it cannot initialise; :func:`open_session` checks
``session.get_providers()`` and treats a silent drop as a failure, so the device it
reports is the one actually running the model.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ModelLoadError, ProviderError
from ..onnx_session import build_session

log = logging.getLogger(__name__)

EP_NAMES = {"tensorrt": "TensorrtExecutionProvider", "cuda": "CUDAExecutionProvider",
            "cpu": "CPUExecutionProvider"}
DEVICE_OF_EP = {v: k for k, v in EP_NAMES.items()}
BUILD_HINT = "run `edge-runtime models build` to (re)build the local LLM"
ORT_GPU_HINT = "pip install onnxruntime-gpu; on Jetson, NVIDIA's wheel for your JetPack"
_DROPPED_HINTS = {
    "tensorrt": "this onnxruntime has the TensorRT provider but TensorRT's own libraries "
                "(libnvinfer) did not load: install the TensorRT of onnxruntime-gpu's CUDA "
                "major (x86: pip install tensorrt-cu12 or tensorrt-cu13; Jetson: JetPack's "
                "libnvinfer) with its lib folder on LD_LIBRARY_PATH, or take tensorrt out of "
                "the provider order",
    "cuda": "this onnxruntime has the CUDA provider but CUDA's or cuDNN's libraries did not "
            "load: pip install 'onnxruntime-gpu[cuda,cudnn]' (or put the CUDA runtime, cuBLAS, "
            "cuFFT, cuRAND and cuDNN 9 of its CUDA major on LD_LIBRARY_PATH), or take cuda "
            "out of the provider order",
}


def dropped_hint(name: str) -> str:
    """The fix when onnxruntime offers provider ``name`` but drops it at load (its GPU
    libraries are missing: onnxruntime's own log line names the file)."""
    return _DROPPED_HINTS.get(name, "check onnxruntime's log above for the library it "
                                    "could not load")


def provider_hint(name: str) -> str:
    """The fix when a session did not start on provider ``name``: the GPU build of
    onnxruntime when this one lacks the provider, else :func:`dropped_hint`."""
    import onnxruntime as ort
    if EP_NAMES.get(name) not in ort.get_available_providers():
        return ORT_GPU_HINT
    return dropped_hint(name)


@dataclass
class OpenedSession:
    session: Any
    device: str                  # "tensorrt" | "cuda" | "cpu"
    providers: list[str]         # what session.get_providers() reports
    remaining: list[str]         # provider names still available for fallback


def available(names: Sequence[str]) -> list[str]:
    """``names`` filtered by what this onnxruntime build offers (order kept)."""
    import onnxruntime as ort

    have = set(ort.get_available_providers())
    out = []
    for n in names:
        if n not in EP_NAMES:
            raise ConfigError(f"unknown provider {n!r}; use tensorrt, cuda or cpu",
                              hint="fix llm.providers in the config")
        if EP_NAMES[n] in have:
            out.append(n)
        else:
            log.info("provider %s not available in this onnxruntime build; skipped", n)
    return out


def model_precision(names: Sequence[str]) -> str:
    """The build variant for a provider order: "fp16" when the first provider this
    onnxruntime offers is CUDA or TensorRT (their GroupQueryAttention is fp16-only), else
    "fp32"."""
    order = available(names)
    return "fp16" if order and order[0] in ("cuda", "tensorrt") else "fp32"


def trt_profiles(cfg: dict, max_len: int, max_batch: int = 1,
                 prefill_chunk: int = 64) -> dict[str, str]:
    """TensorRT explicit shape profiles (min / opt / max) for every decoder input.

    The KV buffers are bound whole ([B, kv_heads, max_len + 1, head_dim]: the engine's
    cache, shared past/present), tokens come 1..``prefill_chunk`` per call and batches
    1..``max_batch`` rows, so one profile covers prefill and decode without rebuilds."""
    kv, hd, cap = int(cfg["num_key_value_heads"]), int(cfg["head_dim"]), int(max_len) + 1
    b, s = max(1, int(max_batch)), int(prefill_chunk)
    shapes = {"min": {"input_ids": (1, 1), "position_ids": (1, 1), "attention_mask": (1, 1)},
              "opt": {"input_ids": (1, 1), "position_ids": (1, 1),
                      "attention_mask": (1, min(cap, 256))},
              "max": {"input_ids": (b, s), "position_ids": (b, s), "attention_mask": (b, cap)}}
    past = {"min": (1, kv, 1, hd), "opt": (1, kv, cap, hd), "max": (b, kv, cap, hd)}
    out = {}
    for level in ("min", "opt", "max"):
        items: dict[str, tuple[int, ...]] = dict(shapes[level])
        for i in range(int(cfg["num_layers"])):
            for kind in ("key", "value"):
                items[f"past_key_values.{i}.{kind}"] = past[level]
        out[f"trt_profile_{level}_shapes"] = ",".join(
            f"{k}:{'x'.join(str(d) for d in v)}" for k, v in items.items())
    return out


def _provider_list(name: str, cache_dir: Path | None,
                   profiles: dict[str, str] | None = None) -> list[Any]:
    """The onnxruntime providers argument for ``name``: TensorRT (FP16, engine and timing
    cache on disk, explicit shape profiles) over CUDA over CPU, CUDA over CPU, or CPU."""
    if name == "tensorrt":
        opts: dict[str, Any] = {"trt_fp16_enable": True}
        if cache_dir is not None:
            cache_dir.mkdir(parents=True, exist_ok=True)
            opts.update(trt_engine_cache_enable=True, trt_engine_cache_path=str(cache_dir),
                        trt_timing_cache_enable=True, trt_timing_cache_path=str(cache_dir))
        if profiles:
            opts.update(profiles)
        return [("TensorrtExecutionProvider", opts), "CUDAExecutionProvider",
                "CPUExecutionProvider"]
    if name == "cuda":
        return [("CUDAExecutionProvider", {"arena_extend_strategy": "kSameAsRequested"}),
                "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


provider_list = _provider_list     # the same options for the small models' GPU paths (gpu/)


def open_session(model_path: Path, names: Sequence[str], threads: int,
                 cache_dir: Path | None = None,
                 profiles: dict[str, str] | None = None, spin_us: int = 0,
                 custom_ops: Path | None = None) -> OpenedSession:
    """Try each provider in order; return the first session whose first provider is the
    requested one. Raise ModelLoadError when the file itself cannot be loaded on CPU.
    ``spin_us``: the intra-op threads' bounded busy-wait (onnx_session.spin_entries);
    ``custom_ops``: a custom-op library the graph needs (onnx_session.build_session)."""
    order = available(names) or ["cpu"]
    last_exc: Exception | None = None
    for i, name in enumerate(order):
        try:
            sess = build_session(model_path, threads=threads, stage="llm", what="LLM",
                                 providers=_provider_list(name, cache_dir, profiles),
                                 spin_us=spin_us, custom_ops=custom_ops)
        except ModelLoadError as exc:
            last_exc = exc
            log.warning("provider %s failed to load %s: %s", name, model_path.name,
                        exc.message)
            continue
        got = sess.get_providers()
        if got and got[0] == EP_NAMES[name]:
            log.info("LLM session on %s (providers %s)", name, got)
            return OpenedSession(sess, name, list(got), list(order[i + 1:]))
        log.warning("provider %s silently dropped by onnxruntime (got %s); trying next",
                    name, got)
        last_exc = ProviderError(f"onnxruntime could not start its {name} provider for "
                                 f"{model_path.name} (got {got})", hint=dropped_hint(name))
    if isinstance(last_exc, ProviderError):
        raise last_exc
    raise ModelLoadError(f"cannot load {model_path}: {last_exc}", hint=BUILD_HINT)

"""ONNX file -> TensorRT engine, through the engine cache.

:func:`load_or_build` looks the engine up by its key (GPU, TensorRT version, model sha256,
power mode, precision, profile); a file built for another key is rebuilt; a truncated or
corrupt one raises :class:`~edge_runtime.gpu.errors.EngineInvalidError` after moving it
aside (the caller serves on the next path; the next start rebuilds). A build runs with the
timing cache kept next to the engines, so a rebuild after a model change is quicker.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ..clock import SYSTEM_CLOCK, Clock
from .cuda import CudaMemory
from .engine_cache import EngineCache, EngineKey, KeyMismatch, file_sha256, power_mode
from .errors import EngineBuildError
from .shapes import ModelSpec
from .trt_api import TrtApi, TrtEngine

log = logging.getLogger(__name__)


@dataclass
class BuiltEngine:
    engine: TrtEngine
    key: EngineKey
    path: Path
    build_s: float           # 0.0 when it came from the cache
    cached: bool


def engine_key(api: TrtApi, cuda: CudaMemory, onnx_path: Path, spec: ModelSpec, *,
               fp16: bool, power: str | None = None) -> EngineKey:
    precision = "int8" if spec.int8 else ("fp16" if fp16 else "fp32")
    return EngineKey(model=spec.name, model_sha256=file_sha256(onnx_path),
                     gpu=cuda.device_name(), tensorrt=api.version,
                     power_mode=power_mode() if power is None else power,
                     precision=precision, profile=spec.profile.digest_text())


def load_or_build(api: TrtApi, cuda: CudaMemory, onnx_path: Path, spec: ModelSpec,
                  cache: EngineCache, *, fp16: bool = True, workspace_bytes: int = 256 << 20,
                  clock: Clock = SYSTEM_CLOCK, power: str | None = None) -> BuiltEngine:
    with cuda.activate():
        key = engine_key(api, cuda, onnx_path, spec, fp16=fp16, power=power)
    try:
        plan = cache.load(key)
    except KeyMismatch as exc:
        log.info("%s; rebuilding", exc)
        plan = None
    build_s, cached = 0.0, plan is not None
    if plan is None:
        log.info("building the TensorRT engine of %s (%s, %s); this takes a while once",
                 spec.name, onnx_path.name, key.precision)
        t0 = clock.monotonic()
        with cuda.activate():
            plan, timing = api.build(onnx_path, spec.profile, fp16=fp16, int8=spec.int8,
                                     workspace_bytes=workspace_bytes,
                                     timing_cache=cache.read_timing_cache(key))
        build_s = clock.monotonic() - t0
        cache.store(key, plan)
        cache.write_timing_cache(key, timing)
        log.info("TensorRT engine of %s built in %.1f s: %s", spec.name, build_s,
                 cache.engine_path(key))
    with cuda.activate():
        engine = api.deserialize(plan)
    if engine is None:
        if not cached:
            raise EngineBuildError(f"TensorRT {api.version} did not deserialize the engine "
                                   f"of {spec.name} it had just built")
        raise cache.reject(key, f"not deserializable by TensorRT {api.version} "
                                "(truncated or corrupt)")
    return BuiltEngine(engine, key, cache.engine_path(key), build_s, cached)

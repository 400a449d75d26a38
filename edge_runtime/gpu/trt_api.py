"""The TensorRT subset this project uses, behind one small interface (:class:`TrtApi`).

:class:`TensorRtApi` wraps the ``tensorrt`` module (TensorRT 8.6 or 10.x): ONNX parser into
an explicit-batch network, one optimisation profile, FP16 when the GPU has fast FP16, a
timing cache passed in and handed back, ``build_serialized_network``; and
``Runtime.deserialize_cuda_engine``. Engines are used through the name-based tensor API
only (``num_io_tensors``, ``get_tensor_name / mode / dtype``, ``set_input_shape``,
``set_tensor_address``, ``execute_async_v3``). Tests pass a fake object with this interface
(or a fake ``tensorrt`` module to ``TensorRtApi``).
"""
from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from .errors import EngineBuildError, GpuOutOfMemoryError, GpuUnavailableError
from .shapes import ShapeProfile

log = logging.getLogger(__name__)

INSTALL_HINT = ("pip install tensorrt-cu12 or tensorrt-cu13 on x86 (your CUDA's major); on "
                "Jetson it comes with JetPack: apt install python3-libnvinfer")
_OOM_WORDS = ("out of memory", "outofmemory", "cudaerrormemoryallocation",
              "requested amount of gpu memory", "failed to allocate")
_DYNAMIC_INT8_OPS = ("MatMulInteger", "DynamicQuantizeLinear", "ConvInteger")


@dataclass(frozen=True)
class TensorIO:
    name: str
    is_input: bool
    dtype: np.dtype


class TrtContext(Protocol):
    def set_input_shape(self, name: str, shape: Sequence[int]) -> bool: ...

    def get_tensor_shape(self, name: str) -> tuple[int, ...]: ...

    def set_tensor_address(self, name: str, ptr: int) -> bool: ...

    def execute_async_v3(self, stream_handle: int) -> bool: ...


class TrtEngine(Protocol):
    def io_tensors(self) -> list[TensorIO]: ...

    def create_context(self) -> TrtContext | None: ...


class TrtApi(Protocol):
    version: str

    def build(self, onnx_path: Path, profile: ShapeProfile, *, fp16: bool, int8: bool,
              workspace_bytes: int, timing_cache: bytes) -> tuple[bytes, bytes]:
        """(serialized engine, updated timing cache); raises EngineBuildError or
        GpuOutOfMemoryError with the parser's / builder's own words."""

    def deserialize(self, plan: bytes) -> TrtEngine | None: ...


def load_tensorrt(importer: Callable[[str], ModuleType] = importlib.import_module) -> TrtApi:
    try:
        trt = importer("tensorrt")
    except ImportError:
        raise GpuUnavailableError("tensorrt is not installed", hint=INSTALL_HINT) from None
    major = int(str(getattr(trt, "__version__", "0")).split(".")[0] or 0)
    if major < 8:
        raise GpuUnavailableError(f"tensorrt {trt.__version__} is too old (the name-based "
                                  "tensor API needs 8.6 or later)", hint=INSTALL_HINT)
    return TensorRtApi(trt)


def build_failure(messages: Sequence[str], what: str) -> EngineBuildError | GpuOutOfMemoryError:
    """The typed error for a failed build from TensorRT's logged errors: out of memory,
    ops TensorRT cannot parse (onnxruntime's dynamic INT8), or the first error."""
    text = " | ".join(messages[-3:]) or "no error was logged"
    low = text.lower()
    if any(w in low for w in _OOM_WORDS):
        return GpuOutOfMemoryError(f"GPU out of memory while building {what}: {text}",
                                   hint="free GPU memory (other models, the LLM) or lower "
                                        "gpu.workspace_mb")
    bad = [op for op in _DYNAMIC_INT8_OPS if op.lower() in low]
    if bad:
        return EngineBuildError(f"TensorRT cannot parse {what}: it has {bad[0]} "
                                "(onnxruntime's dynamic INT8)",
                                hint="an fp32 export builds; the onnxruntime providers serve "
                                     "this one")
    return EngineBuildError(f"TensorRT could not build {what}: {text}")


class _Engine:
    def __init__(self, trt: Any, engine: Any) -> None:
        self._trt, self._engine = trt, engine

    def io_tensors(self) -> list[TensorIO]:
        out = []
        for i in range(self._engine.num_io_tensors):
            name = self._engine.get_tensor_name(i)
            mode = self._engine.get_tensor_mode(name)
            dtype = np.dtype(self._trt.nptype(self._engine.get_tensor_dtype(name)))
            out.append(TensorIO(name, mode == self._trt.TensorIOMode.INPUT, dtype))
        return out

    def create_context(self) -> TrtContext | None:
        ctx = self._engine.create_execution_context()
        return None if ctx is None else _Context(ctx)


class _Context:
    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def set_input_shape(self, name: str, shape: Sequence[int]) -> bool:
        return bool(self._ctx.set_input_shape(name, tuple(int(d) for d in shape)))

    def get_tensor_shape(self, name: str) -> tuple[int, ...]:
        return tuple(int(d) for d in self._ctx.get_tensor_shape(name))

    def set_tensor_address(self, name: str, ptr: int) -> bool:
        return bool(self._ctx.set_tensor_address(name, int(ptr)))

    def execute_async_v3(self, stream_handle: int) -> bool:
        return bool(self._ctx.execute_async_v3(int(stream_handle)))


class TensorRtApi:
    """The real thing; ``trt`` is the imported ``tensorrt`` module."""

    def __init__(self, trt: Any) -> None:
        self._trt = trt
        self.version = str(trt.__version__)
        self._logger = _make_logger(trt)
        self._runtime: Any = None
        self._lock = threading.Lock()

    def build(self, onnx_path: Path, profile: ShapeProfile, *, fp16: bool, int8: bool,
              workspace_bytes: int, timing_cache: bytes) -> tuple[bytes, bytes]:
        trt, logger = self._trt, self._logger
        with self._lock:
            logger.errors.clear()
            builder = trt.Builder(logger)
            flags = 0
            if int(self.version.split(".")[0]) < 10:      # explicit batch is the default in 10
                flags = 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
            network = builder.create_network(flags)
            parser = trt.OnnxParser(network, logger)
            if not parser.parse_from_file(str(onnx_path)):
                errs = [str(parser.get_error(i)) for i in range(parser.num_errors)]
                raise build_failure(errs or logger.errors, onnx_path.name)
            config = builder.create_builder_config()
            config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace_bytes))
            if fp16 and builder.platform_has_fast_fp16:
                config.set_flag(trt.BuilderFlag.FP16)
            if int8:      # explicit (Q/DQ) quantization only: this project has no calibrator
                config.set_flag(trt.BuilderFlag.INT8)
            opt = builder.create_optimization_profile()
            for name, (lo, mid, hi) in profile.shapes.items():
                opt.set_shape(name, lo, mid, hi)
            config.add_optimization_profile(opt)
            cache = config.create_timing_cache(bytes(timing_cache))
            config.set_timing_cache(cache, ignore_mismatch=False)
            try:
                plan = builder.build_serialized_network(network, config)
            except (RuntimeError, MemoryError) as exc:
                raise build_failure([*logger.errors, str(exc)], onnx_path.name) from None
            if plan is None:
                raise build_failure(logger.errors, onnx_path.name)
            new_cache = bytes(config.get_timing_cache().serialize())
            return bytes(plan), new_cache

    def deserialize(self, plan: bytes) -> TrtEngine | None:
        with self._lock:
            if self._runtime is None:
                self._runtime = self._trt.Runtime(self._logger)
            engine = self._runtime.deserialize_cuda_engine(plan)
        return None if engine is None else _Engine(self._trt, engine)


def _make_logger(trt: Any) -> Any:
    """A ``trt.ILogger`` that keeps the errors of the current build (for the one line) and
    passes warnings and errors to this module's logger."""

    class _Logger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.errors: list[str] = []

        def log(self, severity: Any, msg: str) -> None:
            if severity in (trt.ILogger.ERROR, trt.ILogger.INTERNAL_ERROR):
                self.errors.append(str(msg))
                log.debug("tensorrt: %s", msg)
            elif severity == trt.ILogger.WARNING:
                log.debug("tensorrt: %s", msg)

    return _Logger()

"""Typed errors of the GPU paths: each says in one line why a model runs where it runs.

None of them reaches the daemon at start: :class:`~edge_runtime.gpu.accel.Accelerator`
catches every failure of an accelerated path, logs it once, counts it and moves to the next
path (the CPU session last), so ``code`` doubles as the metric's ``reason`` label.
"""
from __future__ import annotations

from ..errors import EdgeError


class GpuError(EdgeError):
    code, stage, retryable = "gpu_failed", "gpu", True


class GpuUnavailableError(GpuError):
    """A package or provider the path needs is missing (tensorrt, pycuda / cuda-python,
    onnxruntime-gpu's providers), or there is no GPU."""

    code = "unavailable"


class GpuOutOfMemoryError(GpuError):
    code = "out_of_memory"


class EngineBuildError(GpuError):
    """TensorRT could not parse the ONNX file or build an engine from it."""

    code = "build_failed"


class EngineInvalidError(GpuError):
    """A cached engine file is truncated, corrupt, or does not deserialize."""

    code = "engine_invalid"


class AgreementError(GpuError):
    """The accelerated outputs do not match the CPU onnxruntime outputs on fixed inputs."""

    code = "agreement"


class SlowerThanCpuError(GpuError):
    """The path agrees with the CPU but its calls take longer than the CPU session's
    (``gpu.max_slowdown``): the next path serves. A tiny model (Silero VAD) can cost more in
    kernel launches and copies than it saves."""

    code = "slower_than_cpu"


class GpuRunError(GpuError):
    code = "run_failed"


class ShapeOutOfProfileError(GpuRunError):
    """An input shape outside the engine's optimisation profile: this one call runs on the
    CPU session, the engine stays in use."""

    code = "shape_out_of_profile"


def reason_code(exc: BaseException) -> str:
    """The metric/health reason of any failure: a GpuError's code, else ``out_of_memory``
    when the message says so (pycuda, cudart and onnxruntime word it differently), else
    ``failed``."""
    if isinstance(exc, GpuError):
        return exc.code
    text = f"{type(exc).__name__} {exc}".lower()
    if "out of memory" in text or "memoryallocation" in text or "memoryerror" in text:
        return "out_of_memory"
    return "failed"

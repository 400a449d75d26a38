"""The small CUDA memory interface the TensorRT runner needs, and the choice of binding.

Two implementations stand behind :class:`CudaMemory`: pycuda (``cuda_pycuda``) and
NVIDIA's cuda-python runtime bindings (``cuda_cudart``, for boards where pycuda does not
build). :func:`load_cuda` takes pycuda when it imports, else cuda-python, else raises
:class:`~edge_runtime.gpu.errors.GpuUnavailableError` naming both ``pip install``\\ s.

Every call that touches the device runs inside ``activate()``: the device's *primary*
context is made current on the calling thread (VAD streams run on their own threads;
TensorRT and onnxruntime's CUDA provider use the primary context too, so buffers, streams
and engines all live in one context).
"""
from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Protocol

import numpy as np

from .errors import GpuUnavailableError

log = logging.getLogger(__name__)

Importer = Callable[[str], ModuleType]
INSTALL_HINT = "pip install pycuda (it builds against the CUDA toolkit), or pip install cuda-python"


class DeviceBuffer(Protocol):
    @property
    def ptr(self) -> int:
        """The device address, what ``set_tensor_address`` takes."""

    @property
    def nbytes(self) -> int: ...

    def free(self) -> None: ...


class CudaStream(Protocol):
    @property
    def handle(self) -> int:
        """What ``execute_async_v3`` takes."""

    def synchronize(self) -> None: ...


class CudaMemory(Protocol):
    name: str                # "pycuda" | "cuda-python"

    def device_name(self) -> str: ...

    def activate(self) -> AbstractContextManager[None]: ...

    def alloc(self, nbytes: int) -> DeviceBuffer: ...

    def pinned(self, count: int, dtype: np.dtype) -> np.ndarray:
        """A page-locked host array of ``count`` elements (async copies need one)."""

    def stream(self) -> CudaStream: ...

    def htod_async(self, dst: DeviceBuffer, src: np.ndarray, stream: CudaStream) -> None:
        """Copy the contiguous ``src`` (a view of pinned memory) to the start of ``dst``."""

    def dtoh_async(self, dst: np.ndarray, src: DeviceBuffer, stream: CudaStream) -> None:
        """Copy ``dst.nbytes`` from the start of ``src`` into ``dst`` (pinned)."""


def load_cuda(device: int = 0, importer: Importer = importlib.import_module) -> CudaMemory:
    """pycuda if it imports, else cuda-python; ``importer`` is ``importlib.import_module``
    (tests pass one that serves fake modules or raises ImportError)."""
    errors = []
    try:
        driver = importer("pycuda.driver")
    except ImportError as exc:
        errors.append(f"pycuda: {exc}")
    else:
        from .cuda_pycuda import PyCudaMemory
        return PyCudaMemory(driver, device)
    for name in ("cuda.bindings.runtime", "cuda.cudart"):   # cuda-python >= 12.6, older
        try:
            cudart = importer(name)
        except ImportError as exc:
            errors.append(f"{name}: {exc}")
            continue
        from .cuda_cudart import CudartMemory
        return CudartMemory(cudart, device)
    log.debug("no CUDA binding: %s", "; ".join(errors))
    raise GpuUnavailableError("neither pycuda nor cuda-python is installed", hint=INSTALL_HINT)

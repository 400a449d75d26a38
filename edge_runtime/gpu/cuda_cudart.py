""":class:`~edge_runtime.gpu.cuda.CudaMemory` on NVIDIA's cuda-python runtime bindings.

Every ``cudart`` call returns ``(error, *results)``; a non-success error raises
:class:`~edge_runtime.gpu.errors.GpuRunError` (or ``GpuOutOfMemoryError`` for
``cudaErrorMemoryAllocation``) naming the call. ``activate`` selects the device on the
calling thread (the runtime API then binds the device's primary context).
"""
from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import GpuOutOfMemoryError, GpuRunError


@dataclass
class _Buffer:
    ptr: int
    nbytes: int
    _mem: CudartMemory

    def free(self) -> None:
        self._mem.call("cudaFree", self.ptr)


@dataclass
class _Stream:
    stream: Any              # cudaStream_t
    _mem: CudartMemory

    @property
    def handle(self) -> int:
        return int(self.stream)

    def synchronize(self) -> None:
        self._mem.call("cudaStreamSynchronize", self.stream)


class CudartMemory:
    name = "cuda-python"

    def __init__(self, cudart: Any, device: int = 0) -> None:
        self._rt = cudart
        self._device = int(device)
        self._host: list[int] = []          # page-locked blocks, freed with the process

    def call(self, fn: str, *args: Any) -> Any:
        out = getattr(self._rt, fn)(*args)
        err, rest = (out[0], out[1:]) if isinstance(out, tuple) else (out, ())
        if err != self._rt.cudaError_t.cudaSuccess:
            text = f"{fn} failed: {err}"
            if "MemoryAllocation" in str(err):
                raise GpuOutOfMemoryError(text, hint="free GPU memory or lower gpu.workspace_mb")
            raise GpuRunError(text)
        return rest[0] if len(rest) == 1 else rest

    def device_name(self) -> str:
        props = self.call("cudaGetDeviceProperties", self._device)
        name = props.name
        return (name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name))

    @contextmanager
    def activate(self) -> Iterator[None]:
        self.call("cudaSetDevice", self._device)
        yield

    def alloc(self, nbytes: int) -> _Buffer:
        return _Buffer(int(self.call("cudaMalloc", max(1, int(nbytes)))), int(nbytes), self)

    def pinned(self, count: int, dtype: np.dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        count = max(1, int(count))
        ptr = int(self.call("cudaMallocHost", count * dtype.itemsize))
        self._host.append(ptr)
        raw = (ctypes.c_ubyte * (count * dtype.itemsize)).from_address(ptr)
        return np.frombuffer(raw, dtype=np.uint8).view(dtype)  # type: ignore[call-overload]

    def stream(self) -> _Stream:
        return _Stream(self.call("cudaStreamCreate"), self)

    def htod_async(self, dst: Any, src: np.ndarray, stream: Any) -> None:
        self.call("cudaMemcpyAsync", dst.ptr, src.ctypes.data, src.nbytes,
                  self._rt.cudaMemcpyKind.cudaMemcpyHostToDevice, stream.stream)

    def dtoh_async(self, dst: np.ndarray, src: Any, stream: Any) -> None:
        self.call("cudaMemcpyAsync", dst.ctypes.data, src.ptr, dst.nbytes,
                  self._rt.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream.stream)

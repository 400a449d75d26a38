""":class:`~edge_runtime.gpu.cuda.CudaMemory` on pycuda (``pycuda.driver``).

No ``pycuda.autoinit``: that creates a private context on import, bound to the importing
thread; here the device's primary context is retained once and pushed around each use.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class _Buffer:
    alloc: Any               # pycuda DeviceAllocation
    nbytes: int

    @property
    def ptr(self) -> int:
        return int(self.alloc)

    def free(self) -> None:
        self.alloc.free()


@dataclass
class _Stream:
    stream: Any              # pycuda Stream

    @property
    def handle(self) -> int:
        return int(self.stream.handle)

    def synchronize(self) -> None:
        self.stream.synchronize()


class PyCudaMemory:
    name = "pycuda"

    def __init__(self, driver: Any, device: int = 0) -> None:
        self._drv = driver
        driver.init()
        self._dev = driver.Device(device)
        self._ctx = self._dev.retain_primary_context()

    def device_name(self) -> str:
        return str(self._dev.name())

    @contextmanager
    def activate(self) -> Iterator[None]:
        self._ctx.push()
        try:
            yield
        finally:
            self._drv.Context.pop()

    def alloc(self, nbytes: int) -> _Buffer:
        return _Buffer(self._drv.mem_alloc(max(1, int(nbytes))), int(nbytes))

    def pinned(self, count: int, dtype: np.dtype) -> np.ndarray:
        return self._drv.pagelocked_empty(max(1, int(count)), dtype)

    def stream(self) -> _Stream:
        return _Stream(self._drv.Stream())

    def htod_async(self, dst: Any, src: np.ndarray, stream: Any) -> None:
        self._drv.memcpy_htod_async(dst.alloc, src, stream.stream)

    def dtoh_async(self, dst: np.ndarray, src: Any, stream: Any) -> None:
        self._drv.memcpy_dtoh_async(dst, src.alloc, stream.stream)

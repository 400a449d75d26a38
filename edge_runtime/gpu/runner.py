"""A TensorRT engine with the call shape of an onnxruntime session.

``TrtSession.run(output_names, feeds)`` returns the outputs as a list of numpy arrays, like
``InferenceSession.run``; ``get_inputs`` / ``get_outputs`` are the CPU session's (the same
graph), so callers such as the NLU encoder and Silero VAD need no change.

Buffers are allocated once at the profile's largest shapes: one device buffer and one
page-locked host buffer per I/O tensor. A run copies each input into its pinned buffer,
``set_input_shape`` + ``set_tensor_address`` (the name-based tensor API), queues the
host-to-device copies, ``execute_async_v3`` and the device-to-host copies on one CUDA
stream, synchronizes, and returns copies cast to the dtypes the ONNX graph declares (so a
state fed back into the CPU session after a fallback is still float32). One run at a time
(an execution context is not re-entrant).
"""
from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .cuda import CudaMemory
from .errors import GpuRunError, ShapeOutOfProfileError
from .shapes import ShapeProfile
from .trt_api import TensorIO, TrtEngine

ORT_DTYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16,
              "tensor(double)": np.float64, "tensor(int64)": np.int64,
              "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
              "tensor(bool)": np.bool_}


def _static_shape(arg: Any) -> tuple[int, ...] | None:
    dims = list(getattr(arg, "shape", None) or [])
    return tuple(dims) if all(isinstance(d, int) and d > 0 for d in dims) else None


class TrtSession:
    provider = "TensorRT"

    def __init__(self, engine: TrtEngine, cuda: CudaMemory, reference: Any,
                 profile: ShapeProfile) -> None:
        """``reference``: the CPU onnxruntime session of the same file (names, dtypes)."""
        self._engine, self._cuda, self._ref, self._profile = engine, cuda, reference, profile
        io = engine.io_tensors()
        self._inputs = [t for t in io if t.is_input]
        self._outputs = [t for t in io if not t.is_input]
        self._out_dtypes = {o.name: ORT_DTYPES.get(o.type) for o in reference.get_outputs()}
        ref_in = {i.name: i for i in reference.get_inputs()}
        self._lock = threading.Lock()
        self._dev: dict[str, Any] = {}
        self._host: dict[str, np.ndarray] = {}
        with cuda.activate():
            ctx = engine.create_context()
            if ctx is None:
                raise GpuRunError("TensorRT could not create an execution context "
                                  "(GPU memory?)")
            self._ctx = ctx
            self._stream = cuda.stream()
            for t in self._inputs:
                fixed = _static_shape(ref_in[t.name]) if t.name in ref_in else None
                if t.name not in profile.shapes and fixed is None:
                    raise GpuRunError(f"input {t.name} has a dynamic shape the model's "
                                      "profile does not bound")
                shape = profile.max_shape(t.name, fixed or ())
                if not ctx.set_input_shape(t.name, shape):
                    raise GpuRunError(f"engine refused input {t.name} at {shape}")
                self._allocate(t, shape)
            for t in self._outputs:
                shape = ctx.get_tensor_shape(t.name)
                if any(d < 0 for d in shape):
                    raise GpuRunError(f"output {t.name} has a data-dependent shape {shape}")
                self._allocate(t, shape)

    def _allocate(self, t: TensorIO, shape: Sequence[int]) -> None:
        count = max(1, math.prod(shape))
        self._host[t.name] = self._cuda.pinned(count, t.dtype)
        self._dev[t.name] = self._cuda.alloc(count * t.dtype.itemsize)

    # -- the onnxruntime session surface ----------------------------------------------
    def get_inputs(self) -> Any:
        return self._ref.get_inputs()

    def get_outputs(self) -> Any:
        return self._ref.get_outputs()

    def get_providers(self) -> list[str]:
        return [self.provider]

    def run(self, output_names: Sequence[str] | None, feeds: Mapping[str, Any],
            run_options: Any = None) -> list[np.ndarray]:
        names = list(output_names or [o.name for o in self._ref.get_outputs()])
        ctx, cuda, stream = self._ctx, self._cuda, self._stream
        with self._lock, cuda.activate():
            for t in self._inputs:
                if t.name not in feeds:
                    raise GpuRunError(f"input {t.name} was not given")
                arr = np.asarray(feeds[t.name])
                host = self._host[t.name]
                if not self._profile.admits(t.name, arr.shape) or arr.size > host.size:
                    raise ShapeOutOfProfileError(f"input {t.name} shape {arr.shape} is outside "
                                                 "the engine's profile")
                view = host[:arr.size].reshape(arr.shape)
                view[...] = arr
                if not ctx.set_input_shape(t.name, arr.shape):
                    raise ShapeOutOfProfileError(f"engine refused input {t.name} at {arr.shape}")
                cuda.htod_async(self._dev[t.name], view, stream)
                ctx.set_tensor_address(t.name, self._dev[t.name].ptr)
            for t in self._outputs:
                ctx.set_tensor_address(t.name, self._dev[t.name].ptr)
            if not ctx.execute_async_v3(stream.handle):
                raise GpuRunError("execute_async_v3 failed")
            views = {}
            for t in self._outputs:
                shape = ctx.get_tensor_shape(t.name)
                view = self._host[t.name][:max(1, math.prod(shape))].reshape(shape)
                cuda.dtoh_async(view, self._dev[t.name], stream)
                views[t.name] = view
            stream.synchronize()
            try:
                return [views[n].astype(self._out_dtypes.get(n) or views[n].dtype, copy=True)
                        for n in names]
            except KeyError as exc:
                raise GpuRunError(f"the engine has no output {exc}") from None

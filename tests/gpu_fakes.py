"""Fakes at the GPU edge: a device memory, a ``pycuda.driver``, a cuda-python ``cudart`` and a
``tensorrt`` module with the documented call shapes, so the real wrappers
(``gpu.cuda_pycuda``, ``gpu.cuda_cudart``, ``gpu.trt_api.TensorRtApi``) and everything above
them run here without a GPU.

The fake TensorRT "engine" runs the ONNX file on onnxruntime's CPU provider: inputs are read
from the fake device memory at the addresses the runner set, outputs written back, so the
runner's buffers, copies, shapes and dtype casts are exercised for real. Knobs: ``noise``
(added to float outputs, like FP16 error or a broken kernel), ``oom`` (the builder logs
TensorRT's out-of-memory error and returns None), ``parse_errors``, ``fail_runs``
(``execute_async_v3`` returns False), ``int32_ids`` (int64 inputs become int32 engine
inputs, as older parsers do).
"""
from __future__ import annotations

import ctypes
import json
import types
from collections.abc import Callable

import numpy as np


class FakeDevice:
    """Device memory: address -> bytearray."""

    def __init__(self, name: str = "Fake Orin (nvgpu)") -> None:
        self.name = name
        self.mem: dict[int, bytearray] = {}
        self._next = 0x1000

    def alloc(self, n: int) -> int:
        addr = self._next
        self._next += max(n, 1) + 256
        self.mem[addr] = bytearray(max(n, 1))
        return addr

    def write(self, addr: int, data: bytes) -> None:
        self.mem[addr][:len(data)] = data

    def read(self, addr: int, n: int) -> bytes:
        return bytes(self.mem[addr][:n])


# -- pycuda.driver ------------------------------------------------------------------------
def fake_pycuda(dev: FakeDevice) -> types.ModuleType:
    m = types.ModuleType("pycuda.driver")
    stack: list[object] = []

    class _Ctx:
        def push(self) -> None:
            stack.append(self)

    class Context:
        @staticmethod
        def pop() -> None:
            stack.pop()

    class Device:
        def __init__(self, i: int) -> None:
            self.i = i

        def name(self) -> str:
            return dev.name

        def retain_primary_context(self) -> _Ctx:
            return _Ctx()

    class DeviceAllocation:
        def __init__(self, n: int) -> None:
            assert stack, "allocation outside an active context"
            self.addr = dev.alloc(n)

        def __int__(self) -> int:
            return self.addr

        def free(self) -> None:
            dev.mem.pop(self.addr, None)

    class Stream:
        handle = 77

        def synchronize(self) -> None:
            assert stack, "stream used outside an active context"

    def memcpy_htod_async(dest, src, stream=None) -> None:
        dev.write(int(dest), np.ascontiguousarray(src).tobytes())

    def memcpy_dtoh_async(dest, src, stream=None) -> None:
        dest[...] = np.frombuffer(dev.read(int(src), dest.nbytes), dest.dtype).reshape(dest.shape)

    m.init = lambda: None
    m.Device, m.Context, m.Stream = Device, Context, Stream
    m.mem_alloc = DeviceAllocation
    m.pagelocked_empty = lambda shape, dtype: np.zeros(shape, dtype)
    m.memcpy_htod_async, m.memcpy_dtoh_async = memcpy_htod_async, memcpy_dtoh_async
    m.context_stack = stack
    return m


# -- cuda-python's cudart -------------------------------------------------------------------
def fake_cudart(dev: FakeDevice, *, fail: str = "") -> types.ModuleType:
    """``fail``: the name of a call that returns cudaErrorMemoryAllocation."""
    m = types.ModuleType("cuda.bindings.runtime")
    m.cudaError_t = types.SimpleNamespace(cudaSuccess=0,
                                          cudaErrorMemoryAllocation="cudaErrorMemoryAllocation")
    m.cudaMemcpyKind = types.SimpleNamespace(cudaMemcpyHostToDevice=1, cudaMemcpyDeviceToHost=2)
    host: list[np.ndarray] = []

    def ok(name: str, *value):
        if name == fail:
            return (m.cudaError_t.cudaErrorMemoryAllocation, *([None] * len(value)))
        return (0, *value)

    def cudaMallocHost(n):
        buf = np.zeros(n, np.uint8)
        host.append(buf)
        return ok("cudaMallocHost", buf.ctypes.data)

    def cudaMemcpyAsync(dst, src, count, kind, stream):
        if kind == 1:
            dev.write(dst, ctypes.string_at(src, count))
        else:
            ctypes.memmove(dst, dev.read(src, count), count)
        return (0,)

    m.cudaGetDeviceProperties = lambda i: ok("cudaGetDeviceProperties", types.SimpleNamespace(
        name=dev.name.encode() + b"\0\0\0"))
    m.cudaSetDevice = lambda i: (0,)
    m.cudaMalloc = lambda n: ok("cudaMalloc", dev.alloc(n))
    m.cudaFree = lambda p: (0,)
    m.cudaMallocHost = cudaMallocHost
    m.cudaStreamCreate = lambda: ok("cudaStreamCreate", 5)
    m.cudaStreamSynchronize = lambda s: (0,)
    m.cudaMemcpyAsync = cudaMemcpyAsync
    return m


# -- tensorrt -------------------------------------------------------------------------------
class TrtKnobs:
    def __init__(self) -> None:
        self.noise = 0.0
        self.oom = False
        self.parse_errors: list[str] = []
        self.fail_runs = False
        self.int32_ids = True
        self.builds = 0
        self.flags: set[str] = set()
        self.clock = None             # a FakeClock each run advances by run_s
        self.run_s = 0.0


def fake_tensorrt(dev: FakeDevice, knobs: TrtKnobs | None = None,
                  version: str = "10.3.0") -> types.ModuleType:
    import onnxruntime as ort

    k = knobs or TrtKnobs()
    m = types.ModuleType("tensorrt")
    m.__version__ = version
    m.knobs = k

    class ILogger:
        INTERNAL_ERROR, ERROR, WARNING, INFO = 0, 1, 2, 3

        def __init__(self) -> None:
            pass

    m.ILogger = ILogger
    m.TensorIOMode = types.SimpleNamespace(INPUT="input", OUTPUT="output")
    m.MemoryPoolType = types.SimpleNamespace(WORKSPACE="workspace")
    m.BuilderFlag = types.SimpleNamespace(FP16="fp16", INT8="int8")
    m.NetworkDefinitionCreationFlag = types.SimpleNamespace(EXPLICIT_BATCH=0)
    m.nptype = lambda dt: dt

    class Network:
        onnx = ""

    class OnnxParser:
        def __init__(self, network: Network, logger) -> None:
            self.network, self.num_errors = network, 0

        def parse_from_file(self, path: str) -> bool:
            self.network.onnx = path
            self.num_errors = len(k.parse_errors)
            return not k.parse_errors

        def get_error(self, i: int) -> str:
            return k.parse_errors[i]

    class TimingCache:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def serialize(self) -> bytes:
            return self.data + b"+"

    class Config:
        def __init__(self) -> None:
            self.profiles: list[dict] = []
            self.cache: TimingCache | None = None

        def set_memory_pool_limit(self, pool, n) -> None:
            self.workspace = n

        def set_flag(self, flag) -> None:
            k.flags.add(flag)

        def add_optimization_profile(self, p) -> None:
            self.profiles.append(p.shapes)

        def create_timing_cache(self, data: bytes) -> TimingCache:
            return TimingCache(data)

        def set_timing_cache(self, cache, ignore_mismatch) -> None:
            self.cache = cache

        def get_timing_cache(self) -> TimingCache:
            assert self.cache is not None
            return self.cache

    class Profile:
        def __init__(self) -> None:
            self.shapes: dict = {}

        def set_shape(self, name, lo, opt, hi) -> None:
            self.shapes[name] = [list(lo), list(opt), list(hi)]

    class Builder:
        platform_has_fast_fp16 = True

        def __init__(self, logger) -> None:
            self.logger = logger

        def create_network(self, flags) -> Network:
            return Network()

        def create_builder_config(self) -> Config:
            return Config()

        def create_optimization_profile(self) -> Profile:
            return Profile()

        def build_serialized_network(self, network: Network, config: Config):
            k.builds += 1
            if k.oom:
                self.logger.log(ILogger.ERROR, "[virtualMemoryBuffer.cpp::resizePhysical] "
                                "Error Code 2: OutOfMemory (Requested size was 268435456 bytes.)")
                return None
            plan = {"onnx": network.onnx, "profiles": config.profiles}
            return b"FAKEPLAN" + json.dumps(plan).encode()

    class Runtime:
        def __init__(self, logger) -> None:
            self.logger = logger

        def deserialize_cuda_engine(self, plan: bytes):
            if not plan.startswith(b"FAKEPLAN"):
                self.logger.log(ILogger.ERROR, "Serialization assertion failed (magic)")
                return None
            try:
                info = json.loads(plan[8:])
            except ValueError:
                return None
            return Engine(info)

    class Engine:
        def __init__(self, info: dict) -> None:
            self.sess = ort.InferenceSession(info["onnx"], providers=["CPUExecutionProvider"])
            self.io = [(i.name, "input", i.type) for i in self.sess.get_inputs()] + \
                      [(o.name, "output", o.type) for o in self.sess.get_outputs()]
            self.num_io_tensors = len(self.io)

        def get_tensor_name(self, i: int) -> str:
            return self.io[i][0]

        def get_tensor_mode(self, name: str) -> str:
            return next(mode for n, mode, _ in self.io if n == name)

        def get_tensor_dtype(self, name: str) -> np.dtype:
            t = next(t for n, _, t in self.io if n == name)
            if t == "tensor(int64)":
                return np.dtype(np.int32 if k.int32_ids else np.int64)
            return np.dtype({"tensor(float)": np.float32, "tensor(bool)": np.bool_}[t])

        def create_execution_context(self):
            return Context(self)

    class Context:
        def __init__(self, engine: Engine) -> None:
            self.e = engine
            self.shapes: dict[str, tuple] = {}
            self.addr: dict[str, int] = {}
            self.out_shapes: dict[str, tuple] | None = None

        def set_input_shape(self, name, shape) -> bool:
            self.shapes[name] = tuple(shape)
            self.out_shapes = None
            return True

        def _inputs(self, read: Callable[[str, np.dtype, tuple], np.ndarray]) -> dict:
            feeds = {}
            for i in self.e.sess.get_inputs():
                dt = self.e.get_tensor_dtype(i.name)
                want = np.int64 if i.type == "tensor(int64)" else dt
                feeds[i.name] = read(i.name, dt, self.shapes[i.name]).astype(want)
            return feeds

        def get_tensor_shape(self, name):
            if name in self.shapes:
                return self.shapes[name]
            if self.out_shapes is None:       # shape inference: run on zeros (a scalar
                # integer input, Silero's sample rate, gets 16000: the branch it serves)
                outs = self.e.sess.run(None, self._inputs(
                    lambda n, dt, shape: np.full(shape, 16000 if shape == () and dt.kind == "i"
                                                 else 0, dt)))
                self.out_shapes = {o.name: v.shape for o, v in
                                   zip(self.e.sess.get_outputs(), outs, strict=True)}
            return self.out_shapes[name]

        def set_tensor_address(self, name, ptr) -> bool:
            self.addr[name] = int(ptr)
            return True

        def execute_async_v3(self, stream_handle) -> bool:
            if k.fail_runs:
                return False
            if k.clock is not None:
                k.clock.advance(k.run_s)
            feeds = self._inputs(lambda n, dt, shape: np.frombuffer(
                dev.read(self.addr[n], int(np.prod(shape)) * dt.itemsize), dt).reshape(shape))
            outs = self.e.sess.run(None, feeds)
            for o, v in zip(self.e.sess.get_outputs(), outs, strict=True):
                if v.dtype == np.float32 and k.noise:
                    v = v + np.float32(k.noise)
                dev.write(self.addr[o.name], np.ascontiguousarray(v).tobytes())
            return True

    m.Builder, m.OnnxParser, m.Runtime = Builder, OnnxParser, Runtime
    return m


def importer(modules: dict[str, types.ModuleType]) -> Callable[[str], types.ModuleType]:
    """An ``importlib.import_module`` stand-in: the given fakes, ImportError for the rest."""
    def load(name: str) -> types.ModuleType:
        if name in modules:
            return modules[name]
        raise ImportError(f"No module named {name!r}")
    return load


def fake_backends(dev: FakeDevice | None = None, knobs: TrtKnobs | None = None, *,
                  trt: bool = True, cuda: str = "pycuda", version: str = "10.3.0"):
    """``gpu.accel.Backends`` over the fakes (real wrappers on top): ``trt=False`` = no
    tensorrt, ``cuda`` = "pycuda" | "cuda-python" | "" (neither installed); onnxruntime
    offers only the CPU provider, as on this machine."""
    from edge_runtime.gpu.accel import Backends
    from edge_runtime.gpu.cuda import load_cuda
    from edge_runtime.gpu.trt_api import load_tensorrt
    dev = dev or FakeDevice()
    mods: dict[str, types.ModuleType] = {}
    if trt:
        mods["tensorrt"] = fake_tensorrt(dev, knobs, version)
    if cuda == "pycuda":
        mods["pycuda.driver"] = fake_pycuda(dev)
    elif cuda == "cuda-python":
        mods["cuda.bindings.runtime"] = fake_cudart(dev)
    imp = importer(mods)
    return Backends(tensorrt=lambda: load_tensorrt(imp),
                    cuda=lambda i: load_cuda(i, importer=imp),
                    ort_providers=lambda: ["CPUExecutionProvider"])

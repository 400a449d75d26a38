"""The CUDA memory interface: which binding is chosen, and both wrappers round-trip data
through (fake) device memory the way the runner uses them."""
import numpy as np
import pytest

from edge_runtime.gpu.cuda import load_cuda
from edge_runtime.gpu.errors import GpuOutOfMemoryError, GpuUnavailableError
from tests.gpu_fakes import FakeDevice, fake_cudart, fake_pycuda, importer


def test_pycuda_is_chosen_when_it_imports():
    dev = FakeDevice()
    mem = load_cuda(0, importer({"pycuda.driver": fake_pycuda(dev),
                                 "cuda.bindings.runtime": fake_cudart(dev)}))
    assert mem.name == "pycuda"


@pytest.mark.parametrize("module", ["cuda.bindings.runtime", "cuda.cudart"])
def test_cuda_python_serves_when_pycuda_is_missing(module):
    mem = load_cuda(0, importer({module: fake_cudart(FakeDevice("Orin"))}))
    assert mem.name == "cuda-python"
    with mem.activate():
        assert mem.device_name() == "Orin"


def test_neither_binding_is_one_typed_line_naming_both_installs():
    with pytest.raises(GpuUnavailableError) as info:
        load_cuda(0, importer({}))
    line = info.value.one_line()
    assert "pip install pycuda" in line and "pip install cuda-python" in line
    assert "\n" not in line


@pytest.mark.parametrize("binding", ["pycuda", "cuda-python"])
def test_pinned_host_buffers_round_trip_through_device_memory(binding):
    dev = FakeDevice()
    mods = {"pycuda.driver": fake_pycuda(dev)} if binding == "pycuda" else \
        {"cuda.bindings.runtime": fake_cudart(dev)}
    mem = load_cuda(0, importer(mods))
    with mem.activate():
        host = mem.pinned(12, np.dtype(np.float32))
        buf = mem.alloc(host.nbytes)
        stream = mem.stream()
        view = host[:6].reshape(2, 3)               # a prefix view, as the runner copies
        view[...] = np.arange(6, dtype=np.float32).reshape(2, 3)
        mem.htod_async(buf, view, stream)
        back = mem.pinned(6, np.dtype(np.float32))
        mem.dtoh_async(back, buf, stream)
        stream.synchronize()
    np.testing.assert_array_equal(back, np.arange(6, dtype=np.float32))
    assert isinstance(stream.handle, int) and isinstance(buf.ptr, int)


def test_pycuda_pushes_and_pops_the_primary_context_around_each_use():
    drv = fake_pycuda(FakeDevice())
    mem = load_cuda(0, importer({"pycuda.driver": drv}))
    with mem.activate():
        assert len(drv.context_stack) == 1
    assert drv.context_stack == []


def test_a_cudart_allocation_failure_is_out_of_memory():
    mem = load_cuda(0, importer({"cuda.bindings.runtime": fake_cudart(FakeDevice(),
                                                                      fail="cudaMalloc")}))
    with pytest.raises(GpuOutOfMemoryError, match="cudaMalloc"):
        mem.alloc(1 << 20)


def test_foreign_out_of_memory_errors_get_the_out_of_memory_reason():
    from edge_runtime.gpu.errors import EngineBuildError, reason_code

    class PycudaMemoryError(Exception):            # pycuda._driver.MemoryError's wording
        pass
    assert reason_code(PycudaMemoryError("cuMemAlloc failed: out of memory")) == "out_of_memory"
    assert reason_code(RuntimeError("CUDA error: cudaErrorMemoryAllocation")) == "out_of_memory"
    assert reason_code(EngineBuildError("no")) == "build_failed"
    assert reason_code(ValueError("other")) == "failed"

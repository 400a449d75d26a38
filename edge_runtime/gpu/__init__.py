"""The GPU paths of the small fixed-shape models (Silero VAD, the NLU encoder).

``accel.Accelerator`` chooses per model, in the device profile's order:
``tensorrt-native`` (a TensorRT engine built here from the ONNX file: ``builder``,
``engine_cache``, run by ``runner.TrtSession`` through ``cuda``'s pycuda / cuda-python
memory) ▸ onnxruntime's TensorRT provider ▸ its CUDA provider ▸ the CPU; each path is
checked against the CPU (``agreement``) before it serves, and every fallback is one log
line, a metric and an entry of ``/healthz``'s ``gpu`` object (``report``). ``check`` is
`edge-runtime doctor --gpu`. Nothing here imports tensorrt, pycuda or cuda-python until a
GPU path is tried.
"""

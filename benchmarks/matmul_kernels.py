"""The CPU kernels behind the int8 FFN build, one node each: MatMulNBits (4- and 8-bit blocks
of 32, accuracy level 4) vs DynamicQuantizeMatMul (int8 per column), at one row (a decode
step) and at a prefill's rows.

    python -m benchmarks.matmul_kernels [--k 640] [--n 4096] [--rows 44] [--threads 1] [--json]

Medians of 50 runs after 5 warm-up runs, random weights (the kernels' speed does not depend on
the values). Run on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def _model(k: int, n: int, kind: str) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    if kind == "dq_int8":
        inits = [numpy_helper.from_array(rng.integers(-127, 128, (k, n), dtype=np.int8), "W"),
                 numpy_helper.from_array(rng.random(n, dtype=np.float32) * 0.01, "S")]
        node = helper.make_node("DynamicQuantizeMatMul", ["A", "W", "S"], ["Y"],
                                domain="com.microsoft")
    else:
        bits, block = (4 if kind == "nbits4" else 8), 32
        blocks = k // block
        inits = [numpy_helper.from_array(
                     rng.integers(0, 256, (n, blocks, block * bits // 8), dtype=np.uint8), "B"),
                 numpy_helper.from_array(rng.random(n * blocks, dtype=np.float32) * 0.01, "S")]
        node = helper.make_node("MatMulNBits", ["A", "B", "S"], ["Y"], domain="com.microsoft",
                                K=k, N=n, bits=bits, block_size=block, accuracy_level=4)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("A", TensorProto.FLOAT,
                                                                          ["M", k])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", n])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    return model.SerializeToString()


def _median_us(model: bytes, rows: int, k: int, threads: int) -> float:
    import onnxruntime as ort

    from edge_runtime.onnx_session import session_options

    # the engine's own settings (threads, no spinning, full graph optimisation)
    sess = ort.InferenceSession(model, session_options(threads), providers=["CPUExecutionProvider"])
    a = np.random.default_rng(1).random((rows, k), dtype=np.float32)
    for _ in range(5):
        sess.run(None, {"A": a})
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        sess.run(None, {"A": a})
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=640)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--rows", type=int, default=44)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out = {}
    for kind in ("nbits4", "nbits8", "dq_int8"):
        model = _model(args.k, args.n, kind)
        out[kind] = {"one_row_us": round(_median_us(model, 1, args.k, args.threads)),
                     f"{args.rows}_rows_us": round(_median_us(model, args.rows, args.k,
                                                              args.threads))}
    if args.json:
        print(json.dumps({"k": args.k, "n": args.n, "threads": args.threads, **out}))
    else:
        for kind, r in out.items():
            print(f"{kind:8s} " + "  ".join(f"{key} {v}" for key, v in r.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

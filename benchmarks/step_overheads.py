"""What a decode step pays around its matrix kernels, op by op, under onnxruntime's CPU
provider (``benchmarks.nbits_floor`` gives the kernels' share; this, where the rest goes).

    python -m benchmarks.step_overheads [--threads 2] [--runs 1000] [--json]

Two measurements, each in graphs of SmolLM2-135M's shapes (hidden 576, 9 query heads, 3 KV
heads of 64), sessions busy-waiting 200 us between ops as the engine does:

- ``block_means``: the folded build gives each projection its input's block means (an
  AveragePool over blocks of 32 and a Concat, 120 pairs a SmolLM2 decode step). A chain of
  ``--pairs`` [x -> pair -> Slice back to x] against a chain of Slices alone, and the same
  with the other ways to get the means (Reshape + ReduceSum, a Conv) or with the Concat
  alone; the figure is us per pair beyond a Slice. Runs interleaved, medians.
- ``attention``: ``--layers`` com.microsoft GroupQueryAttention nodes of one decode token,
  each with its own KV cache of ``--max-len`` positions bound as past and present (appended
  in place, as the engine binds them), at several past lengths; us per node. Before each
  run a 64 MB array is read so that the caches come from memory, as in a step whose weights
  evicted them.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

SPIN = {"session.intra_op.allow_spinning": "1", "session.intra_op.spin_duration_us": "200"}
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, BLOCK = 576, 9, 3, 64, 32
MEANS = ("slice", "pool_concat", "reduce_concat", "conv_concat", "concat_only")


def _session(model, threads: int):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    for k, v in SPIN.items():
        so.add_session_config_entry(k, v)
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def _model(nodes, inputs, outputs, inits, opsets=(("", 17),)):
    from onnx import helper

    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializer=inits),
                          opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 10
    return m


def means_chain(kind: str, pairs: int):
    """``pairs`` links of [x -> (the means of x by ``kind``, concatenated) -> Slice to x]."""
    from onnx import TensorProto, helper, numpy_helper

    c = {"st": np.array([0], np.int64), "en": np.array([HIDDEN], np.int64),
         "ax": np.array([-1], np.int64), "shape": np.array([1, 1, HIDDEN // BLOCK, BLOCK],
                                                           np.int64),
         "zeros": np.zeros((1, 1, HIDDEN // BLOCK), np.float32),
         "conv_w": np.full((1, 1, BLOCK), 1 / BLOCK, np.float32)}
    nodes, x = [], "x"
    for i in range(pairs):
        a, cat = f"a{i}", f"c{i}"
        if kind == "pool_concat":
            nodes.append(helper.make_node("AveragePool", [x], [a], kernel_shape=[BLOCK],
                                          strides=[BLOCK]))
        elif kind == "reduce_concat":
            nodes += [helper.make_node("Reshape", [x, "shape"], [f"r{i}"]),
                      helper.make_node("ReduceSum", [f"r{i}", "ax"], [a], keepdims=0)]
        elif kind == "conv_concat":
            nodes.append(helper.make_node("Conv", [x, "conv_w"], [a], kernel_shape=[BLOCK],
                                          strides=[BLOCK]))
        if kind != "slice":
            nodes.append(helper.make_node("Concat", [x, "zeros" if kind == "concat_only"
                                                     else a], [cat], axis=-1))
        nodes.append(helper.make_node("Slice", [x if kind == "slice" else cat,
                                                "st", "en", "ax"], [f"y{i}"]))
        x = f"y{i}"
    f32 = TensorProto.FLOAT
    return _model(nodes, [helper.make_tensor_value_info("x", f32, [1, 1, HIDDEN])],
                  [helper.make_tensor_value_info(x, f32, None)],
                  [numpy_helper.from_array(v, k) for k, v in c.items()])


def block_means(threads: int, runs: int, pairs: int) -> dict[str, float]:
    """us per link beyond a Slice, per way of getting the block means (MEANS)."""
    sessions = {k: _session(means_chain(k, pairs), threads) for k in MEANS}
    x = np.random.default_rng(0).standard_normal((1, 1, HIDDEN)).astype(np.float32)
    times: dict[str, list[float]] = {k: [] for k in MEANS}
    for _ in range(runs):
        for k, s in sessions.items():
            t = time.perf_counter()
            s.run(None, {"x": x})
            times[k].append(time.perf_counter() - t)
    base = float(np.median(times["slice"]))
    return {k: round((float(np.median(v)) - base) / pairs * 1e6, 2)
            for k, v in times.items() if k != "slice"}


def attention_graph(layers: int, max_len: int):
    from onnx import TensorProto, helper, numpy_helper

    f32 = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("qkv", f32, [1, 1, (HEADS + 2 * KV_HEADS) * HEAD_DIM]),
              helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [1]),
              helper.make_tensor_value_info("total", TensorProto.INT32, [])]
    outputs, nodes = [], []
    kv = [1, KV_HEADS, max_len, HEAD_DIM]
    for i in range(layers):
        inputs += [helper.make_tensor_value_info(f"past_k{i}", f32, kv),
                   helper.make_tensor_value_info(f"past_v{i}", f32, kv)]
        outputs += [helper.make_tensor_value_info(f"out{i}", f32, None),
                    helper.make_tensor_value_info(f"k{i}", f32, kv),
                    helper.make_tensor_value_info(f"v{i}", f32, kv)]
        nodes.append(helper.make_node(
            "GroupQueryAttention", ["qkv", "", "", f"past_k{i}", f"past_v{i}", "seqlens_k",
                                    "total", "cos", "sin"], [f"out{i}", f"k{i}", f"v{i}"],
            domain="com.microsoft", num_heads=HEADS, kv_num_heads=KV_HEADS, do_rotary=1,
            rotary_interleaved=1))
    rng = np.random.default_rng(0)
    tables = [numpy_helper.from_array(rng.random((max_len, HEAD_DIM // 2), np.float32), n)
              for n in ("cos", "sin")]
    return _model(nodes, inputs, outputs, tables, (("", 17), ("com.microsoft", 1)))


def attention(threads: int, runs: int, layers: int, max_len: int,
              pasts: list[int]) -> dict[int, float]:
    """us per GroupQueryAttention node of one decode token, by past length."""
    import onnxruntime as ort

    sess = _session(attention_graph(layers, max_len), threads)
    rng = np.random.default_rng(1)
    flush = np.ones(64 << 17)                      # 64 MB, read before each run
    out = {}
    for past in pasts:
        io = sess.io_binding()
        io.bind_cpu_input("qkv", rng.random((1, 1, (HEADS + 2 * KV_HEADS) * HEAD_DIM),
                                            np.float32))
        io.bind_cpu_input("seqlens_k", np.array([past], np.int32))
        io.bind_cpu_input("total", np.array(past + 1, np.int32))
        for i in range(layers):
            for kind in ("k", "v"):
                buf = ort.OrtValue.ortvalue_from_numpy(
                    rng.random((1, KV_HEADS, max_len, HEAD_DIM), np.float32))
                io.bind_ortvalue_input(f"past_{kind}{i}", buf)
                io.bind_ortvalue_output(f"{kind}{i}", buf)
            io.bind_output(f"out{i}")
        times = []
        for _ in range(runs):
            flush.sum()
            t = time.perf_counter()
            sess.run_with_iobinding(io)
            times.append(time.perf_counter() - t)
        out[past] = round(float(np.median(times)) / layers * 1e6, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.step_overheads",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1000,
                    help="runs of each block-means chain (default 1000; a tenth as many of "
                    "the attention graph)")
    ap.add_argument("--pairs", type=int, default=120)
    ap.add_argument("--layers", type=int, default=30)
    ap.add_argument("--max-len", type=int, default=1024)
    ap.add_argument("--pasts", default="1,50,150,300")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    pasts = [int(p) for p in a.pasts.split(",")]
    if a.runs < 1 or a.pairs < 1 or a.layers < 1 or max(pasts) >= a.max_len:
        print("step_overheads: --runs, --pairs and --layers must be >= 1 and every past "
              "length below --max-len", file=sys.stderr)
        return 2
    print("[step_overheads] block means", file=sys.stderr)
    means = block_means(a.threads, a.runs, a.pairs)
    print("[step_overheads] attention", file=sys.stderr)
    att = attention(a.threads, max(1, a.runs // 10), a.layers, a.max_len, pasts)
    result = {"threads": a.threads, "block_means_us_per_pair": means,
              "attention_us_per_node": att}
    if a.json:
        print(json.dumps(result))
        return 0
    print(f"block means, us per pair beyond a Slice ({a.pairs} pairs, {a.threads} threads):")
    for k, v in means.items():
        print(f"  {k:14s} {v:6.2f}")
    print(f"GroupQueryAttention, us per node of one token ({a.layers} nodes, KV of "
          f"{a.max_len}):")
    for p, v in att.items():
        print(f"  past {p:5d}  {v:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The CPU kernels behind the LLM build's projections side by side: MatMulNBits (4- and 8-bit
blocks of 32, accuracy level 4) vs DynamicQuantizeMatMul (int8 per column), one row (a decode
step) and a prefill's rows, and the three forms a Q4_1 / Q4_K block (``d * q + m``) could take.

    python -m benchmarks.matmul_kernels [--k 640] [--n 4096] [--rows 44] [--threads 1]
        [--copies 1] [--spin-us 0] [--json]

Kernels (``--kinds``, default all):
  nbits4           4-bit, MatMulNBits' default zero point 8 (Q4_0: exact)
  nbits4_offsets   the builder's exact Q4_1 form: nbits4 + the block sums of the input (a
                   Reshape and a ReduceSum) times the offsets (a MatMul) added (an Add)
  nbits4_zp        4-bit with uint8 zero points (one node; a Q4_1 offset rounded to an integer
                   zero point is not exact)
  nbits4_float_zp  4-bit with float zero points (one node, exact for Q4_1: z = -m / d)
  nbits8           8-bit, zero point 128
  dq_int8          DynamicQuantizeMatMul, int8 weights per column (the int8 build)

``--copies C`` puts C nodes with their own weights side by side in one graph (each reads the
same input): with C x K x N past the last-level cache the weights stream from memory as a
decoding model's do (one node of 640 x 4096 stays in a 32 MB L3). Printed per kernel: median
microseconds per node (50 rounds after 5 warm-up runs, the kernels interleaved) and G
weights/s, at one row and at ``--rows``. Random weights (the kernels' speed does not depend on
the values); every output is checked against numpy first. Run on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import numpy as np

from edge_runtime.models.gguf2onnx.quant import _pack_nbits4 as _pack4  # the builder's packing

BLOCK = 32
KINDS = ("nbits4", "nbits4_offsets", "nbits4_zp", "nbits4_float_zp", "nbits8", "dq_int8")


def _one(kind: str, k: int, n: int, i: int, rng: np.random.Generator, inp: str = "A",
         reference: bool = True) -> tuple[list, list, np.ndarray | None]:
    """(initializers, nodes, reference weights [k, n]) of copy ``i`` of ``kind``, reading
    ``inp``; its output is ``Y{i}``. A K that is not a multiple of the block pads the last
    block (the MatMulNBits kinds but nbits4_offsets). ``reference`` False: None for the
    weights (they are not dequantized)."""
    from onnx import helper, numpy_helper

    def init(name: str, arr: np.ndarray):
        return numpy_helper.from_array(arr, f"{name}{i}")

    if kind == "dq_int8":
        w = rng.integers(-127, 128, (k, n), dtype=np.int8)
        s = (rng.random(n, dtype=np.float32) + 0.5) * 0.01
        node = helper.make_node("DynamicQuantizeMatMul", [inp, f"W{i}", f"S{i}"], [f"Y{i}"],
                                domain="com.microsoft")
        ref = w.astype(np.float32) * s if reference else None
        return [init("W", w), init("S", s)], [node], ref
    blocks = -(-k // BLOCK)
    bits = 8 if kind == "nbits8" else 4
    q = rng.integers(0, 2 ** bits, (n, blocks, BLOCK), dtype=np.uint8)
    s = ((rng.random((n, blocks), dtype=np.float32) + 0.5) * 0.01)
    zp = np.full((n, blocks), 2 ** (bits - 1), np.float32)
    inits = [init("B", q if bits == 8 else _pack4(q)), init("S", s.reshape(-1))]
    ins = [inp, f"B{i}", f"S{i}"]
    if kind == "nbits4_zp":
        z = rng.integers(0, 16, (n, blocks + blocks % 2), dtype=np.uint8)
        zp = z[:, :blocks].astype(np.float32)
        inits.append(init("Z", _pack4(z).reshape(-1)))
        ins.append(f"Z{i}")
    elif kind == "nbits4_float_zp":
        zp = (rng.random((n, blocks), dtype=np.float32) * 15).astype(np.float32)
        inits.append(init("Z", zp.reshape(-1)))
        ins.append(f"Z{i}")
    w = (((q.astype(np.float32) - zp[..., None]) * s[..., None]).reshape(n, -1)[:, :k].T
         if reference else None)
    out = f"Y{i}" if kind != "nbits4_offsets" else f"P{i}"
    nodes = [helper.make_node("MatMulNBits", ins, [out], domain="com.microsoft", K=k, N=n,
                              bits=bits, block_size=BLOCK, accuracy_level=4)]
    if kind == "nbits4_offsets":
        assert k % BLOCK == 0 and reference, "the exact Q4_1 form needs whole blocks"
        # each copy sums its input's blocks itself, as each projection of the model does
        inits += [init("blk_shape", np.array([0, blocks, BLOCK], np.int64)),
                  init("axis_last", np.array([-1], np.int64))]
        nodes += [helper.make_node("Reshape", [inp, f"blk_shape{i}"], [f"A_blocks{i}"]),
                  helper.make_node("ReduceSum", [f"A_blocks{i}", f"axis_last{i}"],
                                   [f"A_sums{i}"], keepdims=0)]
        off = (rng.standard_normal((blocks, n)) * 0.05).astype(np.float32)
        inits.append(init("O", off))
        nodes += [helper.make_node("MatMul", [f"A_sums{i}", f"O{i}"], [f"C{i}"]),
                  helper.make_node("Add", [out, f"C{i}"], [f"Y{i}"])]
        w = w + np.repeat(off, BLOCK, axis=0)
    return inits, nodes, w


def _model(k: int, n: int, kind: str, copies: int = 1) -> tuple[bytes, list[np.ndarray]]:
    """The serialized graph of ``copies`` nodes of ``kind`` and each one's weights [k, n]."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    inits, nodes, refs, outs = [], [], [], []
    for i in range(copies):
        ci, cn, w = _one(kind, k, n, i, rng)
        inits += ci
        nodes += cn
        refs.append(w)
        outs.append(helper.make_tensor_value_info(f"Y{i}", TensorProto.FLOAT, ["M", n]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("A", TensorProto.FLOAT,
                                                                         ["M", k])],
                              outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    return model.SerializeToString(), refs


def _session(model: bytes, threads: int, spin_us: int):
    import onnxruntime as ort

    from edge_runtime.onnx_session import session_options

    # the engine's own settings (threads, spinning as given, full graph optimisation)
    return ort.InferenceSession(model, session_options(threads, spin_us),
                                providers=["CPUExecutionProvider"])


def check(sess, refs: list[np.ndarray], k: int, rows: int = 3) -> float:
    """Largest error of any output vs numpy, relative to that output's largest magnitude
    (accuracy level 4 rounds the input to int8 per block: ~1e-2 at most)."""
    a = np.random.default_rng(2).standard_normal((rows, k)).astype(np.float32)
    got = sess.run(None, {"A": a})
    return max(float(np.abs(y - a @ w).max() / np.abs(a @ w).max())
               for y, w in zip(got, refs, strict=True))


def _interleaved_us(sessions: dict, rows: int, k: int, rounds: int = 50) -> dict[str, float]:
    """Median microseconds of one run per session: 5 warm-up runs each, then ``rounds``
    rounds that run every session once in a shuffled order (a busy moment slows all alike)."""
    a = np.random.default_rng(1).random((rows, k), dtype=np.float32)
    order = list(sessions)
    for name in order:
        for _ in range(5):
            sessions[name].run(None, {"A": a})
    times: dict[str, list[float]] = {name: [] for name in order}
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for name in order:
            t0 = time.perf_counter()
            sessions[name].run(None, {"A": a})
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) * 1e6 for name, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=640)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--rows", type=int, default=44)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--copies", type=int, default=1,
                    help="nodes side by side, each with its own weights (default 1)")
    ap.add_argument("--spin-us", type=int, default=0,
                    help="intra-op busy-wait (the engine uses 200 at 2 threads on 2 cores)")
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated, of: "
                    + ", ".join(KINDS))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    kinds = list(dict.fromkeys(x for x in args.kinds.split(",") if x))
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or args.k % BLOCK:
        ap.error(f"unknown kinds {unknown}" if unknown else f"--k must be a multiple of {BLOCK}")
    weights = args.k * args.n * args.copies
    sessions, out = {}, {}
    for kind in kinds:
        model, refs = _model(args.k, args.n, kind, args.copies)
        sessions[kind] = _session(model, args.threads, args.spin_us)
        out[kind] = {"max_rel_error": float(f"{check(sessions[kind], refs, args.k):.2g}")}
    for rows, key in ((1, "one_row"), (args.rows, f"{args.rows}_rows")):
        for kind, us in _interleaved_us(sessions, rows, args.k).items():
            out[kind][f"{key}_us"] = round(us / args.copies, 1)
            out[kind][f"{key}_gw_s"] = round(weights / us / 1e3, 1)
    if args.json:
        print(json.dumps({"k": args.k, "n": args.n, "threads": args.threads,
                          "copies": args.copies, "spin_us": args.spin_us, **out}))
    else:
        print(f"K {args.k} N {args.n} x {args.copies}, {args.threads} thread(s); "
              "microseconds per node (G weights/s)")
        for kind, r in out.items():
            print(f"{kind:16s} one row {r['one_row_us']:9.1f} ({r['one_row_gw_s']:5.1f})   "
                  f"{args.rows} rows {r[f'{args.rows}_rows_us']:9.1f} "
                  f"({r[f'{args.rows}_rows_gw_s']:5.1f})   max rel error {r['max_rel_error']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The floor of a decode step under onnxruntime's CPU kernels: every projection of a built
LLM as one 4-bit MatMulNBits node and nothing else, timed beside the build's real step.

    python -m benchmarks.nbits_floor --model-dir DIR [--steps 200] [--rounds 10] [--json]

The kernel-only graph has one MatMulNBits node (4 bits, blocks of 32, uint8 zero points,
accuracy level 4: ``benchmarks.matmul_kernels``' nbits4_zp, its fastest one-row kernel) for each
MatMulNBits or DynamicQuantizeMatMul node a decode step of the build runs (a ``fold_steps``
build: the one-row branches of its If nodes), with its K and N (the output head included),
random weights, all reading one input row; no norm, attention, activation or sampling node.
Sessions: that graph at 1 and 2 intra-op threads, and the build itself at 2 (a one-token
decode step after a 48-token prompt), all 2-thread sessions busy-waiting 200 us as the
engine does; the three are timed in turns (``--rounds`` of ``--steps`` runs each, shuffled)
and each figure is the median of the rounds' medians. What it tells: how much of a
step the matrix kernels take, and how fast a step could be were everything else free.
Run on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

SPIN = {"session.intra_op.allow_spinning": "1", "session.intra_op.spin_duration_us": "200"}


def _step_nodes(graph) -> Iterator:
    """The nodes a one-token decode step runs, in graph order: a ``fold_steps`` build's
    blocks sit in If nodes on ``one_row`` (the graph builder's name for "this call has one
    row"), whose then-branch is the decode step's."""
    for n in graph.node:
        if n.op_type == "If" and n.input[0] == "one_row":
            branch = next(a.g for a in n.attribute if a.name == "then_branch")
            yield from _step_nodes(branch)
        else:
            yield n


def projections(model_dir: Path) -> list[tuple[int, int]]:
    """(K, N) of every MatMulNBits and DynamicQuantizeMatMul node a decode step of a build
    runs, in graph order."""
    import onnx

    cfg = json.loads((model_dir / "model_config.json").read_text())
    g = onnx.load(str(model_dir / cfg["model_file"]), load_external_data=False).graph
    dims = {t.name: list(t.dims) for t in g.initializer}
    out = []
    for n in _step_nodes(g):
        if n.op_type == "MatMulNBits":
            at = {a.name: a.i for a in n.attribute}
            out.append((int(at["K"]), int(at["N"])))
        elif n.op_type == "DynamicQuantizeMatMul":
            k, n_ = dims[n.input[1]]
            out.append((int(k), int(n_)))
    return out


def kernel_graph(shapes: list[tuple[int, int]], path: Path, seed: int = 0) -> list[str]:
    """Write the kernel-only graph of ``shapes`` to ``path`` (node i: ``matmul_kernels``'
    nbits4_zp with K, N = ``shapes[i]``, reading ``x{K}``); returns its input names."""
    import onnx
    from onnx import TensorProto, helper

    from .matmul_kernels import _one

    rng = np.random.default_rng(seed)
    nodes, inits, outputs = [], [], []
    widths = sorted({k for k, _ in shapes})
    for i, (k, n) in enumerate(shapes):
        node_inits, node, _ = _one("nbits4_zp", k, n, i, rng, inp=f"x{k}", reference=False)
        inits += node_inits
        nodes += node
        outputs.append(helper.make_tensor_value_info(f"Y{i}", TensorProto.FLOAT, [1, n]))
    graph = helper.make_graph(
        nodes, "nbits_floor",
        [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [1, k]) for k in widths],
        outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)])
    onnx.save_model(model, str(path), save_as_external_data=True, location=path.name + ".data")
    return [f"x{k}" for k in widths]


def _session(path: Path, threads: int):
    import onnxruntime as ort

    from edge_runtime.onnx_session import session_options

    so = session_options(threads, 200 if threads > 1 else 0)
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def measure(model_dir: Path, steps: int = 200, rounds: int = 10, seed: int = 0) -> dict:
    from edge_runtime.llm.providers import OpenedSession
    from edge_runtime.llm.runner import KvRunner

    shapes = projections(model_dir)
    cfg = json.loads((model_dir / "model_config.json").read_text())
    with tempfile.TemporaryDirectory(prefix="nbits_floor_") as tmp:
        path = Path(tmp) / "floor.onnx"
        names = kernel_graph(shapes, path, seed)
        rng = np.random.default_rng(seed)
        feeds = {n: rng.standard_normal((1, int(n[1:]))).astype(np.float32) for n in names}
        floor = {t: _session(path, t) for t in (1, 2)}
        runner = KvRunner(OpenedSession(_session(model_dir / cfg["model_file"], 2), "cpu", [],
                                        []), cfg, steps + 64)
        first = 0

        def real() -> None:
            runner.feed([first])

        def kernels(t: int):
            out = floor[t].get_outputs()[-1].name
            return lambda: floor[t].run([out], feeds)

        runs = {"kernels_1_thread": kernels(1), "kernels_2_threads": kernels(2),
                "model_step_2_threads": real}
        medians: dict[str, list[float]] = {k: [] for k in runs}
        order = list(runs)
        for r in range(rounds):
            random.Random(seed + r).shuffle(order)
            for key in order:
                if key == "model_step_2_threads":
                    runner.reset()
                    runner.feed_prompt(list(range(100, 148)))
                for _ in range(5):
                    runs[key]()
                times = []
                for _ in range(steps):
                    t0 = time.perf_counter()
                    runs[key]()
                    times.append(time.perf_counter() - t0)
                medians[key].append(statistics.median(times) * 1e3)
            print(f"[nbits_floor] round {r + 1}/{rounds}", file=sys.stderr, flush=True)
    out = {k: round(statistics.median(v), 3) for k, v in medians.items()}
    out.update(projections=len(shapes), weights=sum(k * n for k, n in shapes),
               kernel_share=round(out["kernels_2_threads"] / out["model_step_2_threads"], 3),
               model_dir=str(model_dir))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.nbits_floor",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", type=Path, required=True, help="a built LLM directory")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not (args.model_dir / "model_config.json").is_file():
        print(f"{args.model_dir}: not a built model (no model_config.json); run `edge-runtime "
              "models build`", file=sys.stderr)
        return 2
    out = measure(args.model_dir, args.steps, args.rounds, args.seed)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['projections']} projections, {out['weights'] / 1e6:.1f} M weights: "
              f"kernels alone {out['kernels_1_thread']:.2f} ms at 1 thread, "
              f"{out['kernels_2_threads']:.2f} ms at 2; the build's decode step "
              f"{out['model_step_2_threads']:.2f} ms at 2 (kernels {out['kernel_share']:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

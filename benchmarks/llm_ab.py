"""Interleaved A/B of built LLM directories and onnxruntime session settings.

    python -m benchmarks.llm_ab [--steps 300] [--block 1] [--threads 2] [--orders N]
        DIR[,key=value...] ...

Each spec is a model directory (``edge-runtime models build`` output) plus optional session
config entries (``session.intra_op.allow_spinning=1``, ``session.intra_op.spin_duration_us=200``
...), ``threads=N`` or ``step_ops=LIB`` (the library of ``edge_runtime.llm.step_ops``: the
model's step-ops graph, ``model.step_ops.onnx``). All specs are loaded side by side in one process; the decode steps then
alternate between them, ``--block`` steps at a time, in a shuffled order each round, so a busy
box slows every spec alike. Printed per spec: median wall and process-CPU time of one decode
step and of a 48-token prefill, each as a ratio to the first spec. Use ``taskset -c 0,1`` to
pin. With spinning specs, use ``--block 20`` or more (an idle spinning session steals the other
core). Put the same directory twice to see the harness's own spread.

The order the specs are loaded in moves their speed: the same Gemma 3 270M directory twice
in one process, the second decoded 1.02-1.04x faster than the first, and two builds swapped
places 1.06x one way and 1.08x the other (2-core Zen 4, 2026-12-04). So by default
(``--orders`` = the number of specs) each measurement runs in that many processes, one after
the other, each loading the specs rotated by one place (for two: A B, then B A); a ratio is
the geometric mean of the processes' ratios, and the ratios by load order are printed beside
it. ``--orders 1`` is one process in the given order.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

PROMPT = list(range(100, 148))


def _open(spec: str, threads: int, max_len: int):
    import onnxruntime as ort

    from edge_runtime.llm.providers import OpenedSession
    from edge_runtime.llm.runner import KvRunner
    from edge_runtime.onnx_session import session_options

    d, *opts = spec.split(",")
    entries = dict(o.split("=", 1) for o in opts)
    so = session_options(int(entries.pop("threads", threads)))
    cfg = json.loads((Path(d) / "model_config.json").read_text())
    path = Path(d) / cfg["model_file"]
    if "step_ops" in entries:      # the library of edge_runtime.llm.step_ops: its graph
        from edge_runtime.llm.step_ops import variant_of
        lib = entries.pop("step_ops")
        so.register_custom_ops_library(lib)
        path = variant_of(Path(d), cfg, Path(lib)) or path
    for k, v in entries.items():
        so.add_session_config_entry(k, v)
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return KvRunner(OpenedSession(sess, "cpu", ["CPUExecutionProvider"], []), cfg, max_len)


FIGURES = ("step_wall", "step_cpu", "prefill_wall", "prefill_cpu")


def measure(specs: list[str], steps: int, block: int, threads: int, seed: int,
            context: int = 1024) -> list[dict]:
    """One process's figures: per spec the medians (seconds) of FIGURES; a runner whose
    cache reaches ``context`` tokens starts again from the prompt."""
    max_len = max(context, len(PROMPT) + 2)
    runs = [{"spec": s, "runner": _open(s, threads, max_len), "tok": 200,
             "wall": [], "cpu": [], "prefill": []} for s in specs]
    for _ in range(3):
        for r in runs:
            r["runner"].reset()
            t, c = time.perf_counter(), time.process_time()
            r["runner"].feed(PROMPT)
            r["prefill"].append((time.perf_counter() - t, time.process_time() - c))
    rnd = random.Random(seed)
    for _ in range(0, steps, block):
        order = list(runs)
        rnd.shuffle(order)
        for r in order:
            runner = r["runner"]
            for _ in range(block):
                if runner.length >= max_len - 1:
                    runner.reset()
                    runner.feed(PROMPT)
                t, c = time.perf_counter(), time.process_time()
                logits = runner.feed([r["tok"]])
                r["wall"].append(time.perf_counter() - t)
                r["cpu"].append(time.process_time() - c)
                r["tok"] = int(np.argmax(logits))
    return [{"spec": r["spec"],
             **dict(zip(FIGURES, (float(np.median(r["wall"])), float(np.median(r["cpu"])),
                                  float(np.median([p[0] for p in r["prefill"]])),
                                  float(np.median([p[1] for p in r["prefill"]]))),
                        strict=True))} for r in runs]


def combine(by_order: list[list[dict]]) -> list[dict]:
    """Per spec (each process's list in the specs' given order): each figure's median over the
    processes, its ratio to the first spec as the geometric mean of the processes' ratios,
    and those ratios."""
    out = []
    for i, row0 in enumerate(by_order[0]):
        row: dict = {"spec": row0["spec"]}
        for f in FIGURES:
            ratios = [o[0][f] / o[i][f] for o in by_order]
            row[f] = float(np.median([o[i][f] for o in by_order]))
            row[f + "_ratio"] = float(np.exp(np.mean(np.log(ratios))))
            row[f + "_ratios"] = ratios
        out.append(row)
    return out


def _figure(row: dict, f: str, by_order: bool) -> str:
    """'10.52 ms (1.04x; by order 1.02, 1.06)' for figure ``f`` of a combined row."""
    each = "; by order " + ", ".join(f"{x:.2f}" for x in row[f + "_ratios"]) if by_order else ""
    return f"{row[f] * 1e3:6.2f} ms ({row[f + '_ratio']:.2f}x{each})"


def _child(specs: list[str], args: argparse.Namespace) -> list[dict]:
    cmd = [sys.executable, "-m", "benchmarks.llm_ab", "--orders", "1", "--raw",
           "--steps", str(args.steps), "--block", str(args.block), "--threads",
           str(args.threads), "--context", str(args.context), "--seed", str(args.seed), *specs]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.llm_ab", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--context", type=int, default=1024,
                    help="tokens a cache holds before it restarts from the 48-token prompt "
                         "(112: the past of bench llm's 64-token answers)")
    ap.add_argument("--block", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--orders", type=int, default=0,
                    help="processes, each loading the specs rotated by one more place "
                         "(default: as many as specs)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)  # a child's figures
    args = ap.parse_args(argv)
    specs = list(args.specs)
    orders = args.orders or len(specs)
    if orders == 1:
        by_order = [measure(specs, args.steps, args.block, args.threads, args.seed,
                            args.context)]
    else:
        by_order, n = [], len(specs)
        for k in range(orders):
            rot = specs[k % n:] + specs[:k % n]      # spec i is loaded at place (i - k) mod n
            print(f"load order {k + 1}/{orders}: {' '.join(s.split(',')[0] for s in rot)}",
                  file=sys.stderr, flush=True)
            got = _child(rot, args)
            by_order.append([got[(i - k) % n] for i in range(n)])
    if args.raw:
        print(json.dumps(by_order[0]))
        return 0
    rows = combine(by_order)
    if args.json:
        print(json.dumps(rows))
        return 0
    for r in rows:
        figs = {f: _figure(r, f, orders > 1) for f in FIGURES}
        print(f"{r['spec']}\n  step wall {figs['step_wall']}  cpu {figs['step_cpu']}\n"
              f"  prefill48 wall {figs['prefill_wall']}  cpu {figs['prefill_cpu']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

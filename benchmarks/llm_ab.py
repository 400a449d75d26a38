"""Interleaved A/B of built LLM directories and onnxruntime session settings, in one process.

    python -m benchmarks.llm_ab [--steps 300] [--block 1] [--threads 2] DIR[,key=value...] ...

Each spec is a model directory (``edge-runtime models build`` output) plus optional session
config entries (``session.intra_op.allow_spinning=1``, ``session.intra_op.spin_duration_us=200``
...) or ``threads=N``. All specs are loaded side by side; the decode steps then alternate
between them, ``--block`` steps at a time, in a shuffled order each round, so a busy box slows
every spec alike. Printed per spec: median wall and process-CPU time of one decode step and of
a 48-token prefill, each as a ratio to the first spec. Use ``taskset -c 0,1`` to pin. With
spinning specs, use ``--block 20`` or more (an idle spinning session steals the other core).
Put the same directory twice to see the harness's own spread.
"""
from __future__ import annotations

import argparse
import json
import random
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
    for k, v in entries.items():
        so.add_session_config_entry(k, v)
    cfg = json.loads((Path(d) / "model_config.json").read_text())
    sess = ort.InferenceSession(str(Path(d) / cfg["model_file"]), so,
                                providers=["CPUExecutionProvider"])
    return KvRunner(OpenedSession(sess, "cpu", ["CPUExecutionProvider"], []), cfg, max_len)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.llm_ab", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--block", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    max_len = 1024
    runs = [{"spec": s, "runner": _open(s, args.threads, max_len), "tok": 200,
             "wall": [], "cpu": [], "prefill": []} for s in args.specs]
    for _ in range(3):
        for r in runs:
            r["runner"].reset()
            t, c = time.perf_counter(), time.process_time()
            r["runner"].feed(PROMPT)
            r["prefill"].append((time.perf_counter() - t, time.process_time() - c))
    rnd = random.Random(args.seed)
    for _ in range(0, args.steps, args.block):
        order = list(runs)
        rnd.shuffle(order)
        for r in order:
            runner = r["runner"]
            for _ in range(args.block):
                if runner.length >= max_len - 1:
                    runner.reset()
                    runner.feed(PROMPT)
                t, c = time.perf_counter(), time.process_time()
                logits = runner.feed([r["tok"]])
                r["wall"].append(time.perf_counter() - t)
                r["cpu"].append(time.process_time() - c)
                r["tok"] = int(np.argmax(logits))
    base = None
    for r in runs:
        fig = (np.median(r["wall"]), np.median(r["cpu"]),
               np.median([p[0] for p in r["prefill"]]), np.median([p[1] for p in r["prefill"]]))
        base = base or fig
        ratio = [b / f for b, f in zip(base, fig, strict=True)]
        print(f"{r['spec']}\n  step wall {fig[0] * 1e3:6.2f} ms ({ratio[0]:.2f}x)  cpu "
              f"{fig[1] * 1e3:6.2f} ms ({ratio[1]:.2f}x) | prefill48 wall {fig[2] * 1e3:6.1f} ms "
              f"({ratio[2]:.2f}x) cpu {fig[3] * 1e3:6.1f} ms ({ratio[3]:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

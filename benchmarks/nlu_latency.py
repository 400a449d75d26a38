"""One-core latency of the NLU classifier and of the whole parse, several rounds.

    python -m benchmarks.nlu_latency --model DIR --data ROWS.jsonl [--rounds 5] [--queries 1000]

The process is pinned to one CPU (``os.sched_setaffinity``) and onnxruntime to one thread;
each round times ``--queries`` sentences one at a time (normalize + tokenize + ONNX + oos
decision; then the whole ``Understander.parse``). Prints the median over rounds of each
round's p50/p90/p99 in milliseconds, and the spread of the p99s (the machine is shared).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from edge_runtime.nlu.text import normalize_text
from edge_runtime.nlu.train.datasets import read_examples
from edge_runtime.nlu.train.evaluation import build_understander
from edge_runtime.nlu.train.metrics import percentiles_ms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--cpu", type=int, default=0, help="the CPU to pin to")
    args = ap.parse_args(argv)
    os.sched_setaffinity(0, {args.cpu})
    nlu = build_understander(args.model, threads=1)
    enc = nlu._encoder
    texts = [r.text for r in read_examples(args.data)][:args.queries]
    for t in texts[:50]:
        nlu.parse(t)
    rounds = {"classifier": [], "parse": []}
    for _ in range(args.rounds):
        for name, fn in (("classifier", lambda t: enc.classify(normalize_text(t))),
                         ("parse", nlu.parse)):
            times = []
            for t in texts:
                t0 = time.perf_counter()
                fn(t)
                times.append(time.perf_counter() - t0)
            rounds[name].append(percentiles_ms(times))
    out = {"model": str(args.model), "model_mb": round((args.model / "model.onnx").stat().st_size / 1e6, 1),
           "dir_mb": round(sum(p.stat().st_size for p in args.model.iterdir() if p.is_file()) / 1e6, 1),
           "queries": len(texts), "rounds": args.rounds, "cpu": args.cpu}
    for name, rs in rounds.items():
        out[name] = {k: round(statistics.median(r[k] for r in rs), 3) for k in ("p50", "p90", "p99", "mean")}
        out[name]["p99_rounds"] = [round(r["p99"], 2) for r in rs]
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Local LLM benchmark: build time, size on disk, TTFT, decode tok/s, peak RSS, fidelity.

    python benchmarks/llm_bench.py --gguf PATH [--model-dir DIR] [--threads 2] [--runs 5]

Builds into a temporary directory unless --model-dir holds a built model. Prints one JSON
object. Figures are medians over --runs; this machine is noisy, so compare back to back.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from edge_runtime.llm import load_engine
from edge_runtime.types import GenerationParams, Message

SYSTEM = ("You are a helpful voice assistant. Answer in one to three short, plain sentences "
          "that sound natural when spoken aloud.")
QUESTION = "Why is the sky blue? Please explain it simply."   # ~50 tokens with the template


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", type=Path, required=True)
    ap.add_argument("--model-dir", type=Path)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--accuracy-level", type=int, default=1)
    ap.add_argument("--no-fidelity", action="store_true")
    args = ap.parse_args(argv)
    out: dict = {}
    model_dir = args.model_dir
    if model_dir is None or not (model_dir / "model.onnx").is_file():
        # build in a child process so its peak memory is measured apart from the engine's
        model_dir = model_dir or Path(tempfile.mkdtemp(prefix="llm_bench_"))
        code = ("import sys; from pathlib import Path; "
                "from edge_runtime.models.gguf2onnx import build_llm; "
                "build_llm(Path(sys.argv[1]), Path(sys.argv[2]), accuracy_level=int(sys.argv[3]))")
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code, str(args.gguf), str(model_dir),
                        str(args.accuracy_level)], check=True)
        out["build_s"] = round(time.perf_counter() - t, 2)
        out["build_peak_rss_mb"] = round(
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
        out["accuracy_level"] = args.accuracy_level
    out["disk_mb"] = round(sum(p.stat().st_size for p in model_dir.iterdir()
                               if p.is_file()) / 1e6, 1)
    t = time.perf_counter()
    eng = load_engine(model_dir, providers=("cpu",), threads=args.threads)
    out["load_s"] = round(time.perf_counter() - t, 2)
    msgs = [Message("system", SYSTEM), Message("user", QUESTION)]
    out["prompt_tokens"] = eng.prompt_tokens(msgs)
    ttft, tps = [], []
    fixed = GenerationParams(temperature=0.0, repetition_penalty=1.0, stop_at_sentence=0,
                             max_new_tokens=args.decode_tokens)
    for i in range(args.runs + 1):
        list(eng.generate(msgs, fixed))
        if i == 0:
            continue   # warm-up
        st = eng.last_stats
        ttft.append(st["ttft_s"])
        if st["decode_tok_s"]:
            tps.append(st["decode_tok_s"])
    out["ttft_ms_median"] = round(statistics.median(ttft) * 1e3, 1)
    out["decode_tok_s_median"] = round(statistics.median(tps), 1)
    out["decode_tokens"] = eng.last_stats["new_tokens"]
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if not args.no_fidelity:
        from edge_runtime.models.gguf2onnx import check_fidelity

        out["fidelity"] = check_fidelity(args.gguf, model_dir)
    out["threads"] = args.threads
    out["load_avg_1m"] = round(os.getloadavg()[0], 2)   # other work on the box skews timings
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])

"""Local LLM benchmark: this engine vs llama.cpp on the same GGUF, side by side.

    edge-runtime bench llm [--gguf PATH] [--model-dir DIR] [--threads 2] [--runs 7]
                           [--decode-tokens 64] [--batching 1,2,4,8,16] [--batch-seconds 8]
                           [--no-llama-cpp]
                           [--no-fidelity] [--llama-spin] [--json]

Each engine runs in its own worker process (clean peak RSS); their runs are interleaved
(A B, B A, ...) so machine noise hits both, and figures are medians of ``--runs`` paired
runs: TTFT for a ~50-token prompt with a cold cache ("ttft_ms") and with the system prompt
cached ("ttft_ms_prefix_cached": a new question after the same system prompt, each engine
reusing the KV of the prefix it already holds),
greedy decode tok/s, peak RSS (VmHWM, before the fidelity and batching phases), top-1
agreement with the fp32 numpy reference of the GGUF (teacher-forced; llama.cpp's own
logits with ``logits_all=True``). Then sustained aggregate throughput of N sessions kept
in flight (each asks question after question for --batch-seconds, then the answers in
flight are cancelled, so no tail of fewer sessions counts) with micro-batching
(:class:`BatchingEngine`) and without (the plain engine serialises them); and TTFT per turn
of a 5-turn dialogue (ConversationStore) with the previous turns' KV reused and without.
Ratios are ours / llama.cpp. Without --json a short table is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SYSTEM = ("You are a helpful voice assistant. Answer in one to three short, plain sentences "
          "that sound natural when spoken aloud.")
QUESTION = "Why is the sky blue? Please explain it simply."   # ~50 tokens with the template
QUESTIONS = ["Why is the sky blue?", "Name three colours.", "What is the capital of France?",
             "Tell me a joke about cats.", "How do plants grow?", "What makes it rain?",
             "Who wrote Hamlet?", "What is two plus two?", "How far is the Moon?",
             "What do bees eat?", "Why do we sleep?", "What is a volcano?",
             "How does a rainbow form?", "What is the biggest ocean?", "Why is the sea salty?",
             "How do birds fly?"]
DIALOGUE = ["Hi, my name is Ann and I live in Lyon.", "What is the weather usually like there?",
            "Which river runs through that city?", "Remind me, what is my name?",
            "Suggest one dish I should try there."]
MODEL = "smollm2-135m-instruct"


class Worker:
    """A benchmark worker process speaking one JSON line per command."""

    def __init__(self, kind: str, spec: dict, spin: bool = False) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(HERE.parent)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        if kind == "llama_cpp" and not spin:
            # llama.cpp's OpenMP threads spin between ops by default; on a shared 2-core box
            # that made its 2-thread run 25-50x slower (7.5 s TTFT). Ours never spins
            # (session.intra_op.allow_spinning=0), so give both the same policy.
            env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self.kind = kind
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "llm_bench_workers.py"), kind, json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"benchmark worker {self.kind} exited (rc {self.proc.wait()})")
        return json.loads(line)

    def ask(self, **cmd) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        try:
            self.ask(cmd="quit")
        except (RuntimeError, BrokenPipeError, ValueError):
            pass
        self.proc.wait(timeout=30)


def _default_paths() -> tuple[Path | None, Path | None]:
    try:
        from edge_runtime.config import load_config
        from edge_runtime.models.store import ModelStore
        store = ModelStore(load_config(env={}))
        return store.file_path(MODEL), store.built_dir(MODEL)
    except Exception:  # no config or manifest: the user passes --gguf/--model-dir
        return None, None


def _spec(args: argparse.Namespace) -> dict:
    from tokenizers import Tokenizer

    from edge_runtime.llm import load_engine
    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf
    from edge_runtime.models.gguf2onnx.reference import DEFAULT_TEXT, reference_logits
    from edge_runtime.types import Message

    eng = load_engine(args.model_dir, providers=("cpu",), threads=1, context_tokens=64)
    msgs = [Message("system", SYSTEM), Message("user", QUESTION)]
    spec = {"gguf": str(args.gguf), "model_dir": str(args.model_dir), "threads": args.threads,
            "decode_tokens": args.decode_tokens, "n_ctx": 2048,
            "messages": [[m.role, m.content] for m in msgs],
            "prompt_ids": eng.prompt.tokens(msgs), "questions": QUESTIONS,
            # warm runs: a new question after the system prompt (only its prefix is cached)
            "warm_messages": [[SYSTEM, q] for q in QUESTIONS],
            "warm_prompt_ids": [eng.prompt.tokens([Message("system", SYSTEM),
                                                  Message("user", q)]) for q in QUESTIONS],
            "stop_ids": sorted(eng._vocab.stop_ids)}
    del eng
    if not args.no_fidelity:
        ids = Tokenizer.from_file(str(args.model_dir / "tokenizer.json")).encode(DEFAULT_TEXT).ids
        ref = reference_logits(read_gguf(args.gguf), ids).argmax(-1)
        path = Path(tempfile.mkdtemp(prefix="llm_bench_")) / "reference_argmax.npy"
        np.save(path, ref)
        spec.update(fidelity_ids=ids, reference_argmax=str(path))
    return spec


def _median(runs: list[dict], key: str) -> float | None:
    vals = [r[key] for r in runs if r.get(key) is not None]
    return round(statistics.median(vals), 2) if vals else None


def _ratio(a, b) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def bench(args: argparse.Namespace) -> dict:
    spec = _spec(args)
    workers = {"ours": Worker("ours", spec)}
    if not args.no_llama_cpp:
        workers["llama_cpp"] = Worker("llama_cpp", spec, spin=args.llama_spin)
    cold: dict[str, list[dict]] = {k: [] for k in workers}
    warm: dict[str, list[dict]] = {k: [] for k in workers}
    try:
        for i in range(args.runs):
            order = list(workers) if i % 2 == 0 else list(reversed(workers))
            for k in order:
                cold[k].append(workers[k].ask(cmd="run", cold=True))
            for k in order:
                warm[k].append(workers[k].ask(cmd="run", cold=False))
        out: dict = {}
        for k, w in workers.items():
            out[k] = {"ttft_ms": _median(cold[k], "ttft_ms"),
                      "ttft_ms_prefix_cached": _median(warm[k], "ttft_ms"),
                      "decode_tps": _median(cold[k] + warm[k], "decode_tps"),
                      "new_tokens": _median(cold[k], "new_tokens"),
                      "prompt_tokens": cold[k][0]["prompt_tokens"],
                      "peak_rss_mb": w.ask(cmd="rss")["peak_rss_mb"]}
        if args.batching:
            ours = workers["ours"]
            sec = args.batch_seconds
            ours.ask(cmd="batch", n=max(args.batching), batched=True, seconds=1.0)  # warm-up
            out["batching"] = {str(n): round(ours.ask(cmd="batch", n=n, batched=True,
                                                      seconds=sec)["tps"], 1)
                               for n in args.batching}
            out["no_batching"] = {str(n): round(ours.ask(cmd="batch", n=n, batched=False,
                                                         seconds=sec)["tps"], 1)
                                  for n in sorted({1, 8, max(args.batching)} & set(args.batching))}
            out["ours"]["peak_rss_mb_after_batching"] = ours.ask(cmd="rss")["peak_rss_mb"]
        d = workers["ours"].ask(cmd="dialogue", turns=DIALOGUE)
        out["dialogue"] = {"prompt_tokens": d["reuse"]["prompt_tokens"],
                           "ttft_ms_reuse": [round(x, 1) for x in d["reuse"]["ttft_ms"]],
                           "ttft_ms_no_reuse": [round(x, 1) for x in d["no_reuse"]["ttft_ms"]]}
        if not args.no_fidelity:
            for k, w in workers.items():
                out[k]["top1_agreement"] = round(w.ask(cmd="fidelity")["top1_agreement"], 4)
    finally:
        for w in workers.values():
            w.close()
    if "llama_cpp" in out:
        a, b = out["ours"], out["llama_cpp"]
        out["ratios"] = {"decode_tps": _ratio(a["decode_tps"], b["decode_tps"]),
                         "ttft": _ratio(a["ttft_ms"], b["ttft_ms"]),
                         "ttft_prefix_cached": _ratio(a["ttft_ms_prefix_cached"],
                                                      b["ttft_ms_prefix_cached"]),
                         "peak_rss": _ratio(a["peak_rss_mb"], b["peak_rss_mb"])}
    base = out.get("no_batching", {}).get("1")
    if "batching" in out and base:
        # over the plain engine serving one session: what batching buys on this machine
        out["batching_speedup"] = {n: round(v / base, 2) for n, v in out["batching"].items()}
    out["runs"] = args.runs
    out["threads"] = args.threads
    out["model_dir"] = str(args.model_dir)
    out["load_avg_1m"] = round(os.getloadavg()[0], 2)   # other work on the box skews timings
    return out


def _table(out: dict) -> str:
    rows = ["engine      ttft_ms  cached_ms  decode_tps  peak_rss_mb  top1"]
    for k in ("ours", "llama_cpp"):
        if k in out:
            r = out[k]
            rows.append(f"{k:<10} {r['ttft_ms']!s:>8} {r['ttft_ms_prefix_cached']!s:>10} "
                        f"{r['decode_tps']!s:>11} {r['peak_rss_mb']!s:>12} "
                        f"{r.get('top1_agreement', '-')!s:>5}")
    for key in ("ratios", "batching", "no_batching", "batching_speedup", "dialogue"):
        if key in out:
            rows.append(f"{key}: {json.dumps(out[key])}")
    rows.append(f"load average {out['load_avg_1m']} (other work on the box skews timings)")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    gguf, model_dir = _default_paths()
    ap = argparse.ArgumentParser(prog="edge-runtime bench llm",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", type=Path, default=gguf)
    ap.add_argument("--model-dir", type=Path, default=model_dir)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--batching", default="1,2,4,8,16",
                    help="concurrent session counts for the throughput sweep ('' = skip)")
    ap.add_argument("--batch-seconds", type=float, default=8.0,
                    help="how long each concurrency level is kept busy (sustained tok/s)")
    ap.add_argument("--no-llama-cpp", action="store_true")
    ap.add_argument("--llama-spin", action="store_true",
                    help="let llama.cpp's OpenMP threads spin (default: OMP_WAIT_POLICY=PASSIVE)")
    ap.add_argument("--no-fidelity", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.batching = [int(x) for x in args.batching.split(",") if x.strip()]
    for what, p, name in (("GGUF", args.gguf, "--gguf"),
                          ("built model", args.model_dir and args.model_dir / "model.onnx",
                           "--model-dir")):
        if p is None or not Path(p).is_file():
            print(f"{what} not found ({p}); pass {name} or run `edge-runtime models pull` "
                  f"and `edge-runtime models build`", file=sys.stderr)
            return 2
    out = bench(args)
    print(json.dumps(out) if args.json else _table(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

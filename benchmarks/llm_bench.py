"""Local LLM benchmark: this engine vs llama.cpp on the same GGUF, side by side.

    edge-runtime bench llm [--model NAME] [--gguf PATH] [--model-dir DIR] [--threads 2]
                           [--spin-us -1] [--runs 7] [--processes 1] [--decode-tokens 64]
                           [--batching 1,2,4,8,16]
                           [--batch-seconds 8] [--no-llama-cpp]
                           [--llama-policy both|passive|spin] [--no-fidelity]
                           [--fidelity-text FILE] [--no-step-ops] [--json]

``--model`` names a model of the store (default SmolLM2-135M-Instruct): its pulled GGUF and
built ONNX directory (``--gguf``/``--model-dir`` override them). llama.cpp runs in both
OpenMP thread policies in the same run (``--llama-policy both``, the default):
``OMP_WAIT_POLICY=PASSIVE`` (threads sleep between ops, as ours do) and its own default
(threads spin; ``llama_cpp_spin``). Each ratio takes llama.cpp at whichever policy is better
for that figure (``anchor`` says which), so no setting of llama.cpp is left out. Our engine
runs as the daemon runs it: with the decode-step kernels ``models build`` compiled
(``edge_runtime.llm.step_ops``; ``step_ops`` in the output names the library) unless
``--no-step-ops``.

Each engine runs in its own worker process (clean peak RSS); their runs are interleaved
(A B, B A, ...) so machine noise hits both, and figures are medians of ``--runs`` paired
runs (with ``--processes N``, of N sets of fresh worker processes one after the other,
``--runs`` each, pooled; where a process's memory lands moves its decode speed on a shared
VM, so the decode ratio is then the median of the sets' own ratios, listed in
``decode_ratio_by_process``, and the ratio of the pooled medians is ``decode_tps_pooled``):
TTFT for a ~50-token prompt with a cold cache ("ttft_ms") and with the system prompt cached
("ttft_ms_prefix_cached": a new question after the same system prompt, each engine reusing
the KV of the prefix it already holds), greedy decode tok/s, peak RSS (VmHWM, before the
fidelity and batching phases; the largest of the sets of processes), top-1 agreement with
the fp32 numpy reference of the GGUF (teacher-forced; llama.cpp's own
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

from edge_runtime.onnx_session import resolve_spin

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
        self.kind = kind
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "llm_bench_workers.py"), kind, json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=worker_env(kind, spin, os.environ))
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


def worker_env(kind: str, spin: bool, base: dict | os._Environ) -> dict:
    """The environment of a worker: this checkout first on PYTHONPATH; for llama.cpp the
    OpenMP wait policy. PASSIVE: its threads sleep between ops, as ours do
    (session.intra_op.allow_spinning=0; spinning made its 2-thread run 25-50x slower on a
    shared 2-core box). ``spin``: llama.cpp's own default (no OMP_WAIT_POLICY at all)."""
    env = dict(base, PYTHONPATH=os.pathsep.join(
        [str(HERE.parent)] + [p for p in [base.get("PYTHONPATH")] if p]))
    if kind == "llama_cpp":
        if spin:
            env.pop("OMP_WAIT_POLICY", None)
        else:
            env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


def _default_paths(model: str = MODEL) -> tuple[Path | None, Path | None]:
    try:
        from edge_runtime.config import load_config
        from edge_runtime.models.store import ModelStore
        store = ModelStore(load_config(env={}))
        return store.file_path(model), store.built_dir(model)
    except Exception:  # no config, manifest or model: the user passes --gguf/--model-dir
        return None, None


def _step_ops_library() -> str | None:
    """The decode-step kernels the daemon would load (edge_runtime.runtime), as a path."""
    try:
        from edge_runtime.config import load_config
        from edge_runtime.runtime import step_ops_library
        lib = step_ops_library(load_config(env={}))
    except Exception:  # no config: the plain graph
        return None
    return str(lib) if lib else None


POLICIES = {"passive": "llama_cpp_passive", "spin": "llama_cpp_spin"}
# figure -> better is higher (True) or lower (False)
_FIGURES = {"decode_tps": True, "ttft_ms": False, "ttft_ms_prefix_cached": False,
            "peak_rss_mb": False}


def llama_anchor(out: dict) -> dict:
    """Ratios ours / llama.cpp, each against llama.cpp's better policy for that figure.

    Sets ``out["llama_cpp"]`` (the policy with the faster decode, for the table),
    ``out["anchor"]`` (figure -> the policy it was compared with) and ``out["ratios"]``;
    with both policies measured, ``out["ratios_by_policy"]`` holds the decode ratio of each.
    """
    runs = {pol: out[key] for pol, key in POLICIES.items() if key in out}
    if not runs:
        return out
    anchor, ratios = {}, {}
    for fig, higher in _FIGURES.items():
        have = {p: r[fig] for p, r in runs.items() if r.get(fig) is not None}
        if not have:
            continue
        best = (max if higher else min)(have, key=have.__getitem__)
        anchor[fig] = best
        ratios[fig] = _ratio(out["ours"].get(fig), have[best])
    fastest = anchor.get("decode_tps", next(iter(runs)))
    out["llama_cpp"] = {**runs[fastest], "policy": fastest}
    out["anchor"] = anchor
    out["ratios"] = {"decode_tps": ratios.get("decode_tps"), "ttft": ratios.get("ttft_ms"),
                     "ttft_prefix_cached": ratios.get("ttft_ms_prefix_cached"),
                     "peak_rss": ratios.get("peak_rss_mb")}
    if len(runs) > 1:
        out["ratios_by_policy"] = {p: {"decode_tps": _ratio(out["ours"]["decode_tps"],
                                                            r["decode_tps"]),
                                       "ttft": _ratio(out["ours"]["ttft_ms"], r["ttft_ms"])}
                                   for p, r in runs.items()}
    return out


def _spec(args: argparse.Namespace) -> dict:
    from tokenizers import Tokenizer

    from edge_runtime.llm import load_engine
    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf
    from edge_runtime.models.gguf2onnx.reference import DEFAULT_TEXT, reference_logits
    from edge_runtime.types import Message

    eng = load_engine(args.model_dir, providers=("cpu",), threads=1, context_tokens=64)
    msgs = [Message("system", SYSTEM), Message("user", QUESTION)]
    spec = {"gguf": str(args.gguf), "model_dir": str(args.model_dir), "threads": args.threads,
            "spin_us": args.spin_us, "step_ops": args.step_ops,
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
        model = read_gguf(args.gguf)
        text = args.fidelity_text.read_text(encoding="utf-8") if args.fidelity_text \
            else DEFAULT_TEXT
        ids = Tokenizer.from_file(str(args.model_dir / "tokenizer.json")).encode(
            text, add_special_tokens=False).ids
        if model.metadata.get("add_bos"):   # as the engine and `models check` feed it (Gemma)
            ids = [model.bos_id] + ids
        ref = reference_logits(model, ids).argmax(-1)
        path = Path(tempfile.mkdtemp(prefix="llm_bench_")) / "reference_argmax.npy"
        np.save(path, ref)
        spec.update(fidelity_ids=ids, reference_argmax=str(path))
    return spec


def _median(runs: list[dict], key: str) -> float | None:
    vals = [r[key] for r in runs if r.get(key) is not None]
    return round(statistics.median(vals), 2) if vals else None


def _ratio(a, b) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def _start(args: argparse.Namespace, spec: dict) -> dict[str, Worker]:
    """One worker process per engine (llama.cpp once per wait policy asked for)."""
    workers = {"ours": Worker("ours", spec)}
    if not args.no_llama_cpp:
        for pol in (("passive", "spin") if args.llama_policy == "both" else
                    (args.llama_policy,)):
            workers[POLICIES[pol]] = Worker("llama_cpp", spec, spin=pol == "spin")
    return workers


def _paired_runs(workers: dict[str, Worker], runs: int) -> tuple[dict, dict]:
    """``runs`` rounds, the engines interleaved (A B, B A, ...): each a cold-cache answer,
    then one with the system prompt cached. Returns (cold, warm) run lists per engine."""
    cold: dict[str, list[dict]] = {k: [] for k in workers}
    warm: dict[str, list[dict]] = {k: [] for k in workers}
    for i in range(runs):
        order = list(workers) if i % 2 == 0 else list(reversed(workers))
        for k in order:
            cold[k].append(workers[k].ask(cmd="run", cold=True))
        for k in order:
            warm[k].append(workers[k].ask(cmd="run", cold=False))
    return cold, warm


def _decode_ratio(cold: dict, warm: dict) -> float | None:
    """Our median decode tok/s over llama.cpp's at its faster policy, in one set of
    processes."""
    tps = {k: _median(cold[k] + warm[k], "decode_tps") for k in cold}
    llama = [v for k, v in tps.items() if k != "ours" and v is not None]
    return _ratio(tps["ours"], max(llama)) if llama else None


def bench(args: argparse.Namespace) -> dict:
    spec = _spec(args)
    workers: dict[str, Worker] = {}
    cold: dict[str, list[dict]] = {}
    warm: dict[str, list[dict]] = {}
    rss: dict[str, float] = {}
    by_process: list[float | None] = []
    try:
        # each set of fresh processes (--processes) lays its memory out anew, which moves
        # a decode by a quarter on a shared VM: the figures pool the runs of every set
        for _ in range(args.processes):
            for w in workers.values():
                w.close()
            workers = {}                          # closed: not again if the start fails
            workers = _start(args, spec)
            c, wm = _paired_runs(workers, args.runs)
            by_process.append(_decode_ratio(c, wm))
            for k, w in workers.items():
                cold.setdefault(k, []).extend(c[k])
                warm.setdefault(k, []).extend(wm[k])
                rss[k] = max(rss.get(k, 0.0), w.ask(cmd="rss")["peak_rss_mb"])
        out: dict = {}
        for k in workers:
            out[k] = {"ttft_ms": _median(cold[k], "ttft_ms"),
                      "ttft_ms_prefix_cached": _median(warm[k], "ttft_ms"),
                      "decode_tps": _median(cold[k] + warm[k], "decode_tps"),
                      "new_tokens": _median(cold[k], "new_tokens"),
                      "prompt_tokens": cold[k][0]["prompt_tokens"],
                      "peak_rss_mb": rss[k]}
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
        if not args.no_fidelity:     # the thread policy does not change llama.cpp's logits:
            llama = [k for k in workers if k != "ours"][:1]      # one llama.cpp run is enough
            for k in ["ours", *llama]:
                out[k]["top1_agreement"] = round(workers[k].ask(cmd="fidelity")
                                                 ["top1_agreement"], 4)
    finally:
        for w in workers.values():
            w.close()
    llama_anchor(out)
    if "llama_cpp" in out and "top1_agreement" not in out["llama_cpp"]:
        agree = [out[k].get("top1_agreement") for k in POLICIES.values() if k in out]
        if any(a is not None for a in agree):
            out["llama_cpp"]["top1_agreement"] = next(a for a in agree if a is not None)
    base = out.get("no_batching", {}).get("1")
    if "batching" in out and base:
        # over the plain engine serving one session: what batching buys on this machine
        out["batching_speedup"] = {n: round(v / base, 2) for n, v in out["batching"].items()}
    out["model"] = args.model
    out["runs"] = args.runs
    out["processes"] = args.processes
    sets = [r for r in by_process if r is not None]
    if args.processes > 1 and sets:
        # each set is a paired comparison (its runs interleaved): the decode ratio is the
        # median of the sets' ratios; the ratio of the pooled medians, which pairs one
        # set's runs of ours with another's of llama.cpp, is kept beside it
        out["decode_ratio_by_process"] = by_process
        out["ratios"]["decode_tps_pooled"] = out["ratios"]["decode_tps"]
        out["ratios"]["decode_tps"] = round(statistics.median(sets), 3)
    out["threads"] = args.threads
    out["spin_us"] = args.spin_us
    out["step_ops"] = args.step_ops
    out["model_dir"] = str(args.model_dir)
    out["load_avg_1m"] = round(os.getloadavg()[0], 2)   # other work on the box skews timings
    return out


def _table(out: dict) -> str:
    rows = ["engine             ttft_ms  cached_ms  decode_tps  peak_rss_mb  top1"]
    for k in ("ours", *POLICIES.values()):
        if k in out:
            r = out[k]
            rows.append(f"{k:<17} {r['ttft_ms']!s:>8} {r['ttft_ms_prefix_cached']!s:>10} "
                        f"{r['decode_tps']!s:>11} {r['peak_rss_mb']!s:>12} "
                        f"{r.get('top1_agreement', '-')!s:>5}")
    for key in ("anchor", "ratios", "decode_ratio_by_process", "ratios_by_policy", "batching",
                "no_batching", "batching_speedup", "dialogue"):
        if key in out:
            rows.append(f"{key}: {json.dumps(out[key])}")
    rows.append(f"load average {out['load_avg_1m']} (other work on the box skews timings)")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="edge-runtime bench llm",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=MODEL,
                    help=f"a model of the store (`edge-runtime models list`; default {MODEL})")
    ap.add_argument("--gguf", type=Path, help="default: the model's pulled GGUF")
    ap.add_argument("--model-dir", type=Path, help="default: the model's built ONNX directory")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--spin-us", type=int, default=-1,
                    help="our engine's llm.spin_us: intra-op threads busy-wait up to this many "
                         "microseconds for the next op (0 = sleep; -1 = auto, the config "
                         "default: as the daemon resolves it on this machine)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--processes", type=int, default=1,
                    help="sets of fresh worker processes, --runs paired runs each; the "
                         "figures pool every run, the decode ratio is the median of the "
                         "sets' own (default 1)")
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--batching", default="1,2,4,8,16",
                    help="concurrent session counts for the throughput sweep ('' = skip)")
    ap.add_argument("--batch-seconds", type=float, default=8.0,
                    help="how long each concurrency level is kept busy (sustained tok/s)")
    ap.add_argument("--no-llama-cpp", action="store_true")
    ap.add_argument("--llama-policy", choices=("both", "passive", "spin"), default="both",
                    help="llama.cpp's OpenMP wait policy: both (default; ratios against the "
                         "better), PASSIVE only, or its own default (spinning) only")
    ap.add_argument("--llama-spin", action="store_const", dest="llama_policy", const="spin",
                    help="same as --llama-policy spin")
    ap.add_argument("--no-fidelity", action="store_true")
    ap.add_argument("--no-step-ops", dest="use_step_ops", action="store_false",
                    help="our engine without the decode-step kernels (onnxruntime's only)")
    ap.add_argument("--fidelity-text", type=Path, metavar="FILE",
                    help="top-1 agreement on this text (default: the 161-token passage of "
                    "`models check`; benchmarks/data/fidelity_passages.txt: two longer ones)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.processes < 1:
        print("--runs and --processes must be at least 1", file=sys.stderr)
        return 2
    args.spin_us = resolve_spin(args.spin_us, args.threads)     # auto: as the daemon would
    args.step_ops = _step_ops_library() if args.use_step_ops else None
    args.batching = [int(x) for x in args.batching.split(",") if x.strip()]
    if args.gguf is None or args.model_dir is None:
        gguf, model_dir = _default_paths(args.model)
        args.gguf = args.gguf or gguf
        args.model_dir = args.model_dir or model_dir
    for what, p, name in (("GGUF", args.gguf, "--gguf"),
                          ("built model", args.model_dir and args.model_dir / "model.onnx",
                           "--model-dir")):
        if p is None or not Path(p).is_file():
            print(f"{what} of {args.model} not found ({p}); pass {name} or run "
                  f"`edge-runtime models pull {args.model}` and `edge-runtime models build "
                  f"{args.model}`", file=sys.stderr)
            return 2
    if args.fidelity_text is not None and not args.fidelity_text.is_file():
        print(f"--fidelity-text {args.fidelity_text}: no such file (pass a UTF-8 text file, "
              "e.g. benchmarks/data/fidelity_passages.txt)", file=sys.stderr)
        return 2
    out = bench(args)
    print(json.dumps(out) if args.json else _table(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

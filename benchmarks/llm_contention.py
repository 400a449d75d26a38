"""Decode speed of built LLM directories beside CPU-bound competitor processes.

    python -m benchmarks.llm_contention [--competitors 0,1,2] [--kind numpy|tts]
                                        [--seconds 8] [--runs 3] [--threads 2] [--json]
                                        DIR[,key=value...] ...

Specs are as in ``benchmarks.llm_ab`` (a model directory plus session config entries, e.g.
``DIR,session.intra_op.allow_spinning=1,session.intra_op.spin_duration_us=200``). For each
spec and each number of competitors, the model decodes greedily (its own output fed back,
the context growing to 1,000 tokens, or the model's context, and starting again) for
``--seconds`` while that many competitor processes work as fast as they can: ``--kind
numpy`` (single-thread 256 x 256 matrix products: any CPU-bound program) or ``--kind tts``
(the product's own Piper voice at ``tts.threads``, synthesizing answer sentences one after
another: what shares the cores with the LLM while an answer is spoken). Printed per spec
and competitor count, medians of ``--runs``: decode tok/s, process CPU ms per token, and the
competitors' work per second (products, or seconds of audio: what the decoding left them).
The question it answers: what an intra-op thread pool's spinning (``llm.spin_us``) costs
and gains once the cores are shared, as they are on a device that also runs ASR and TTS.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.llm_ab import PROMPT, _open

MAX_CONTEXT = 1000
# one competitor: a single-thread numpy loop, its products per second on stdout
_COMPETITOR = r"""
import sys, time
import numpy as np
a = np.random.rand(256, 256).astype(np.float32)
n, start = 0, time.time()
end = start + float(sys.argv[1])
while time.time() < end:
    a @ a
    n += 1
print(n / (time.time() - start))
"""
# one competitor: the product's Piper voice speaking sentences back to back, seconds of audio
# per second on stdout
_TTS = r"""
import sys, time
from edge_runtime.config import TtsConfig
from edge_runtime.tts import load_tts
cfg = TtsConfig()
tts = load_tts(cfg.backend, model_path=cfg.model_path, threads=cfg.threads)
rate = getattr(tts, "sample_rate", 22050)
text = ("The moon is about three hundred and eighty four thousand kilometres away, "
        "which light crosses in a little over a second.")
sum(len(c) for c in tts.synthesize("warm up"))
samples, start = 0, time.time()
end = start + float(sys.argv[1])
while time.time() < end:
    samples += sum(len(c) for c in tts.synthesize(text))
print(samples / rate / (time.time() - start))
"""
COMPETITORS = {"numpy": _COMPETITOR, "tts": _TTS}
UNITS = {"numpy": "products/s", "tts": "s of audio/s"}
_ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def one_run(runner, competitors: int, seconds: float, context: int = MAX_CONTEXT,
            kind: str = "numpy") -> dict:
    """Decode for ``seconds`` beside ``competitors`` processes of ``kind``, the context
    starting again at ``context`` tokens; tok/s, CPU ms per token, the competitors' work per
    second."""
    runner.reset()
    runner.feed(PROMPT)
    lead = 3.0 if kind == "tts" else min(0.5, seconds / 4)    # the voice loads in ~1-2 s
    procs = [subprocess.Popen([sys.executable, "-c", COMPETITORS[kind], str(seconds + lead)],
                              stdout=subprocess.PIPE, env={**os.environ, **_ONE_THREAD})
             for _ in range(competitors)]
    time.sleep(lead)                            # let them start before timing
    tok, steps = PROMPT[-1], 0
    t0, c0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds * 0.75:
        if runner.length >= context:
            runner.reset()
            runner.feed(PROMPT)
        tok = int(np.argmax(runner.feed([tok])))
        steps += 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    theirs = [float(p.communicate()[0]) for p in procs]
    return {"tok_s": steps / wall, "cpu_ms_per_tok": 1000 * cpu / max(1, steps),
            "competitor_work_s": float(np.sum(theirs)) if theirs else 0.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.llm_contention", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--competitors", default="0,1,2", help="comma list of process counts")
    ap.add_argument("--kind", choices=sorted(COMPETITORS), default="numpy",
                    help="what the competitors do (see above)")
    ap.add_argument("--seconds", type=float, default=8.0, help="per run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    counts = [int(c) for c in args.competitors.split(",") if c.strip()]
    out: dict = {"seconds": args.seconds, "runs": args.runs, "threads": args.threads,
                 "kind": args.kind, "cpus": os.cpu_count(), "specs": {}}
    for spec in args.specs:
        cfg = json.loads((Path(spec.split(",")[0]) / "model_config.json").read_text())
        context = min(MAX_CONTEXT, int(cfg["context_length"]) - 1)
        runner = _open(spec, args.threads, context + 1)
        rows = {}
        for n in counts:
            runs = [one_run(runner, n, args.seconds, context, args.kind)
                    for _ in range(args.runs)]
            rows[str(n)] = {k: round(float(np.median([r[k] for r in runs])), 2) for k in runs[0]}
            if not args.json:
                r = rows[str(n)]
                print(f"{spec}  competitors {n}: {r['tok_s']:6.1f} tok/s, "
                      f"{r['cpu_ms_per_tok']:5.2f} CPU ms/token, competitors "
                      f"{r['competitor_work_s']:7.1f} {UNITS[args.kind]}", flush=True)
        out["specs"][spec] = rows
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""CLINC150 recipe helpers: extra out-of-scope training rows, and the figures in one place.

    python -m benchmarks.nlu_clinc extra-oos --model DIR1 --out train_plus.jsonl [--max-conf 0.75]
    python -m benchmarks.nlu_clinc asr-subset --out subset.jsonl [--in-scope 300]

The recipe (C = ../shared/data/clinc150, M = ~/.cache/edge-runtime/nlu):

    edge-runtime nlu train --data C/train.jsonl --val C/val.jsonl --out M/clinc-run1
    python -m benchmarks.nlu_clinc extra-oos --model M/clinc-run1 --out M/clinc_train_plus.jsonl
    edge-runtime nlu train --data M/clinc_train_plus.jsonl --val C/val.jsonl \
        --out M/clinc-ens2 --members 2 --epochs 3 --max-minutes 28
    edge-runtime nlu eval --data C/val.jsonl --model M/clinc-ens2 --json
    python -m benchmarks.nlu_latency --model M/clinc-ens2 --data C/val.jsonl

``asr-subset`` writes a validation subset for the speech eval (``benchmarks.nlu_asr``):
``--in-scope`` random in-scope rows (seed 0) and all 100 out-of-scope rows.

``extra-oos`` writes CLINC150 train plus the open questions of the built-in intent file
(``intents.yaml``, intent ``oos``: the project's own data, not CLINC's) that a first model
(DIR1, trained on CLINC train alone) does not give to a CLINC intent with probability
>= ``--max-conf`` (those are CLINC in-scope requests such as "play some music").
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from edge_runtime.nlu import load_intents
from edge_runtime.nlu.encoder import EncoderIntentModel
from edge_runtime.nlu.text import normalize_text
from edge_runtime.nlu.train.datasets import Example, read_jsonl, write_jsonl

CLINC = Path("/work/shared/data/clinc150")


def extra_oos(model_dir: Path, out: Path, max_conf: float, train: Path) -> dict:
    model = EncoderIntentModel(model_dir)
    kept, dropped = [], []
    for text in load_intents(None).intents["oos"].examples:
        name, conf = model.decide(model.probabilities(normalize_text(text)), 0.0)
        (dropped if name != "oos" and conf >= max_conf else kept).append(text)
    rows = read_jsonl(train) + [Example(t, "oos") for t in kept]
    write_jsonl(rows, out)
    return {"rows": len(rows), "extra_oos": len(kept), "dropped_as_in_scope": len(dropped)}


def asr_subset(out: Path, in_scope: int, val: Path) -> dict:
    rows = read_jsonl(val)
    ins = [r for r in rows if r.intent != "oos"]
    sel = random.Random(0).sample(ins, min(in_scope, len(ins))) + [r for r in rows if r.intent == "oos"]
    write_jsonl(sel, out)
    return {"rows": len(sel), "out": str(out)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=("extra-oos", "asr-subset"))
    ap.add_argument("--model", type=Path, help="extra-oos: the first model")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-conf", type=float, default=0.75)
    ap.add_argument("--train", type=Path, default=CLINC / "train.jsonl")
    ap.add_argument("--val", type=Path, default=CLINC / "val.jsonl")
    ap.add_argument("--in-scope", type=int, default=300)
    args = ap.parse_args(argv)
    if args.action == "asr-subset":
        print(json.dumps(asr_subset(args.out, args.in_scope, args.val)))
    elif args.model is None:
        ap.error("extra-oos needs --model")
    else:
        print(json.dumps(extra_oos(args.model, args.out, args.max_conf, args.train)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

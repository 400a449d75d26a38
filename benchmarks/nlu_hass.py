"""Home Assistant templates: our encoder + slot filler vs hassil, on text and on ASR transcripts.

    python -m benchmarks.nlu_hass prepare --work DIR [--per-template 8] [--test-per-template 2]
    python -m edge_runtime.nlu.train.cli train --data DIR/train.jsonl --out DIR/model --max-minutes 10
    python -m benchmarks.nlu_asr --data DIR/test.jsonl --out DIR/asr.jsonl --limit 300
    python -m benchmarks.nlu_hass eval --work DIR [--asr FILE] [--json]
    python -m benchmarks.nlu_hass export --work DIR --model DIR/model

The model with recognizer transcripts in its training data (``model3``, the better one):

    python -m benchmarks.nlu_asr --data DIR/train.jsonl --out DIR/train_asr.jsonl --limit 1500 --seed 11
    python -m benchmarks.nlu_hass asr-train --work DIR      # -> DIR/train_asr_plus.jsonl
    edge-runtime nlu train --data DIR/train_asr_plus.jsonl --out DIR/model3 --epochs 4 \
        --augment 0.5 --max-minutes 14
    edge-runtime nlu hass-export --data DIR/train.jsonl --model DIR/model3

(training sentences only are spoken: the test sets are transcripts of held-out sentences).

``prepare`` samples the English templates (hassil 3.12.1, home-assistant-intents
2026.10.27) into a training set (seed 1) and a held-out test set (seed 2, sentences of the
training set removed), both with slot values; the 100 CLINC150 out-of-scope training rows
join the training set as ``oos``. ``eval`` scores intent accuracy and exact slots (intent
right and every slot value equal) for ours (encoder + ``SlotFiller``), hassil, and the
hybrid the daemon uses (``hass_model.combine``: ours and hassil's template match
reconciled) in the same run, on the text and, when ``DIR/asr.jsonl`` (or ``--asr``) exists
(``benchmarks.nlu_asr``), on the transcripts of the same sentences spoken by Piper (joe)
and heard by faster-whisper tiny.en (beam 1, int8). ``export`` writes the daemon's Home
Assistant files into a trained model directory (``hass.json``: template pins and slot
tables; ``intents.yaml``: skills per intent; see ``edge_runtime.nlu.hass_model``), so
``nlu.model_dir`` set to it gives Hass intents their slots and skills.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from edge_runtime.nlu.encoder import EncoderIntentModel
from edge_runtime.nlu.hass_model import combine
from edge_runtime.nlu.text import normalize_text
from edge_runtime.nlu.train.datasets import Example, read_jsonl, write_jsonl
from edge_runtime.nlu.train.hass import HassData, SlotFiller
from edge_runtime.nlu.train.hass_model import export_model, prepare_dataset
from edge_runtime.nlu.train.metrics import percentiles_ms

CLINC_TRAIN = Path("/work/shared/data/clinc150/train.jsonl")


def prepare(work: Path, per_template: int, test_per_template: int, clinc_train: Path) -> dict:
    oos = [r for r in read_jsonl(clinc_train) if r.intent == "oos"] if clinc_train.is_file() else []
    return prepare_dataset(work, per_template, test_per_template, oos)


def _score(rows: list[tuple[Example, str]], parse) -> dict:
    intent_ok = slots_ok = 0
    times = []
    misses = []
    for gold, text in rows:
        t0 = time.perf_counter()
        name, slots = parse(text)
        times.append(time.perf_counter() - t0)
        intent_ok += name == gold.intent
        ok = name == gold.intent and tuple(slots) == gold.slots
        slots_ok += ok
        if not ok and len(misses) < 15:
            misses.append({"text": text, "gold": [gold.intent, dict(gold.slots)],
                           "got": [name, dict(slots)]})
    n = max(1, len(rows))
    return {"n": len(rows), "intent_accuracy": intent_ok / n, "exact_slots": slots_ok / n,
            "latency_ms": percentiles_ms(times), "misses": misses}


def evaluate(work: Path, model_dir: Path, asr: Path | None = None) -> dict:
    hass = HassData()
    train = [r for r in read_jsonl(work / "train.jsonl") if r.intent != "oos"]
    filler = SlotFiller(hass, train)
    model = EncoderIntentModel(model_dir)

    def ours_with_confidence(text: str):
        name, confidence = model.classify(normalize_text(text))
        return (name, filler.fill(name, text) if name != "oos" else ()), confidence

    def ours(text: str):
        return ours_with_confidence(text)[0]

    sets = {"text": [(r, r.text) for r in read_jsonl(work / "test.jsonl")]}
    asr = asr or work / "asr.jsonl"
    if asr.is_file():
        asr_rows = [json.loads(line) for line in asr.read_text().splitlines() if line]
        gold = [Example(o["reference"], o["intent"], tuple(sorted(o["slots"].items())))
                for o in asr_rows]
        sets["asr_sentences_as_text"] = [(g, g.text) for g in gold]
        sets["asr_transcripts"] = [(g, o["text"]) for g, o in zip(gold, asr_rows)]
    def hybrid(text: str):                  # both, reconciled by hass_model.combine
        return combine(*ours_with_confidence(text), hass.hassil_parse(text))

    report = {}
    for name, rows in sets.items():
        report[name] = {"ours": _score(rows, ours), "hassil": _score(rows, hass.hassil_parse),
                        "hybrid": _score(rows, hybrid)}
    report["model"] = str(model_dir)
    return report


def export(work: Path, model_dir: Path) -> dict:
    """Write ``hass.json`` and ``intents.yaml`` (from WORK/train.jsonl) into ``model_dir``."""
    return {"written": [str(p) for p in export_model(read_jsonl(work / "train.jsonl"), model_dir)]}


def asr_train(work: Path) -> dict:
    """WORK/train_asr_plus.jsonl: WORK/train.jsonl plus the transcripts of WORK/train_asr.jsonl
    (training sentences spoken and recognized) labelled with their sentence's intent."""
    rows = read_jsonl(work / "train.jsonl")
    heard = [json.loads(line) for line in (work / "train_asr.jsonl").read_text().splitlines() if line]
    extra = [Example(o["text"], o["intent"]) for o in heard if o["text"].strip("- ")]
    out = work / "train_asr_plus.jsonl"
    write_jsonl(rows + extra, out)
    return {"rows": len(rows) + len(extra), "transcripts": len(extra), "out": str(out)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=("prepare", "eval", "export", "asr-train"))
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--model", type=Path, help="model directory (default WORK/model)")
    ap.add_argument("--per-template", type=int, default=8)
    ap.add_argument("--test-per-template", type=int, default=2)
    ap.add_argument("--clinc-train", type=Path, default=CLINC_TRAIN)
    ap.add_argument("--asr", type=Path, help="transcripts (default WORK/asr.jsonl)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.action == "prepare":
        out = prepare(args.work, args.per_template, args.test_per_template, args.clinc_train)
    elif args.action == "asr-train":
        out = asr_train(args.work)
    elif args.action == "export":
        out = export(args.work, args.model or args.work / "model")
    else:
        out = evaluate(args.work, args.model or args.work / "model", args.asr)
    if args.json or args.action != "eval":
        print(json.dumps(out, indent=None if args.json else 1))
    else:
        for name, sides in out.items():
            if name == "model":
                continue
            for side in ("ours", "hassil", "hybrid"):
                m = sides[side]
                print(f"{name:26s} {side:6s} n={m['n']:4d} intent {100 * m['intent_accuracy']:.1f} % "
                      f"exact slots {100 * m['exact_slots']:.1f} % p50 {m['latency_ms']['p50']:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

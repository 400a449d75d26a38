"""Measure the Understander: held-out accuracy on its own examples, abstain rates and
mapped-intent accuracy on CLINC150, and parse latency.

    python -m edge_runtime.nlu.evaluate [--clinc PATH/val.jsonl] [--seeds 3] [--intents FILE]

Held-out split: 20 % of each intent's examples are left out of training (per seed).
CLINC150: rows labelled ``oos`` and rows of the 139 intents this assistant has no skill
for should abstain; rows of the 10 intents with a counterpart here should map to it.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import random
import time
from pathlib import Path

from ..config import NluConfig
from .base import OOS, IntentSet
from .loader import load_intents
from .understander import Understander

CLINC_TO_BUILTIN = {"time": "get_time", "date": "get_date", "timer": "timer_set",
                    "calculator": "arithmetic", "measurement_conversion": "unit_convert",
                    "greeting": "greeting", "goodbye": "goodbye", "thank_you": "thanks",
                    "what_can_i_ask_you": "help", "cancel": "stop"}
CLINC_AMBIGUOUS = ("smart_home",)      # partly device control, partly not: left out


def held_out_accuracy(intents: IntentSet, cfg: NluConfig, seed: int, share: float = 0.2) -> float:
    """Train on (1 - share) of each intent's examples, return accuracy on the rest."""
    rnd = random.Random(seed)
    train, test = {}, []
    for name, spec in intents.intents.items():
        examples = list(spec.examples)
        rnd.shuffle(examples)
        cut = max(1, int(len(examples) * (1 - share)))
        train[name] = dataclasses.replace(spec, examples=tuple(examples[:cut]))
        test += [(text, name) for text in examples[cut:]]
    nlu = Understander(IntentSet(train), cfg.lists, oos_threshold=cfg.oos_threshold,
                       max_text_chars=cfg.max_text_chars)
    return sum(nlu.parse(text).name == name for text, name in test) / len(test)


def clinc_report(nlu: Understander, path: Path) -> dict[str, float]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    groups: dict[str, list[dict]] = {"oos": [], "other": [], "mapped": []}
    for row in rows:
        label = row["intent"]
        if label == "oos":
            groups["oos"].append(row)
        elif label in CLINC_TO_BUILTIN:
            groups["mapped"].append(row)
        elif label not in CLINC_AMBIGUOUS:
            groups["other"].append(row)
    out: dict[str, float] = {}
    for group in ("oos", "other"):
        parsed = [nlu.parse(r["text"]) for r in groups[group]]
        out[f"{group}_n"] = len(parsed)
        out[f"{group}_abstain"] = sum(i.name == OOS for i in parsed) / max(1, len(parsed))
        out[f"{group}_skill_conf_ge_0.8"] = sum(i.name != OOS and i.confidence >= 0.8
                                                for i in parsed) / max(1, len(parsed))
    mapped = groups["mapped"]
    out["mapped_n"] = len(mapped)
    out["mapped_accuracy"] = sum(nlu.parse(r["text"]).name == CLINC_TO_BUILTIN[r["intent"]]
                                 for r in mapped) / max(1, len(mapped))
    start = time.perf_counter()
    for row in rows:
        nlu.parse(row["text"])
    out["parse_ms"] = (time.perf_counter() - start) / max(1, len(rows)) * 1000
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clinc", type=Path, help="CLINC150 jsonl file (e.g. val.jsonl)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--intents", default="", help="intent file (default: built in)")
    args = ap.parse_args(argv)
    cfg = NluConfig(intents_file=args.intents)
    intents = load_intents(args.intents or None)
    accs = [held_out_accuracy(intents, cfg, seed) for seed in range(args.seeds)]
    print(f"held-out 20% split accuracy: {', '.join(f'{a:.3f}' for a in accs)} "
          f"(mean {sum(accs) / len(accs):.3f})")
    start = time.perf_counter()
    Understander.clear_model_cache()
    nlu = Understander.from_config(cfg)
    print(f"load + train: {time.perf_counter() - start:.2f} s")
    if args.clinc:
        for key, value in clinc_report(nlu, args.clinc).items():
            print(f"clinc {key}: {value:.3f}" if isinstance(value, float) else f"clinc {key}: {value}")


if __name__ == "__main__":
    main()

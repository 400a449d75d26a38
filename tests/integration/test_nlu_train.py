"""The real training path: MiniLM fine-tuned with torch on a small intent file, exported to
ONNX (INT8), loaded by the run-time Understander without torch; bad input stays safe.

Needs the build-time ``train`` extra (torch==2.13.0, transformers; skipped without it) and
the base encoder (`edge-runtime models pull all-minilm-l6-v2`; `make test` pulls it).
About a minute on two cores.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Torch training on two cores takes ~2 min quiet; give the module fixture room on a busy box.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
pytest.importorskip("torch")
pytest.importorskip("transformers")

from edge_runtime.errors import BadInputError  # noqa: E402
from edge_runtime.nlu import OOS, load_intents  # noqa: E402
from edge_runtime.nlu.train.cli import main as nlu_cli  # noqa: E402
from edge_runtime.nlu.train.datasets import split_holdout, write_jsonl  # noqa: E402
from edge_runtime.nlu.train.datasets import Example  # noqa: E402
from edge_runtime.nlu.train.evaluation import build_understander  # noqa: E402

KEEP = ("get_time", "timer_set", "greeting", "unit_convert", "oos")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Example]]:
    from edge_runtime.errors import EdgeError
    from edge_runtime.nlu.train.train_encoder import EncoderTrainSettings, base_model_dir
    try:
        base_model_dir(EncoderTrainSettings())
    except EdgeError as exc:
        pytest.fail(f"no base encoder: {exc.one_line()}")
    work = tmp_path_factory.mktemp("nlu_train")
    intents = load_intents(None)
    rows = [Example(t, s.name) for s in intents.intents.values() if s.name in KEEP for t in s.examples]
    train, held = split_holdout(rows, 0.2, seed=0)
    write_jsonl(train, work / "train.jsonl")
    write_jsonl(held, work / "val.jsonl")
    out = work / "model"
    assert nlu_cli(["train", "--data", str(work / "train.jsonl"), "--val", str(work / "val.jsonl"),
                    "--out", str(out), "--epochs", "6", "--lr", "2e-4", "--max-minutes", "6",
                    "--members", "2", "--json"]) == 0
    return out, held


def test_model_directory_is_complete_and_small(trained: tuple[Path, list[Example]]) -> None:
    out, _ = trained
    meta = json.loads((out / "meta.json").read_text())
    assert {p.name for p in out.iterdir()} == {"model.onnx", "tokenizer.json", "meta.json",
                                               "words.txt", "memory.npz"}
    assert sorted(meta["labels"]) == sorted(KEEP)
    assert meta["precision"] in ("int8", "fp32")
    assert len(meta["fit"]["members"]) == 2
    if meta["precision"] == "int8":      # two encoders sharing one word-embedding table
        assert sum(p.stat().st_size for p in out.iterdir()) < 50e6
    assert 0.0 <= meta["oos_threshold"] < 1.0
    assert meta["oos_score"] is not None and meta["val_score_scheme"]["oos_recall"] is not None


def test_run_time_uses_the_score_scheme(trained: tuple[Path, list[Example]]) -> None:
    from edge_runtime.nlu.encoder import EncoderIntentModel
    model = EncoderIntentModel(trained[0])
    assert model.scorer is not None and model.memory is not None
    _, nearest = model.analyse("what time is it")
    assert 0.5 < nearest <= 1.0 + 1e-3


def test_held_out_sentences_are_understood(trained: tuple[Path, list[Example]]) -> None:
    out, held = trained
    nlu = build_understander(out)
    in_scope = [r for r in held if r.intent != OOS]
    right = sum(nlu.parse(r.text).name == r.intent for r in in_scope)
    assert right / len(in_scope) >= 0.8


@pytest.mark.parametrize("text", ["12345 678", "?!? ...", "\U0001F600\U0001F600",
                                  "quelle heure est il maintenant", "wie spät ist es jetzt bitte"])
def test_bad_input_is_never_a_confident_skill(trained: tuple[Path, list[Example]], text: str) -> None:
    intent = build_understander(trained[0]).parse(text)
    assert intent.name == OOS or intent.confidence < 0.9


@pytest.mark.parametrize("text", ["", "a" * 10_000])
def test_empty_and_huge_input_are_errors(trained: tuple[Path, list[Example]], text: str) -> None:
    with pytest.raises(BadInputError):
        build_understander(trained[0]).parse(text)


def test_run_time_needs_no_torch(trained: tuple[Path, list[Example]]) -> None:
    code = ("import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
            "from edge_runtime.nlu.train.evaluation import build_understander\n"
            f"print(build_understander({str(trained[0])!r}).parse('what time is it').name)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "get_time"

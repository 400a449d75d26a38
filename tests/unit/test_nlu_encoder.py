"""Encoder model directory at run time: loading, oos decision, Understander, eval CLI."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_runtime.config import NluConfig
from edge_runtime.errors import BadInputError
from edge_runtime.nlu import OOS, Understander
from edge_runtime.nlu.encoder import EncoderIntentModel, ModelDirError, decide
from edge_runtime.nlu.train.cli import main as nlu_cli
from edge_runtime.nlu.train.evaluation import build_understander

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nlu_encoder_fixtures import TINY_INTENTS_YAML, write_tiny_model  # noqa: E402


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("nlu") / "tiny", intents_yaml=TINY_INTENTS_YAML)


def test_model_classifies_and_abstains(model_dir: Path) -> None:
    model = EncoderIntentModel(model_dir)
    assert model.labels == ("get_time", "oos", "weather")
    name, conf = model.classify("what time is it")
    assert name == "get_time" and conf > 0.9
    assert model.classify("will it rain")[0] == "weather"
    assert model.classify("write a poem")[0] == OOS           # the oos class wins
    probs = model.probabilities("maybe")                       # time and weather tie: unsure
    assert probs.sum() == pytest.approx(1.0)
    assert model.decide(probs)[0] == OOS                       # under the 0.6 threshold
    assert model.decide(probs, threshold=0.0)[0] != OOS        # the class scheme keeps it


def test_decide_confidence_of_abstain_is_one_minus_best_in_scope() -> None:
    labels = ("a", "oos", "b")
    in_scope = np.array([True, False, True])
    assert decide(labels, in_scope, np.array([0.3, 0.5, 0.2]), 0.0) == ("oos", pytest.approx(0.7))
    assert decide(labels, in_scope, np.array([0.7, 0.1, 0.2]), 0.5) == ("a", pytest.approx(0.7))
    assert decide(labels, in_scope, np.array([0.45, 0.1, 0.45]), 0.5)[0] == "oos"


@pytest.mark.parametrize("missing", ["model.onnx", "tokenizer.json", "meta.json"])
def test_incomplete_model_dir_is_a_clear_error(tmp_path: Path, missing: str) -> None:
    d = write_tiny_model(tmp_path / "m")
    (d / missing).unlink()
    with pytest.raises(ModelDirError, match=missing):
        EncoderIntentModel(d)


def test_wrong_format_is_refused(tmp_path: Path) -> None:
    d = write_tiny_model(tmp_path / "m")
    meta = json.loads((d / "meta.json").read_text())
    (d / "meta.json").write_text(json.dumps({**meta, "format": 99}))
    with pytest.raises(ModelDirError, match="format"):
        EncoderIntentModel(d)


def test_understander_uses_the_model_and_its_intent_file(model_dir: Path) -> None:
    nlu = build_understander(model_dir)
    assert nlu.parse("What time is it?").name == "get_time"
    weather = nlu.parse("weather in 2 days")
    assert weather.name == "weather" and weather.slots == {"numbers": [2.0]}
    assert nlu.intents.spec("weather").skill == "weather"
    assert nlu.parse("write a poem").name == OOS


def test_from_config_reads_model_dir_when_the_config_has_it(model_dir: Path) -> None:
    cfg = NluConfig()
    object.__setattr__(cfg, "model_dir", str(model_dir))      # the key the lead will add
    nlu = Understander.from_config(cfg)
    assert nlu._encoder is not None and nlu.parse("what time is it").name == "get_time"


@pytest.mark.parametrize("text", ["12345", "?!?...", "\U0001F600\U0001F389", "wie spät ist es bitte",
                                  "今何時ですか", "time " * 30])
def test_bad_input_abstains_or_is_not_a_confident_wrong_skill(model_dir: Path, text: str) -> None:
    nlu = build_understander(model_dir)
    intent = nlu.parse(text)
    assert intent.name in (OOS, "get_time")               # only "time" words point anywhere
    if text.strip().startswith("time"):
        assert intent.name == "get_time"
    else:
        assert intent.name == OOS


@pytest.mark.parametrize("text", ["", "   ", "x" * 10_000])
def test_empty_and_huge_input_are_clear_errors(model_dir: Path, text: str) -> None:
    with pytest.raises(BadInputError):
        build_understander(model_dir).parse(text)


def test_eval_cli_json_report(model_dir: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "val.jsonl"
    rows = [("what time is it", "get_time"), ("the clock", "get_time"), ("will it rain", "weather"),
            ("write a poem", "oos"), ("maybe", "oos"), ("rain", "get_time")]
    data.write_text("".join(json.dumps({"text": t, "intent": i}) + "\n" for t, i in rows))
    assert nlu_cli(["eval", "--data", str(data), "--model", str(model_dir), "--json",
                    "--repeats", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["in_scope_accuracy"] == pytest.approx(3 / 4)
    assert report["oos_recall"] == 1.0 and report["oos_precision"] == 1.0
    assert set(report["latency_ms"]) >= {"p50", "p99"} and report["latency_ms"]["p99"] > 0
    assert report["schemes"]["class"]["oos_recall"] == 0.5     # "maybe" passes without threshold
    assert {"gold": "get_time", "pred": "weather", "count": 1} in report["confusion"]


def test_eval_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "hi"}\n')
    assert nlu_cli(["eval", "--data", str(bad)]) == 2
    assert "line 1" in capsys.readouterr().err
    assert nlu_cli(["eval", "--data", str(tmp_path / "none.jsonl")]) == 2
    assert nlu_cli(["eval", "--data", str(bad), "--model", str(tmp_path / "nope")]) == 2


def test_calibrate_rewrites_the_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = write_tiny_model(tmp_path / "m", threshold=0.0)
    data = tmp_path / "val.jsonl"
    rows = [("what time is it", "get_time"), ("will it rain", "weather"), ("maybe", "oos"),
            ("maybe the", "oos"), ("the clock", "get_time")]
    data.write_text("".join(json.dumps({"text": t, "intent": i}) + "\n" for t, i in rows))
    assert nlu_cli(["calibrate", "--model", str(d), "--data", str(data),
                    "--max-accuracy-drop", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["class"]["oos_recall"] == 0.0 and out["threshold"]["oos_recall"] == 1.0
    assert out["threshold"]["in_scope_accuracy"] == 1.0
    assert EncoderIntentModel(d).oos_threshold == out["oos_threshold"] > 0.0
    assert EncoderIntentModel(d).classify("maybe")[0] == OOS

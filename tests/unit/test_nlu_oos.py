"""Out-of-scope score: nearest-neighbour memory, margins, calibration, and the encoder
model directory that carries them."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_runtime.nlu import OOS
from edge_runtime.nlu.train.cli import main as nlu_cli
from edge_runtime.nlu.encoder import EncoderIntentModel, ModelDirError
from edge_runtime.nlu.oos import MEMORY_FILE, NeighbourMemory, OosScore, margins
from edge_runtime.nlu.train.calibrate import calibrate_score, predict_with_score
from edge_runtime.nlu.train.datasets import Example
from edge_runtime.nlu.train.evaluation import build_understander, evaluate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nlu_encoder_fixtures import write_tiny_model  # noqa: E402

MEMORY = ("what time is it", "the time", "will it rain", "the weather")


@pytest.fixture()
def memory_model(tmp_path: Path) -> Path:
    return write_tiny_model(tmp_path / "m", memory_sentences=MEMORY)


def test_memory_finds_its_own_rows_and_survives_a_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 16))
    memory = NeighbourMemory.build(x, dims=8)
    assert memory.proj.shape == (16, 8) and memory.vectors.shape == (50, 8)
    assert np.allclose(np.linalg.norm(memory.vectors, axis=1), 1.0, atol=1e-5)
    assert memory.nearest(x[7]) == pytest.approx(1.0, abs=1e-5)
    far = memory.nearest(-x.mean(axis=0) * 50)            # far from every row's direction
    assert far < 0.99
    memory.save(tmp_path / MEMORY_FILE)
    loaded = NeighbourMemory.load(tmp_path / MEMORY_FILE)  # float16 on disk
    assert loaded.nearest(x[7]) == pytest.approx(1.0, abs=2e-3)
    assert NeighbourMemory.build(x[:3], dims=128).proj.shape[1] == 3   # no more than N rows


def test_margins_with_and_without_an_oos_class() -> None:
    probs = np.array([[0.7, 0.1, 0.2], [0.2, 0.1, 0.7]])
    assert margins(("a", "b", "oos"), probs) == pytest.approx([0.2 - 0.7, 0.7 - 0.2])
    assert margins(("a", "b", "c"), probs) == pytest.approx([-0.7, -0.7])


def test_score_flags_far_or_doubtful_rows() -> None:
    labels = ("a", "b", "oos")
    scorer = OosScore(0.0, 1.0, 0.0, 1.0, threshold=-1.0)
    probs = np.array([[0.9, 0.05, 0.05], [0.9, 0.05, 0.05], [0.2, 0.1, 0.7]])
    nearest = np.array([0.95, 0.05, 0.9])
    # row 0: confident and near; row 1: confident but far; row 2: the oos class wins
    assert predict_with_score(labels, probs, nearest, scorer) == ["a", OOS, OOS]
    assert OosScore.from_json(scorer.to_json()) == scorer


def _synthetic(seed: int = 0):
    """In-scope rows: confident and near; oos rows: less confident and far, with overlap."""
    rng = np.random.default_rng(seed)
    labels = ("a", "b", "oos")
    rows, nearest, gold = [], [], []
    for i in range(200):
        p = rng.uniform(0.5, 1.0)
        rows.append([p, 1 - p, 0.0] if i % 2 else [1 - p, p, 0.0])
        nearest.append(rng.uniform(0.6, 1.0))
        gold.append("b" if i % 2 == 0 else "a")
    for _ in range(50):
        p = rng.uniform(0.3, 0.8)
        rows.append([p, (1 - p) / 2, (1 - p) / 2])
        nearest.append(rng.uniform(0.2, 0.7))
        gold.append(OOS)
    return labels, np.array(rows), np.array(nearest), gold


def test_calibration_keeps_accuracy_or_reaches_the_target_recall() -> None:
    labels, probs, nearest, gold = _synthetic()
    strict = calibrate_score(labels, probs, nearest, gold, max_accuracy_drop=0.0)
    assert strict["metrics"]["in_scope_accuracy"] == 1.0
    assert strict["metrics"]["oos_recall"] > 0.5
    loose = calibrate_score(labels, probs, nearest, gold, max_accuracy_drop=0.05)
    assert loose["metrics"]["oos_recall"] >= strict["metrics"]["oos_recall"]
    assert loose["metrics"]["in_scope_accuracy"] >= 0.95 - 1e-9
    aimed = calibrate_score(labels, probs, nearest, gold, target_recall=0.98)
    assert aimed["metrics"]["oos_recall"] >= 0.98
    again = predict_with_score(labels, probs, nearest, aimed["scorer"])
    assert sum(g == p == OOS for g, p in zip(gold, again)) / 50 == aimed["metrics"]["oos_recall"]


def test_calibration_without_oos_rows_keeps_no_scorer() -> None:
    labels, probs, nearest, gold = _synthetic()
    ins = [i for i, g in enumerate(gold) if g != OOS]
    out = calibrate_score(labels, probs[ins], nearest[ins], [gold[i] for i in ins])
    assert out["scorer"] is None and out["metrics"]["in_scope_accuracy"] == 1.0


def test_model_with_memory_rejects_confident_text_far_from_training(memory_model: Path) -> None:
    model = EncoderIntentModel(memory_model)
    assert model.scorer is not None and model.memory is not None
    probs, nearest = model.analyse("what time is it")
    assert nearest == pytest.approx(1.0, abs=1e-3)
    assert model.classify("what time is it")[0] == "get_time"
    assert model.classify("will it rain")[0] == "weather"
    assert model.probabilities("clock")[0] > 0.85          # the softmax is sure of get_time ...
    name, conf = model.classify("clock")                    # ... but no training sentence is near
    assert name == OOS and conf < 0.2
    assert model.classify("write a poem")[0] == OOS
    assert model.embedding("the time").shape == (12,)


def test_model_without_memory_keeps_the_threshold_scheme(tmp_path: Path) -> None:
    model = EncoderIntentModel(write_tiny_model(tmp_path / "plain"))
    assert model.scorer is None and model.analyse("clock")[1] is None
    assert model.classify("clock")[0] == "get_time"
    with pytest.raises(ModelDirError, match="embedding"):
        model.embedding("clock")


def test_corrupt_memory_is_a_clear_error(memory_model: Path) -> None:
    (memory_model / MEMORY_FILE).write_bytes(b"not a numpy archive")
    with pytest.raises(ModelDirError, match=MEMORY_FILE):
        EncoderIntentModel(memory_model)


def test_memory_of_another_model_is_refused(memory_model: Path) -> None:
    NeighbourMemory.build(np.eye(5, 7, dtype=np.float32), dims=4).save(memory_model / MEMORY_FILE)
    with pytest.raises(ModelDirError, match="7-d"):
        EncoderIntentModel(memory_model)


def test_eval_reports_the_score_scheme_the_daemon_uses(memory_model: Path) -> None:
    rows = [Example("what time is it", "get_time"), Example("will it rain", "weather"),
            Example("clock", OOS), Example("write a poem", OOS)]
    report = evaluate(build_understander(memory_model), rows, repeats=1)
    assert report["model"]["oos_scheme"] == "score"
    assert report["schemes"]["score"]["oos_recall"] == 1.0
    assert report["schemes"]["class"]["oos_recall"] == 0.5     # "clock" passes the softmax
    assert report["oos_recall"] == 1.0 and report["in_scope_accuracy"] == 1.0


def test_calibrate_cli_rewrites_the_score(memory_model: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "val.jsonl"
    rows = [("what time is it", "get_time"), ("will it rain", "weather"), ("the time", "get_time"),
            ("clock", "oos"), ("write a poem", "oos")]
    data.write_text("".join(json.dumps({"text": t, "intent": i}) + "\n" for t, i in rows))
    assert nlu_cli(["calibrate", "--model", str(memory_model), "--data", str(data),
                    "--max-accuracy-drop", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["score"]["oos_recall"] == 1.0 and out["score"]["in_scope_accuracy"] == 1.0
    meta = json.loads((memory_model / "meta.json").read_text())
    assert meta["oos_score"]["threshold"] == EncoderIntentModel(memory_model).scorer.threshold

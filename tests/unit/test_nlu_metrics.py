"""Intent metrics (CLINC definitions) and oos threshold calibration."""
from __future__ import annotations

import numpy as np
import pytest

from edge_runtime.nlu.train.metrics import (calibrate_threshold, confusion, intent_metrics, percentiles_ms,
                                      predict_with_threshold)


def test_intent_metrics_follow_the_clinc_definitions() -> None:
    gold = ["a", "a", "b", "oos", "oos", "oos"]
    pred = ["a", "oos", "b", "oos", "b", "oos"]
    m = intent_metrics(gold, pred)
    assert m["in_scope_accuracy"] == pytest.approx(2 / 3)      # predicting oos for "a" is wrong
    assert m["oos_recall"] == pytest.approx(2 / 3)
    assert m["oos_precision"] == pytest.approx(2 / 3)          # one oos prediction was an "a"
    assert confusion(gold, pred)[0]["count"] == 1


def test_no_oos_predictions_means_precision_one_and_mismatched_lengths_fail() -> None:
    assert intent_metrics(["a", "oos"], ["a", "a"])["oos_precision"] == 1.0
    with pytest.raises(ValueError):
        intent_metrics(["a"], [])


def test_threshold_predictions_and_calibration() -> None:
    labels = ("a", "b", "oos")
    probs = np.array([[0.9, 0.05, 0.05],    # a, sure
                      [0.55, 0.4, 0.05],    # a, unsure
                      [0.6, 0.1, 0.3],      # oos row that looks like a
                      [0.35, 0.3, 0.35],    # oos row, unsure
                      [0.1, 0.1, 0.8]])     # oos row, oos class wins
    gold = ["a", "a", "oos", "oos", "oos"]
    assert predict_with_threshold(labels, probs, 0.0) == ["a", "a", "a", "a", "oos"]
    assert predict_with_threshold(labels, probs, 0.52)[1:4] == ["a", "a", "oos"]
    strict = calibrate_threshold(labels, probs, gold, max_accuracy_drop=0.0)
    assert strict["class"]["oos_recall"] == pytest.approx(1 / 3)
    assert 0.35 < strict["threshold"] <= 0.55                  # catches row 4, keeps row 2
    assert strict["threshold_metrics"]["in_scope_accuracy"] == 1.0
    assert strict["threshold_metrics"]["oos_recall"] == pytest.approx(2 / 3)
    loose = calibrate_threshold(labels, probs, gold, max_accuracy_drop=0.5)
    assert loose["threshold_metrics"]["oos_recall"] == 1.0      # gives up row 2 for all oos rows


def test_percentiles_in_milliseconds() -> None:
    p = percentiles_ms([0.001] * 99 + [0.010])
    assert p["p50"] == pytest.approx(1.0) and p["p99"] > 1.0

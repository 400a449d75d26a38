"""Out-of-scope calibration on labelled rows (build time: ``nlu train``, ``nlu calibrate``).

``calibrate_score`` chooses the threshold of the score scheme (``oos.OosScore``);
``calibrate_model`` calibrates both schemes of an encoder model into its meta.json fields;
``predict_with_score`` is the score scheme's batch decision (calibration and evaluation).
"""
from __future__ import annotations

from dataclasses import replace
from collections.abc import Sequence

import numpy as np

from ..base import OOS
from ..encoder import EncoderIntentModel
from ..oos import OosScore, margins
from ..text import normalize_text
from .metrics import calibrate_threshold, intent_metrics


def predict_with_score(labels: Sequence[str], probs: np.ndarray, nearest: np.ndarray,
                       scorer: OosScore, oos: str = OOS) -> list[str]:
    """Batch decisions: the best in-scope intent unless the score says out of scope."""
    labels = list(labels)
    in_idx = np.array([i for i, lab in enumerate(labels) if lab != oos])
    best = in_idx[probs[:, in_idx].argmax(axis=1)]
    flag = scorer.score(margins(labels, probs, oos), nearest) >= scorer.threshold
    return [oos if f else labels[b] for f, b in zip(flag, best, strict=True)]


def calibrate_score(labels: Sequence[str], probs: np.ndarray, nearest: np.ndarray,
                    gold: Sequence[str], max_accuracy_drop: float = 0.005,
                    target_recall: float | None = None, oos: str = OOS) -> dict:
    """Fit the z-normalizations on these rows and choose the threshold.

    Default rule: the best oos recall whose in-scope accuracy is within
    ``max_accuracy_drop`` of the accuracy with nothing rejected. With ``target_recall``:
    the most accurate threshold whose recall is at least that. Returns {"scorer": OosScore
    or None (no oos rows), "metrics": intent metrics at that threshold}."""
    m = margins(labels, probs, oos)
    z = OosScore(float(m.mean()), float(m.std() or 1.0), float(np.mean(nearest)),
                 float(np.std(nearest) or 1.0), 0.0)
    scores = z.score(m, nearest)
    base = replace(z, threshold=float(scores.max()) + 1.0)      # finite: rejects nothing here
    none_rejected = intent_metrics(gold, predict_with_score(labels, probs, nearest, base, oos), oos)
    if not none_rejected["oos_n"] or none_rejected["in_scope_accuracy"] is None:
        return {"scorer": None, "metrics": none_rejected}
    floor = none_rejected["in_scope_accuracy"] - max_accuracy_drop - 1e-12
    best, best_m = base, none_rejected
    for t in np.unique(np.quantile(scores, np.linspace(0.5, 1.0, 501))):
        cand = replace(z, threshold=float(t))
        met = intent_metrics(gold, predict_with_score(labels, probs, nearest, cand, oos), oos)
        if target_recall is not None:
            better = met["oos_recall"] >= target_recall and (
                best_m["oos_recall"] < target_recall
                or met["in_scope_accuracy"] > best_m["in_scope_accuracy"])
        else:
            better = met["in_scope_accuracy"] >= floor and (
                met["oos_recall"] > best_m["oos_recall"]
                or (met["oos_recall"] == best_m["oos_recall"]
                    and met["in_scope_accuracy"] > best_m["in_scope_accuracy"]))
        if better:
            best, best_m = cand, met
    return {"scorer": best, "metrics": best_m}


def calibrate_model(model: EncoderIntentModel, rows: list, max_accuracy_drop: float = 0.005,
                    oos_recall: float | None = None) -> dict:
    """Both out-of-scope schemes of ``model`` calibrated on labelled ``rows`` (``text``,
    ``intent``): the meta.json fields ``oos_threshold``, ``val_class_scheme``,
    ``val_threshold_scheme``, and, for a model with a memory, ``oos_score`` and
    ``val_score_scheme`` (``calibrate_score``; None without oos rows)."""
    analysed = [model.analyse(normalize_text(r.text)) for r in rows]
    probs = np.stack([p for p, _ in analysed])
    gold = [r.intent for r in rows]
    cal = calibrate_threshold(model.labels, probs, gold, max_accuracy_drop)
    out = {"oos_threshold": cal["threshold"], "val_class_scheme": cal["class"],
           "val_threshold_scheme": cal["threshold_metrics"]}
    if model.memory is not None:
        nearest = np.array([n for _, n in analysed], np.float64)
        scored = calibrate_score(model.labels, probs, nearest, gold, max_accuracy_drop, oos_recall)
        out["oos_score"] = scored["scorer"].to_json() if scored["scorer"] else None
        out["val_score_scheme"] = scored["metrics"]
    return out

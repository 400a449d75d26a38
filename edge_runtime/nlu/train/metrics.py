"""Intent metrics (CLINC150 definitions) and out-of-scope threshold calibration.

- in-scope accuracy: share of in-scope rows given their exact intent (``oos`` is wrong)
- oos recall: share of ``oos`` rows predicted ``oos``; oos precision: share of ``oos``
  predictions that are ``oos`` rows (1.0 when nothing is predicted ``oos``)
- confusion: (gold, predicted) -> count, errors only
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..base import OOS


def intent_metrics(gold: Sequence[str], pred: Sequence[str], oos: str = OOS) -> dict:
    """in_scope_accuracy, oos_recall, oos_precision (fractions) and counts."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold labels but {len(pred)} predictions")
    ins = [(g, p) for g, p in zip(gold, pred, strict=True) if g != oos]
    oos_rows = [p for g, p in zip(gold, pred, strict=True) if g == oos]
    pred_oos = [g for g, p in zip(gold, pred, strict=True) if p == oos]
    return {
        "n": len(gold), "in_scope_n": len(ins), "oos_n": len(oos_rows),
        "in_scope_accuracy": sum(g == p for g, p in ins) / len(ins) if ins else None,
        "oos_recall": sum(p == oos for p in oos_rows) / len(oos_rows) if oos_rows else None,
        "oos_precision": (sum(g == oos for g in pred_oos) / len(pred_oos)) if pred_oos else 1.0,
    }


def confusion(gold: Sequence[str], pred: Sequence[str], top: int = 20) -> list[dict]:
    """The ``top`` most frequent (gold, predicted) errors."""
    errors = Counter((g, p) for g, p in zip(gold, pred, strict=True) if g != p)
    return [{"gold": g, "pred": p, "count": c} for (g, p), c in errors.most_common(top)]


def per_intent(gold: Sequence[str], pred: Sequence[str]) -> dict[str, dict]:
    """Per gold intent: n, recall; per predicted intent: precision."""
    out: dict[str, dict] = {}
    n_gold, n_pred = Counter(gold), Counter(pred)
    hit = Counter(g for g, p in zip(gold, pred, strict=True) if g == p)
    for name in sorted(set(gold) | set(pred)):
        out[name] = {"n": n_gold[name],
                     "recall": hit[name] / n_gold[name] if n_gold[name] else None,
                     "precision": hit[name] / n_pred[name] if n_pred[name] else None}
    return out


def predict_with_threshold(labels: Sequence[str], probs: np.ndarray, threshold: float,
                           oos: str = OOS) -> list[str]:
    """Batch decisions: ``oos`` when the oos class wins or the best in-scope prob < threshold."""
    labels = list(labels)
    in_scope = np.array([lab != oos for lab in labels])
    top = probs.argmax(axis=1)
    best_in = probs[:, in_scope].max(axis=1) if in_scope.any() else np.zeros(len(probs))
    return [oos if labels[t] == oos or b < threshold else labels[t]
            for t, b in zip(top, best_in, strict=True)]


def calibrate_threshold(labels: Sequence[str], probs: np.ndarray, gold: Sequence[str],
                        max_accuracy_drop: float = 0.01, oos: str = OOS) -> dict:
    """The threshold with the best oos recall whose in-scope accuracy is within
    ``max_accuracy_drop`` (absolute fraction) of the no-threshold accuracy; ties go to the
    lower threshold. Returns {"threshold", "class": metrics at 0, "threshold_metrics"}."""
    base = intent_metrics(gold, predict_with_threshold(labels, probs, 0.0, oos), oos)
    if not base["oos_n"] or base["in_scope_accuracy"] is None:
        return {"threshold": 0.0, "class": base, "threshold_metrics": base}
    floor = base["in_scope_accuracy"] - max_accuracy_drop - 1e-12
    best_t, best = 0.0, base
    for t in np.unique(np.round(np.linspace(0.0, 0.99, 100), 2)):
        m = intent_metrics(gold, predict_with_threshold(labels, probs, float(t), oos), oos)
        if m["in_scope_accuracy"] >= floor and m["oos_recall"] > best["oos_recall"]:
            best_t, best = float(t), m
    return {"threshold": best_t, "class": base, "threshold_metrics": best}


def percentiles_ms(seconds: Sequence[float]) -> dict[str, float]:
    """{"p50", "p90", "p99", "mean"} in milliseconds."""
    a = np.asarray(seconds, np.float64) * 1000.0
    if not len(a):
        return {"p50": 0.0, "p90": 0.0, "p99": 0.0, "mean": 0.0}
    return {"p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99)), "mean": float(a.mean())}

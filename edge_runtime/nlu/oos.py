"""Out-of-scope detection from two signals: the classifier's doubt and the distance to the
nearest training sentence.

- ``margin``: p(oos class) - the best in-scope probability (-1 … 1; without an oos class
  it is just the negated best in-scope probability);
- ``nearest``: cosine similarity of the sentence embedding to its nearest in-scope
  training sentence (``NeighbourMemory``); out-of-scope requests sit far from all of them
  even when the softmax is confident (Podolskiy et al. 2021 and others report distance
  signals beat softmax confidence on CLINC150).

The score is ``z(margin) - z(nearest)`` with both z-normalizations (mean, std) measured on
the calibration rows; a text is out of scope when the score is >= the threshold. The
threshold is chosen on validation rows by ``calibrate_score``. ``NeighbourMemory`` keeps
the in-scope training embeddings projected (PCA) to ``dims`` dimensions, float16 on disk,
so the nearest-neighbour search is one small matrix-vector product per query.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from .metrics import OOS, intent_metrics

MEMORY_FILE = "memory.npz"


def _unit(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(n, 1e-12)


class NeighbourMemory:
    """In-scope training sentence embeddings, PCA-projected and unit length."""

    def __init__(self, mean: np.ndarray, proj: np.ndarray, vectors: np.ndarray) -> None:
        self.mean = mean.astype(np.float32)          # [D]
        self.proj = proj.astype(np.float32)          # [D, K]
        self.vectors = vectors.astype(np.float32)    # [N, K], unit rows

    @classmethod
    def build(cls, embeddings: np.ndarray, dims: int = 128) -> "NeighbourMemory":
        """PCA of ``embeddings`` [N, D] to ``min(dims, D, N)`` components."""
        x = np.asarray(embeddings, np.float64)
        mean = x.mean(axis=0)
        _, _, vt = np.linalg.svd(x - mean, full_matrices=False)
        proj = vt[:min(dims, vt.shape[0])].T
        return cls(mean, proj, _unit((x - mean) @ proj))

    def project(self, embedding: np.ndarray) -> np.ndarray:
        return _unit((np.asarray(embedding, np.float32) - self.mean) @ self.proj)

    def nearest(self, embedding: np.ndarray) -> float:
        """Cosine similarity to the nearest memorised sentence, for one embedding [D]."""
        return float((self.vectors @ self.project(embedding)).max())

    def save(self, path: Path) -> None:
        np.savez(path, mean=self.mean, proj=self.proj, vectors=self.vectors.astype(np.float16))

    @classmethod
    def load(cls, path: Path) -> "NeighbourMemory":
        with np.load(path) as z:
            return cls(z["mean"], z["proj"], z["vectors"])


def margins(labels: Sequence[str], probs: np.ndarray, oos: str = OOS) -> np.ndarray:
    """p(oos) - best in-scope probability, per row of ``probs`` [N, C] (or one row [C])."""
    p = np.atleast_2d(probs)
    in_scope = np.array([lab != oos for lab in labels])
    best_in = p[:, in_scope].max(axis=1) if in_scope.any() else np.zeros(len(p))
    p_oos = p[:, ~in_scope].max(axis=1) if (~in_scope).any() else np.zeros(len(p))
    return p_oos - best_in


@dataclass(frozen=True)
class OosScore:
    """``z(margin) - z(nearest) >= threshold`` means out of scope."""
    margin_mean: float
    margin_std: float
    nearest_mean: float
    nearest_std: float
    threshold: float

    def score(self, margin: np.ndarray | float, nearest: np.ndarray | float) -> np.ndarray:
        return ((np.asarray(margin) - self.margin_mean) / self.margin_std
                - (np.asarray(nearest) - self.nearest_mean) / self.nearest_std)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "OosScore":
        return cls(**{k: float(data[k]) for k in cls.__dataclass_fields__})


def predict_with_score(labels: Sequence[str], probs: np.ndarray, nearest: np.ndarray,
                       scorer: OosScore, oos: str = OOS) -> list[str]:
    """Batch decisions: the best in-scope intent unless the score says out of scope."""
    labels = list(labels)
    in_idx = np.array([i for i, lab in enumerate(labels) if lab != oos])
    best = in_idx[probs[:, in_idx].argmax(axis=1)]
    flag = scorer.score(margins(labels, probs, oos), nearest) >= scorer.threshold
    return [oos if f else labels[b] for f, b in zip(flag, best)]


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

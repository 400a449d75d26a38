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
threshold is chosen on validation rows by ``train.calibrate.calibrate_score``.
``NeighbourMemory`` keeps
the in-scope training embeddings projected (PCA) to ``dims`` dimensions, float16 on disk,
so the nearest-neighbour search is one small matrix-vector product per query.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from collections.abc import Sequence

import numpy as np

from .base import OOS

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
    def build(cls, embeddings: np.ndarray, dims: int = 128) -> NeighbourMemory:
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
    def load(cls, path: Path) -> NeighbourMemory:
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
    def from_json(cls, data: dict) -> OosScore:
        return cls(**{k: float(data[k]) for k in cls.__dataclass_fields__})

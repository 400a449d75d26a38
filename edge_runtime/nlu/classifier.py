"""Intent classifier v1: a multinomial logistic regression on hashed sparse features.

Trained in numpy at load time (full-batch Adam on the examples of the intent file, well
under a second for the built-in set), with an explicit ``oos`` class. ``predict``
returns the softmax probability of the best class as the confidence; the Understander
abstains (``oos``) below ``oos_threshold``.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

Features = tuple[np.ndarray, np.ndarray]   # (bucket indices int64, values float32)


@dataclass(frozen=True)
class TrainSettings:
    epochs: int = 60
    learning_rate: float = 0.4
    l2: float = 1e-5                 # weight decay per step (on the mean loss)
    oos_weight: float = 1.0          # total weight of the oos class: one intent class's x this
    seed: int = 0


class LinearIntentClassifier:
    """Softmax over ``labels``; weights only for the feature buckets seen in training."""

    def __init__(self, labels: tuple[str, ...], buckets: np.ndarray, weights: np.ndarray,
                 bias: np.ndarray) -> None:
        self.labels = labels
        self._buckets = buckets          # sorted unique bucket ids seen in training, (K,)
        self._weights = weights          # (K, C) float32
        self._bias = bias                # (C,) float32

    @classmethod
    def train(cls, examples: list[Features], labels: list[str], oos_label: str,
              settings: TrainSettings = TrainSettings()) -> LinearIntentClassifier:
        """Fit on ``examples`` (one feature vector each) with string ``labels``."""
        names = tuple(sorted(set(labels)))
        y = np.array([names.index(lab) for lab in labels], np.int64)
        keep = np.array([len(ex[0]) > 0 for ex in examples])
        examples = [ex for ex, k in zip(examples, keep, strict=True) if k]
        y = y[keep]
        n, c = len(examples), len(names)
        lengths = np.array([len(ex[0]) for ex in examples], np.int64)
        rows = np.repeat(np.arange(n), lengths)
        cols = np.concatenate([ex[0] for ex in examples])
        vals = np.concatenate([ex[1] for ex in examples]).astype(np.float64)
        buckets, cols = np.unique(cols, return_inverse=True)
        k = len(buckets)

        # balanced sample weights: each class sums to 1 (oos to ``oos_weight``)
        counts = np.bincount(y, minlength=c).astype(np.float64)
        class_w = 1.0 / np.maximum(counts, 1)
        if oos_label in names:
            class_w[names.index(oos_label)] *= settings.oos_weight
        sw = class_w[y]
        sw /= sw.sum()
        onehot = np.zeros((n, c))
        onehot[np.arange(n), y] = 1.0

        rows_f = rows.astype(np.int64)
        vals32 = vals.astype(np.float32)
        rng = np.random.default_rng(settings.seed)
        w = rng.normal(0.0, 0.01, (c, k)).astype(np.float32)     # class-major for fast gathers
        b = np.zeros(c, np.float32)
        m_w, v_w = np.zeros_like(w), np.zeros_like(w)
        m_b, v_b = np.zeros_like(b), np.zeros_like(b)
        onehot32, sw32 = onehot.astype(np.float32), sw.astype(np.float32)
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        for step in range(1, settings.epochs + 1):
            contrib = w[:, cols] * vals32                            # (C, nnz)
            z = np.stack([np.bincount(rows_f, contrib[j], n) for j in range(c)], axis=1) + b
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            g = ((p - onehot32) * sw32[:, None]).astype(np.float32)
            back = g.T[:, rows_f] * vals32                           # (C, nnz)
            g_w = np.stack([np.bincount(cols, back[j], k) for j in range(c)]).astype(np.float32)
            g_w += settings.l2 * w
            g_b = g.sum(axis=0)
            m_w *= beta1
            m_w += (1 - beta1) * g_w
            v_w *= beta2
            v_w += (1 - beta2) * g_w * g_w
            m_b = beta1 * m_b + (1 - beta1) * g_b
            v_b = beta2 * v_b + (1 - beta2) * g_b * g_b
            lr = settings.learning_rate * np.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            w -= (lr * m_w / (np.sqrt(v_w) + eps)).astype(np.float32)
            b -= (lr * m_b / (np.sqrt(v_b) + eps)).astype(np.float32)
        acc = float((p.argmax(axis=1) == y).mean())
        log.debug("intent classifier trained: %d examples, %d classes, %d features, train acc %.3f",
                  n, c, k, acc)
        return cls(names, buckets, np.ascontiguousarray(w.T), b)

    def probabilities(self, features: Features) -> np.ndarray:
        """Softmax probabilities over ``labels`` for one feature vector."""
        idx, val = features
        z = self._bias.astype(np.float64)
        if len(idx):
            pos = np.searchsorted(self._buckets, idx)
            pos[pos >= len(self._buckets)] = 0
            hit = self._buckets[pos] == idx
            if hit.any():
                z = z + val[hit] @ self._weights[pos[hit]]
        z = z - z.max()
        p = np.exp(z)
        return p / p.sum()

    def predict(self, features: Features) -> tuple[str, float]:
        """(best label, its probability)."""
        p = self.probabilities(features)
        i = int(p.argmax())
        return self.labels[i], float(p[i])

    def save(self, path: Path) -> None:
        """Write the model as an ``.npz`` file atomically (no pickle)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.savez(fh, labels=np.array(self.labels), buckets=self._buckets,
                     weights=self._weights, bias=self._bias)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> LinearIntentClassifier:
        """Read a model written by ``save``; ``ValueError``/``OSError`` if it is unusable."""
        with np.load(path, allow_pickle=False) as data:
            labels = tuple(str(x) for x in data["labels"])
            buckets, weights, bias = data["buckets"], data["weights"], data["bias"]
        if weights.shape != (len(buckets), len(labels)) or bias.shape != (len(labels),):
            raise ValueError(f"model file {path} has inconsistent shapes")
        return cls(labels, buckets.astype(np.int64), weights.astype(np.float32),
                   bias.astype(np.float32))

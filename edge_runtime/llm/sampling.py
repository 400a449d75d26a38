"""Token sampling: repetition penalty, temperature, top-k, top-p; seeded and reproducible.

All functions work on a float32 logits vector [V] and write into a scratch buffer owned by
the :class:`Sampler`, so the decode loop allocates only small index arrays per token.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..types import GenerationParams

NEG_INF = np.float32(-np.inf)
PENALTY_WINDOW = 64  # tokens; llama.cpp's default repeat_last_n


def apply_repetition_penalty(logits: np.ndarray, recent: Sequence[int], penalty: float) -> None:
    """In place, CTRL-style: a seen token's logit is divided by ``penalty`` if positive,
    multiplied if negative. Each distinct token is penalised once."""
    if penalty == 1.0 or not len(recent):
        return
    ids = np.unique(np.asarray(recent, dtype=np.int64))
    vals = logits[ids]
    logits[ids] = np.where(vals > 0, vals / penalty, vals * penalty)


def top_k_mask(logits: np.ndarray, k: int) -> None:
    """In place: keep the ``k`` largest logits (ties at the threshold kept), others -inf."""
    if k <= 0 or k >= logits.size:
        return
    kth = np.partition(logits, -k)[-k]
    logits[logits < kth] = NEG_INF


def top_p_mask(logits: np.ndarray, p: float) -> None:
    """In place nucleus filter: keep the smallest set of most likely tokens whose
    probability reaches ``p`` (the most likely token is always kept)."""
    if p >= 1.0:
        return
    finite = np.flatnonzero(np.isfinite(logits))
    vals = logits[finite]
    order = np.argsort(-vals, kind="stable")
    probs = np.exp(vals[order] - vals[order[0]])
    cum = np.cumsum(probs) / probs.sum()
    keep = int(np.searchsorted(cum, p, side="left")) + 1
    logits[finite[order[keep:]]] = NEG_INF


class Sampler:
    """Picks the next token; ``temperature == 0`` means greedy (after the penalty).

    The numpy Generator is seeded from ``params.seed`` so that the same prompt, params
    and model give the same tokens.
    """

    def __init__(self, params: GenerationParams, vocab_size: int,
                 penalty_window: int = PENALTY_WINDOW) -> None:
        self.params = params
        self.rng = np.random.default_rng(params.seed)
        self.window = penalty_window
        self._buf = np.empty(vocab_size, dtype=np.float32)

    def sample(self, logits: np.ndarray, history: Sequence[int]) -> int:
        p = self.params
        z = self._buf[: logits.shape[-1]]
        np.copyto(z, logits.reshape(-1))
        apply_repetition_penalty(z, history[-self.window:] if self.window else (), p.repetition_penalty)
        if p.temperature <= 0:
            return int(np.argmax(z))
        z /= np.float32(p.temperature)
        top_k_mask(z, p.top_k)
        top_p_mask(z, p.top_p)
        z -= z.max()
        np.exp(z, out=z)
        z /= z.sum(dtype=np.float64)
        # inverse-CDF draw: one uniform, reproducible across numpy versions
        u = self.rng.random()
        idx = int(np.searchsorted(np.cumsum(z, dtype=np.float64), u, side="right"))
        return min(idx, z.size - 1) if z[min(idx, z.size - 1)] > 0 else int(np.argmax(z))

"""Sampling: seeded reproducibility, greedy, top-k / top-p masks, repetition penalty."""
from __future__ import annotations

import numpy as np
import pytest

from edge_runtime.llm.sampling import (Sampler, apply_repetition_penalty, nucleus,
                                       top_k_candidates)
from edge_runtime.types import GenerationParams


def _logits(seed: int = 0, v: int = 1000) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(v).astype(np.float32) * 3


def _draws(params: GenerationParams, n: int = 50) -> list[int]:
    s = Sampler(params, 1000, penalty_window=0)
    return [s.sample(_logits(i), []) for i in range(n)]


def test_same_seed_same_tokens_different_seed_different_tokens():
    p = GenerationParams(temperature=1.0, top_p=1.0, top_k=0, repetition_penalty=1.0, seed=7)
    assert _draws(p) == _draws(p)
    q = GenerationParams(temperature=1.0, top_p=1.0, top_k=0, repetition_penalty=1.0, seed=8)
    assert _draws(p) != _draws(q)


def test_temperature_zero_is_argmax():
    p = GenerationParams(temperature=0.0, repetition_penalty=1.0, seed=1)
    s = Sampler(p, 1000)
    for i in range(10):
        z = _logits(i)
        assert s.sample(z, []) == int(np.argmax(z))


def test_top_k_candidates_are_the_k_largest_in_order():
    z = _logits(3)
    ids, vals = top_k_candidates(z, 5)
    assert ids.tolist() == np.argsort(-z)[:5].tolist()
    assert np.array_equal(vals, z[ids])
    all_ids, _ = top_k_candidates(z, 0)
    assert sorted(all_ids.tolist()) == list(range(z.size))


def test_top_k_sampling_never_leaves_the_top_k():
    p = GenerationParams(temperature=5.0, top_p=1.0, top_k=3, repetition_penalty=1.0, seed=0)
    s = Sampler(p, 1000, penalty_window=0)
    z = _logits(4)
    allowed = set(np.argsort(-z)[:3].tolist())
    assert {s.sample(z, []) for _ in range(200)} <= allowed


def test_top_p_keeps_smallest_nucleus():
    probs = np.array([0.5, 0.3, 0.15, 0.05])
    assert nucleus(probs, 0.75) == 2        # 0.5 < 0.75 <= 0.8
    assert nucleus(probs, 0.8) == 2
    assert nucleus(probs, 0.81) == 3
    assert nucleus(probs, 0.1) == 1         # the most likely token always stays
    assert nucleus(probs, 1.0) == 4


def test_top_p_sampling_never_leaves_the_nucleus():
    z = np.log(np.array([0.5, 0.3, 0.15, 0.05], np.float32))
    s = Sampler(GenerationParams(temperature=1.0, top_p=0.75, top_k=0, repetition_penalty=1.0,
                                 seed=2), 4, penalty_window=0)
    assert {s.sample(z, []) for _ in range(300)} == {0, 1}


def test_repetition_penalty_divides_positive_multiplies_negative_once():
    z = np.array([2.0, -2.0, 1.0, 0.5], np.float32)
    apply_repetition_penalty(z, [0, 1, 0, 0], 2.0)
    assert z.tolist() == [1.0, -4.0, 1.0, 0.5]


def test_repetition_penalty_changes_greedy_choice():
    z = np.array([3.0, 2.9, 0.0], np.float32)
    p = GenerationParams(temperature=0.0, repetition_penalty=1.3)
    assert Sampler(p, 3).sample(z, [0]) == 1
    assert Sampler(p, 3).sample(z, [2]) == 0


def test_sampler_does_not_modify_caller_logits():
    z = _logits(5)
    before = z.copy()
    Sampler(GenerationParams(temperature=0.7, top_k=10, top_p=0.8, repetition_penalty=1.5),
            1000).sample(z, [1, 2, 3])
    assert np.array_equal(z, before)


@pytest.mark.parametrize("temp", [0.3, 1.0])
def test_sampled_distribution_follows_softmax(temp):
    z = np.log(np.array([0.6, 0.3, 0.1], np.float32))
    s = Sampler(GenerationParams(temperature=temp, top_p=1.0, top_k=0, repetition_penalty=1.0,
                                 seed=3), 3)
    counts = np.bincount([s.sample(z, []) for _ in range(4000)], minlength=3) / 4000
    expected = np.exp(z / temp) / np.exp(z / temp).sum()
    assert np.allclose(counts, expected, atol=0.03)


def test_top_k_candidates_match_a_full_sort_and_break_ties_by_id():
    rng = np.random.default_rng(3)
    for trial in range(200):
        z = rng.normal(size=int(rng.integers(40, 2000))).astype(np.float32)
        if trial % 2:
            z = np.round(z, 1)                      # many equal logits
        k = int(rng.integers(1, 50))
        order = np.lexsort((np.arange(z.size), -z))[:k]   # by logit desc, then id asc
        ids, vals = top_k_candidates(z, k)
        assert np.array_equal(ids, order) and np.array_equal(vals, z[order])
    flat = np.zeros(1000, np.float32)               # all equal: the k lowest ids
    assert top_k_candidates(flat, 7)[0].tolist() == list(range(7))


@pytest.mark.parametrize("penalty", [1.0, 1.3, 0.7])
def test_greedy_shortcut_picks_what_the_penalised_copy_picks(penalty):
    """Greedy skips the copy when the penalty cannot change the winner; every case (winner
    seen or not, penalty above or below 1, ties, negative logits) matches argmax of the
    penalised copy."""
    rng = np.random.default_rng(7)
    s = Sampler(GenerationParams(temperature=0.0, repetition_penalty=penalty), 50)
    for _ in range(300):
        logits = np.round(rng.normal(0, 2, 50), 1).astype(np.float32)   # ties happen
        recent = rng.integers(0, 50, rng.integers(0, 12)).tolist()
        if rng.random() < 0.3:
            recent.append(int(np.argmax(logits)))                      # the winner was seen
        ref = logits.copy()
        apply_repetition_penalty(ref, recent, penalty)
        assert s.sample(logits, recent) == int(np.argmax(ref))

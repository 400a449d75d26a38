"""Hashed sparse features for the intent classifier.

Word unigrams and bigrams (numbers collapse to ``<num>``), character 3-5-grams of each
word (robust to recognition errors and inflections), plus optional tag features such
as ``list:device`` or ``slot:duration`` supplied by the caller. Each feature is hashed
with CRC32 into ``2**bits`` buckets (stable across processes, unlike ``hash``); the
vector is L2-normalized.
"""
from __future__ import annotations

import itertools
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np

from .numbers import Token

DEFAULT_BITS = 18
NUM = "<num>"
_CHAR_SIZES = (3, 4, 5)
_CHAR_WEIGHT = 0.4
_TAG_WEIGHT = 1.5


def words_of(tokens: Iterable[Token]) -> list[str]:
    """Token texts with every number replaced by ``<num>``."""
    return [NUM if t.is_number else t.text for t in tokens]


def feature_names(words: list[str], tags: Iterable[str] = ()) -> dict[str, float]:
    """Feature name -> weight for one utterance (before hashing and normalization)."""
    feats: defaultdict[str, float] = defaultdict(float)
    for w in words:
        feats["w:" + w] += 1.0
        if w == NUM:
            continue
        padded = f" {w} "
        for n in _CHAR_SIZES:
            for i in range(len(padded) - n + 1):
                feats["c:" + padded[i:i + n]] += _CHAR_WEIGHT
    seq = ["<s>", *words, "</s>"]
    for a, b in itertools.pairwise(seq):
        feats[f"b:{a} {b}"] += 1.0
    for tag in tags:
        feats["t:" + tag] += _TAG_WEIGHT
    return feats


def hash_features(feats: Mapping[str, float],
                  bits: int = DEFAULT_BITS) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique bucket indices int64, L2-normalized values float32)."""
    mask = (1 << bits) - 1
    buckets: dict[int, float] = {}
    for name, value in feats.items():
        h = zlib.crc32(name.encode("utf-8")) & mask
        buckets[h] = buckets.get(h, 0.0) + value
    if not buckets:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    idx = np.fromiter(buckets.keys(), np.int64, len(buckets))
    val = np.fromiter(buckets.values(), np.float32, len(buckets))
    order = np.argsort(idx)
    idx, val = idx[order], val[order]
    return idx, val / np.float32(np.linalg.norm(val))

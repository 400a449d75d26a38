"""Word error rate with the normalization ASR comparisons need.

Whisper writes "10 of clubs.", references say "ten of clubs": both sides are
lower-cased, stripped of punctuation, and have numbers (0..999,999) spelled out and
common abbreviations expanded before words are aligned (Levenshtein on words).
"""
from __future__ import annotations

import re

from ..nlu.numbers import number_to_words

_ABBREV = {"mr": "mister", "mrs": "missus", "dr": "doctor", "st": "saint", "ok": "okay",
           "%": "percent", "&": "and"}


def number_words(n: int) -> str:
    if n < 10**12:
        return number_to_words(n)
    return " ".join(number_to_words(int(d)) for d in str(n))


def normalize(text: str) -> list[str]:
    t = text.lower().replace("%", " percent ").replace("&", " and ")
    t = re.sub(r"(\d),(\d{3})", r"\1\2", t)
    t = re.sub(r"(\d+):(\d\d)", lambda m: f"{m.group(1)} {int(m.group(2))}"
               if m.group(2) != "00" else m.group(1), t)
    t = re.sub(r"\d+", lambda m: " " + number_words(int(m.group(0))) + " ", t)
    t = re.sub(r"[^a-z' ]+", " ", t.replace("-", " "))
    words = [w.strip("'") for w in t.split()]
    return [_ABBREV.get(w, w) for w in words if w]


def word_errors(ref: str, hyp: str) -> tuple[int, int]:
    """(edit distance in words, number of reference words) after normalization."""
    r, h = normalize(ref), normalize(hyp)
    prev = list(range(len(h) + 1))
    for i, rw in enumerate(r, 1):
        cur = [i] + [0] * len(h)
        for j, hw in enumerate(h, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (rw != hw))
        prev = cur
    return prev[-1], len(r)


def wer(pairs: list[tuple[str, str]]) -> float:
    """Corpus WER of (reference, hypothesis) pairs: total edits / total reference words."""
    edits = words = 0
    for ref, hyp in pairs:
        e, n = word_errors(ref, hyp)
        edits, words = edits + e, words + n
    return edits / words if words else 0.0

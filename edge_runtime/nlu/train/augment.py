"""Speech-recognition-style text augmentation for training the intent encoder.

``asr_variant(text, rng)`` rewrites one training sentence the way a recognizer might
deliver it: normalized (lower case, no punctuation), digits spelled as words (or words
as digits), a homophone swapped ("to" -> "two"), a short function word dropped, two
words merged or one split, or one letter substituted/dropped. Each call applies one or
two of these at random, so the model sees clean and noisy forms of every example.
Pure Python, deterministic for a given ``random.Random``.
"""
from __future__ import annotations

import random

from ..numbers import digits_to_words
from ..text import normalize_text

_HOMOPHONES = {
    "to": ("two", "too"), "two": ("to", "too"), "too": ("to",), "for": ("four",), "four": ("for",),
    "their": ("there",), "there": ("their",), "your": ("you",), "youre": ("your",),
    "its": ("it",), "whats": ("what",), "whether": ("weather",), "weather": ("whether",),
    "right": ("write",), "write": ("right",), "buy": ("by",), "by": ("buy",), "hear": ("here",),
    "here": ("hear",), "know": ("no",), "no": ("know",), "one": ("won",), "eight": ("ate",),
    "for the": ("for",), "in": ("and",), "and": ("in",), "a": ("the",), "the": ("a",),
    "lights": ("light",), "light": ("lights",), "turn": ("turned",), "off": ("of",),
    "on": ("and",), "set": ("said",), "timer": ("time",), "alarm": ("alarms",),
    "add": ("at", "and"), "pause": ("plus", "pose", "paws"), "lower": ("or", "lore"),
    "floor": ("four", "for"), "fan": ("van", "fun"), "lamp": ("lamb", "clamp"),
    "stop": ("top",), "all": ("ill", "or"), "lamps": ("lance", "lumps"),
}
_DROPPABLE = frozenset({"the", "a", "an", "please", "to", "of", "my", "me", "is", "can", "you",
                        "i", "do", "for", "in", "on", "hey", "just", "that"})
_VOWELS = "aeiou"


def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 4:
        return word
    i = rng.randrange(1, len(word))
    if rng.random() < 0.5:
        return word[:i] + word[i + 1:]                                   # letter dropped
    ch = word[i]
    pool = _VOWELS if ch in _VOWELS else "bcdfghklmnprstvwz"
    return word[:i] + rng.choice(pool) + word[i + 1:]                    # letter substituted


def _edit(words: list[str], rng: random.Random) -> list[str]:
    if not words:
        return words
    op = rng.randrange(5)
    i = rng.randrange(len(words))
    if op == 0:                                                          # homophone
        spots = [j for j, w in enumerate(words) if w in _HOMOPHONES]
        if spots:
            j = rng.choice(spots)
            return words[:j] + [rng.choice(_HOMOPHONES[words[j]])] + words[j + 1:]
        return words
    if op == 1:                                                          # function word lost
        spots = [j for j, w in enumerate(words) if w in _DROPPABLE]
        if spots and len(words) > 2:
            j = rng.choice(spots)
            return words[:j] + words[j + 1:]
        return words
    if op == 2 and i + 1 < len(words) and len(words[i]) + len(words[i + 1]) < 12:
        return words[:i] + [words[i] + words[i + 1]] + words[i + 2:]   # two words merged
    if op == 3 and len(words[i]) >= 7:                                   # one word split
        cut = rng.randrange(3, len(words[i]) - 2)
        return words[:i] + [words[i][:cut], words[i][cut:]] + words[i + 1:]
    return words[:i] + [_typo(words[i], rng)] + words[i + 1:]


def asr_variant(text: str, rng: random.Random) -> str:
    """One recognizer-style rewrite of ``text`` (never empty when ``text`` has words)."""
    t = normalize_text(text)
    if rng.random() < 0.7:
        t = digits_to_words(t)
    words = t.split()
    for _ in range(1 + (rng.random() < 0.3)):
        words = _edit(words, rng)
    return " ".join(words) or t

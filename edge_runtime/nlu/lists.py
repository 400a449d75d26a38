"""Named lists from config (``nlu.lists``: area, device …) matched with fuzzy tolerance.

Recognition errors ("kitchn lights", "living rom", "bed room") still match: every
window of words as long as a value (and the value's words run together) is scored
with ``rapidfuzz.fuzz.ratio``; values of 3 characters or fewer must match exactly
(or as a plural), longer ones need ``min_score`` (0..100).
"""
from __future__ import annotations

import logging
from typing import Mapping

from rapidfuzz import fuzz

from ..errors import ConfigError
from .text import normalize_text

log = logging.getLogger(__name__)

_STOP = frozenset({"a", "an", "the", "on", "off", "in", "of", "to", "and", "is", "it", "my", "turn",
                   "switch", "please", "all", "up", "down", "for", "at", "are", "set"})


class ListConfigError(ConfigError):
    """A configured list (``nlu.lists``) is malformed."""


class ListMatcher:
    """Find the best value of each configured list in normalized text."""

    def __init__(self, lists: Mapping[str, tuple[str, ...]], min_score: float = 85.0) -> None:
        self.min_score = min_score
        self._lists: dict[str, tuple[tuple[str, str], ...]] = {}
        for name, values in lists.items():
            if isinstance(values, str) or not all(isinstance(v, str) for v in values):
                raise ListConfigError(f"nlu.lists.{name} must be a list of strings, got {values!r}",
                                      hint='e.g. area = ["kitchen", "bedroom"]')
            pairs = tuple((v, normalize_text(v)) for v in values if normalize_text(v))
            self._lists[name] = pairs
        self.words = frozenset(w for pairs in self._lists.values() for _, n in pairs for w in n.split())

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._lists)

    def key(self) -> tuple:
        """A hashable summary of the configured lists (for caches)."""
        return tuple((name, pairs) for name, pairs in self._lists.items())

    def values(self, name: str) -> tuple[str, ...]:
        return tuple(v for v, _ in self._lists.get(name, ()))

    def _score(self, words: list[str], norm: str) -> tuple[float, int]:
        size = len(norm.split())
        best, where = 0.0, -1
        compact = norm.replace(" ", "")
        for k in {size, size + 1, max(size - 1, 1)}:
            for i in range(0, len(words) - k + 1):
                window = words[i:i + k]
                if window[0] in _STOP or window[-1] in _STOP:
                    continue
                text = " ".join(window)
                if text == norm or text == norm + "s" or text + "s" == norm:
                    return 100.0, i
                if len(compact) <= 3:
                    if "".join(window) == compact:
                        return 100.0, i
                    continue
                score = max(fuzz.ratio(text, norm), fuzz.ratio("".join(window), compact))
                if score > best:
                    best, where = score, i
        return best, where

    def match(self, normalized: str) -> dict[str, str]:
        """``{list name: configured value}`` for each list with a value in the text."""
        words = normalized.split()
        out: dict[str, str] = {}
        for name, pairs in self._lists.items():
            best: tuple[float, int, str] | None = None
            for value, norm in pairs:
                score, where = self._score(words, norm)
                if score >= self.min_score and (best is None or (score, -where) > (best[0], -best[1])):
                    best = (score, where, value)
            if best is not None:
                out[name] = best[2]
        return out

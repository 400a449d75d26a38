"""Named lists from config (``nlu.lists``: area, device …) matched with fuzzy tolerance.

Recognition errors ("kitchn lights", "living rom", "bed room") still match: every
window of words (spaced and run together) is scored against each value's spellings
(as written, plural/singular, run together) with ``rapidfuzz.fuzz.ratio`` in one
``cdist`` call; values of 3 characters or fewer must match exactly, longer ones need
``min_score`` (0..100). The earliest of equally good matches wins.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping

from rapidfuzz import fuzz, process

from ..errors import ConfigError
from .text import normalize_text

log = logging.getLogger(__name__)

_STOP = frozenset({"a", "an", "the", "on", "off", "in", "of", "to", "and", "is", "it", "my", "turn",
                   "switch", "please", "all", "up", "down", "for", "at", "are", "set"})


def _forms(norm: str) -> set[str]:
    """Spellings that count as the value: as written, plural/singular, run together."""
    forms = {norm, norm + "s", norm.replace(" ", "")}
    if norm.endswith("s") and len(norm) > 3:
        forms.add(norm[:-1])
    return forms


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
        self._queries = [(form, name, value) for name, pairs in self._lists.items()
                         for value, norm in pairs for form in _forms(norm)]
        self._max_words = max((len(q.split()) for q, _, _ in self._queries), default=1)
        self.words = frozenset(w for pairs in self._lists.values()
                               for _, n in pairs for w in n.split())

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._lists)

    def key(self) -> tuple:
        """A hashable summary of the configured lists (for caches)."""
        return tuple((name, pairs) for name, pairs in self._lists.items())

    def values(self, name: str) -> tuple[str, ...]:
        return tuple(v for v, _ in self._lists.get(name, ()))

    def _windows(self, words: list[str]) -> list[tuple[str, int]]:
        """Candidate spans (text, start), both spaced and run together ("bed room" -> "bedroom")."""
        out: list[tuple[str, int]] = []
        for k in range(1, self._max_words + 2):
            for i in range(0, len(words) - k + 1):
                window = words[i:i + k]
                if window[0] in _STOP or window[-1] in _STOP:
                    continue
                out.append((" ".join(window), i))
                if k > 1:
                    out.append(("".join(window), i))
        return out

    def match(self, normalized: str) -> dict[str, str]:
        """``{list name: configured value}`` for each list with a value in the text."""
        windows = self._windows(normalized.split())
        if not windows or not self._queries:
            return {}
        scores = process.cdist([q for q, _, _ in self._queries], [w for w, _ in windows],
                               scorer=fuzz.ratio, score_cutoff=self.min_score, workers=1)
        best: dict[str, tuple[float, int, str]] = {}
        for qi, (query, list_name, value) in enumerate(self._queries):
            row = scores[qi]
            for wi in row.nonzero()[0]:
                score = float(row[wi])
                if len(query.replace(" ", "")) <= 3 and score < 100.0:
                    continue
                cand = (score, -windows[wi][1], value)
                if list_name not in best or cand[:2] > best[list_name][:2]:
                    best[list_name] = cand
        return {name: best[name][2] for name in self._lists if name in best}

"""Entity extraction: every slot the built-in parsers can find, with normalized values.

Slots (all JSON-serializable):

- ``numbers``: list of floats ("twenty five" -> 25.0, "3.5" -> 3.5)
- ``duration``: ``{"hours", "minutes", "seconds"}`` and ``duration_s`` (total seconds)
- ``time``: ``{"hour", "minute", "ambiguous"}``; ``date``: see ``timeparse``
- ``percent``: float ("15 percent", "15%")
- ``temperature``: ``{"value", "unit"}``
- ``conversion``: ``{"value", "from_unit", "to_unit", "quantity"}``
- ``expression``: arithmetic in the ``expression`` language ("12 * 7", "sqrt 81")
- ``timer_name``: a label ("pasta" from "set a pasta timer"); ``all``: True for "all/every"
- one slot per configured list (``area``, ``device`` …) with the configured value
"""
from __future__ import annotations

from typing import Any
from collections.abc import Mapping

from .expression import extract_expression
from .lists import ListMatcher
from .numbers import NUMBER_WORDS, Token, tokenize
from .timeparse import (DURATION_UNITS, ORDINALS, extract_date, extract_duration, extract_time,
                        split_seconds)
from .units import extract_conversion, extract_temperature

BUILTIN_SLOTS = ("numbers", "duration", "duration_s", "time", "date", "percent", "temperature",
                 "conversion", "expression", "timer_name", "all")
_NAME_STOP = frozenset({
    "a", "an", "the", "my", "this", "that", "your", "new", "another", "first", "last", "next",
    "current", "running", "all", "every", "each", "one", "other", "timer", "timers", "countdown",
    "set", "start", "cancel", "stop", "delete", "remove", "off", "on", "of", "and", "for", "to",
    "is", "it", "me", "please", "kitchen", "quick", "same", "minute", "second", "hour", "long",
    "much", "left", "what", "how", "any", "some", "which", "its", "up", "in", "at", "with",
}) | NUMBER_WORDS | frozenset(DURATION_UNITS) | frozenset(ORDINALS)
_ALL_WORDS = frozenset({"all", "every", "everything", "both"})
_TAG_SLOTS = ("duration", "expression", "conversion", "date", "time")


def _name_word(tok: Token) -> bool:
    return not tok.is_number and tok.text.isalpha() and tok.text not in _NAME_STOP


def extract_timer_name(tokens: list[Token]) -> str | None:
    """A timer label: "called pasta", "named laundry", "the pasta timer", "timer for the eggs"."""
    texts = [t.text for t in tokens]
    for i, text in enumerate(texts):
        if text in ("called", "named", "labeled", "labelled") and i + 1 < len(tokens) \
                and _name_word(tokens[i + 1]):
            words = [texts[i + 1]]
            if i + 2 < len(tokens) and _name_word(tokens[i + 2]) and texts[i + 2] != "timer":
                words.append(texts[i + 2])
            return " ".join(words)
    for i, text in enumerate(texts):
        if text != "timer":
            continue
        if i > 0 and _name_word(tokens[i - 1]):
            return texts[i - 1]
        j = i + 1
        if j < len(tokens) and texts[j] == "for":
            j += 1 + (1 if j + 1 < len(tokens) and texts[j + 1] == "the" else 0)
            if j < len(tokens) and texts[j - 1] == "the" and _name_word(tokens[j]):
                return texts[j]
    return None


def extract_percent(tokens: list[Token]) -> float | None:
    for i, tok in enumerate(tokens[:-1]):
        if tok.is_number and tokens[i + 1].text == "percent":
            return tok.value
    return None


class Extractor:
    """Runs every parser on tokenized text; implements the ``EntityExtractor`` protocol."""

    def __init__(self, lists: Mapping[str, tuple[str, ...]]) -> None:
        self.lists = ListMatcher(lists)

    @property
    def slot_names(self) -> tuple[str, ...]:
        return BUILTIN_SLOTS + self.lists.names

    def extract(self, text: str) -> dict[str, Any]:
        """All slots found in normalized ``text``."""
        return self.extract_tokens(text, tokenize(text))

    def extract_tokens(self, normalized: str, tokens: list[Token],
                       wanted: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Slots found in ``tokens``; only those in ``wanted`` when given (saves time)."""
        want = set(self.slot_names if wanted is None else wanted)
        slots: dict[str, Any] = {}
        numbers = [t.value for t in tokens if t.is_number]
        if "numbers" in want and numbers:
            slots["numbers"] = numbers
        if want & {"duration", "duration_s"}:
            seconds = extract_duration(tokens)
            if seconds is not None:
                slots["duration"] = split_seconds(seconds)
                slots["duration_s"] = round(seconds, 3)
        for name, fn in (("time", extract_time), ("date", extract_date),
                         ("percent", extract_percent), ("temperature", extract_temperature),
                         ("conversion", extract_conversion), ("expression", extract_expression),
                         ("timer_name", extract_timer_name)):
            if name in want:
                value = fn(tokens)
                if value is not None:
                    slots[name] = value
        if "all" in want and any(t.text in _ALL_WORDS for t in tokens):
            slots["all"] = True
        if want & set(self.lists.names):
            for name, value in self.lists.match(normalized).items():
                if name in want:
                    slots[name] = value
        return {k: slots[k] for k in slots if k in want}

    def tags(self, found: Mapping[str, Any]) -> list[str]:
        """Classifier tag features from extracted slots: which kinds of entity the text has."""
        return [("list:" if k in self.lists.names else "slot:") + k for k in found
                if k in _TAG_SLOTS or k in self.lists.names]

"""Home Assistant templates as labelled, entity-masked training sentences (build time).

Needs ``hassil`` and ``home-assistant-intents`` (the pinned versions in ``pyproject.toml``).
Unlike ``hass.HassData.sample`` it keeps every template: wildcard lists (shopping items,
search queries, timer names, messages) get sample values, templates that need a satellite's
area get none, and a data block's fixed slots (``domain: light``) become part of the label
(``HassTurnOn|light``), so the classifier predicts them. Areas, floors and entity names are
masked (``@area``, ``@floor``, ``@name @light``) so the model learns the wording around them
and generalises to any home's lists (``lists.HomeLists`` masks the same way at run time).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from ...numbers import number_to_words
from ...text import normalize_text
from ...home.lists import ENTITY_SLOTS, HomeLists, mask_token

WILDCARDS = {
    "shopping_list_item": ("milk", "eggs", "bread", "apples", "paper towels", "dish soap",
                           "coffee", "bananas", "olive oil", "cat food", "butter", "rice",
                           "toilet paper", "orange juice", "tomatoes", "chicken"),
    "todo_list_item": ("call mom", "take out the trash", "pay the bills", "water the plants",
                       "clean the garage", "book a dentist appointment", "walk the dog",
                       "laundry", "buy a gift"),
    "search_query": ("the beatles", "jazz", "taylor swift", "relaxing music", "my workout playlist",
                     "bohemian rhapsody", "the news", "classical music", "a podcast about space",
                     "abbey road", "some rock"),
    "message": ("dinner is ready", "time to go", "the movie is starting", "wake up",
                "come downstairs"),
    "timer_name": ("pizza", "laundry", "pasta", "tea", "eggs", "oven", "bread"),
    "timer_command": ("turn off the lights", "pause the music"),
    "zone": ("home", "work", "school"),
}
WILDCARD_SLOTS = ("item", "search_query", "message", "name", "conversation_command", "state")


class Skip(Exception):
    """The template references a rule or list this sampler cannot expand."""


@dataclass
class Sentence:
    """One expanded sentence: raw text, masked words, slots, fine label."""

    text: str
    masked: list[str]
    label: str                              # intent or intent|domain
    slots: dict[str, str] = field(default_factory=dict)
    template: int = 0                       # index of the template it came from
    wild: dict[str, str] = field(default_factory=dict)   # wildcard slot -> its text


def label_of(intent: str, fixed: dict[str, Any] | None) -> str:
    domain = (fixed or {}).get("domain")
    return f"{intent}|{domain}" if domain else intent


def _number_text(n: float, rng: random.Random) -> str:
    if float(n).is_integer() and rng.random() < 0.3 and 0 <= n < 1000:
        return number_to_words(int(n))
    return str(int(n)) if float(n).is_integer() else str(n)


class Sampler:
    """Expands the templates with a ``HomeLists`` home (names with domains)."""

    def __init__(self, home: HomeLists, language: str = "en") -> None:
        from hassil import Intents
        from home_assistant_intents import get_intents

        data = get_intents(language)
        if data is None:
            raise ValueError(f"home-assistant-intents has no language {language!r}")
        self.intents = Intents.from_dict(data)
        self.home = home

    def templates(self):
        """(index, intent, template, rules, fixed slots, required domain) for every template."""
        k = 0
        for name, intent in sorted(self.intents.intents.items()):
            for data in intent.data:
                rules = {**self.intents.expansion_rules, **data.expansion_rules}
                need = (data.requires_context or {}).get("domain")
                need = [need] if isinstance(need, str) else need
                for sentence in data.sentences:
                    yield k, name, sentence, rules, dict(data.slots or {}), need
                    k += 1

    def _expand(self, expr, rules, rng, out: list, need, depth: int = 0) -> None:
        from hassil.expression import (Alternative, ListReference, Permutation, RuleReference,
                                       Sequence, TextChunk)
        from hassil.intents import RangeSlotList, TextSlotList

        if depth > 40:
            raise Skip("too deep")
        if isinstance(expr, TextChunk):
            out.append((expr.text, None))
        elif isinstance(expr, Permutation):
            items = expr.items[:]
            rng.shuffle(items)
            for item in items:
                out.append((" ", None))
                self._expand(item, rules, rng, out, need, depth + 1)
                out.append((" ", None))
        elif isinstance(expr, Alternative):
            self._expand(rng.choice(expr.items), rules, rng, out, need, depth + 1)
        elif isinstance(expr, Sequence):
            for item in expr.items:
                self._expand(item, rules, rng, out, need, depth + 1)
        elif isinstance(expr, RuleReference):
            if expr.rule_name not in rules:
                raise Skip(expr.rule_name)
            self._expand(rules[expr.rule_name].expression, rules, rng, out, need, depth + 1)
        elif isinstance(expr, ListReference):
            self._list(expr, rules, rng, out, need, RangeSlotList, TextSlotList, depth)
        else:
            raise Skip(type(expr).__name__)

    def _list(self, expr, rules, rng, out, need, range_cls, text_cls, depth) -> None:
        name, slot = expr.list_name, expr.slot_name
        if name in ENTITY_SLOTS:
            if name == "name":
                choices = [(n, d) for n, d in self.home.names.items() if not need or d in need]
                if not choices:
                    raise Skip("no name of the domain")
                value, domain = rng.choice(choices)
            else:
                pool = self.home.areas if name == "area" else self.home.floors
                value, domain = rng.choice(pool), ""
            out.append((value, ("entity", slot, value, domain)))
            return
        if name in WILDCARDS:
            value = rng.choice(WILDCARDS[name])
            out.append((value, ("wild", slot, value, "")))
            return
        lst = self.intents.slot_lists.get(name)
        if isinstance(lst, text_cls):
            v = rng.choice(lst.values)
            inner: list = []
            self._expand(v.text_in, rules, rng, inner, need, depth + 1)
            text = "".join(t for t, _ in inner)
            value = v.value_out if v.value_out is not None else text
            out.append((text, ("value", slot, _canon(value), "")))
        elif isinstance(lst, range_cls):
            n: float = rng.randrange(lst.start, lst.stop + 1, lst.step)
            if lst.fraction_type is not None and rng.random() < 0.15:
                n += 0.5
            value = n * lst.multiplier if lst.multiplier else n
            out.append((_number_text(n, rng), ("value", slot, _canon(value), "")))
        else:
            raise Skip(name)

    def sample(self, per_template: int, seed: int) -> list[Sentence]:
        """Up to ``per_template`` distinct sentences of every template."""
        rng = random.Random(seed)
        rows, seen = [], set()
        for k, intent, sentence, rules, fixed, need in self.templates():
            for _ in range(per_template * 2):
                pieces: list = []
                try:
                    self._expand(sentence.expression, rules, rng, pieces, need)
                except Skip:
                    break
                row = self._row(k, intent, fixed, pieces)
                if row.text and row.text not in seen:
                    seen.add(row.text)
                    rows.append(row)
                    if sum(r.template == k for r in rows[-per_template:]) >= per_template:
                        break
        return rows

    @staticmethod
    def _row(k: int, intent: str, fixed: dict, pieces: list) -> Sentence:
        text, masked, slots, wild = [], [], {}, {}
        for piece, tag in pieces:
            words = normalize_text(piece).split()
            text.extend(words)
            if tag is not None and tag[0] == "entity":
                masked.extend(mask_token(tag[1], tag[3]))
                slots[tag[1]] = tag[2]
            else:
                masked.extend(words)
                if tag is not None:
                    slots[tag[1]] = tag[2]
                    if tag[0] == "wild":
                        wild[tag[1]] = " ".join(words)
        fixed_slots = {k: _canon(v) for k, v in fixed.items() if k != "domain"}
        slots = {**fixed_slots, **slots}
        if "domain" in fixed:
            slots["domain"] = str(fixed["domain"])
        return Sentence(" ".join(text), masked, label_of(intent, fixed), slots, k, wild)


def _canon(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (int, float)):
        f = float(v)
        return str(int(f)) if f.is_integer() else f"{f:g}"
    return re.sub(r"\s+", " ", str(v)).strip()

"""Build time: Home Assistant sentence templates as NLU data, and learning the slot filler.

Needs ``hassil`` and ``home-assistant-intents`` (the ``hass`` extra; pinned in the report:
hassil 3.12.1, home-assistant-intents 2026.10.27). ``HassData.sample`` draws random sentences
from the templates with the slot values each one carries (``Example.slots``), which is both
training data and a held-out test set. Templates that need a wildcard list (free text: timer
names, shopping items, search queries, messages) or a satellite context are left out, for
hassil and for us alike; templates that need a device domain get device names of that
domain. ``SlotFiller(hass, rows)`` learns the serving filler's tables (``nlu.hass``) from the
templates' lists and labelled rows.
"""
from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass

from .. import hass as serving
from ..hass import _value
from ..hass_text import context_keys as _context_keys
from ..hass_text import number_spans as _number_spans
from ..hass_text import unit_after as _unit_after
from ..hass_text import words as _words
from ..text import normalize_text
from .datasets import Example


class _Skip(Exception):
    """The template needs a wildcard list or an unknown list."""


@dataclass(frozen=True)
class SlotRef:
    slot: str
    list_name: str


class HassData(serving.HassData):
    """The templates of ``nlu.hass.HassData``, sampled into labelled sentences."""

    def _expand(self, expr, rules, rng: random.Random, slots: list,
                need: dict | None = None) -> str:
        from hassil.expression import (Alternative, ListReference, Permutation, RuleReference,
                                       Sequence, TextChunk)
        from hassil.intents import RangeSlotList, TextSlotList

        if isinstance(expr, TextChunk):
            return expr.text
        if isinstance(expr, Permutation):
            items = expr.items[:]
            rng.shuffle(items)
            return " ".join(self._expand(i, rules, rng, slots, need) for i in items)
        if isinstance(expr, Alternative):
            return self._expand(rng.choice(expr.items), rules, rng, slots, need)
        if isinstance(expr, Sequence):
            return "".join(self._expand(i, rules, rng, slots, need) for i in expr.items)
        if isinstance(expr, RuleReference):
            if expr.rule_name not in rules:
                raise _Skip(expr.rule_name)
            return self._expand(rules[expr.rule_name].expression, rules, rng, slots, need)
        if isinstance(expr, ListReference):
            lst = self.lists.get(expr.list_name)
            if isinstance(lst, TextSlotList):
                values = [v for v in lst.values if _fits(v.context, need)]
                if not values:
                    raise _Skip(expr.list_name)
                v = rng.choice(values)
                text = self._expand(v.text_in, rules, rng, [])
                value = v.value_out if v.value_out is not None else text
            elif isinstance(lst, RangeSlotList):
                n: float = rng.randrange(lst.start, lst.stop + 1, lst.step)
                if lst.fraction_type is not None and rng.random() < 0.2:
                    n += 0.5
                text = str(n)
                value = n * lst.multiplier if lst.multiplier else n
            else:
                raise _Skip(expr.list_name)
            slots.append((expr.slot_name, _value(value), normalize_text(text)))
            return text
        raise _Skip(type(expr).__name__)

    def templates(self, with_context: bool = False):
        """(intent, sentence template, rules[, required context]) for every usable template:
        none that needs a context other than a device domain."""
        for name, intent in sorted(self.intents.intents.items()):
            for data in intent.data:
                if set(data.requires_context) - {"domain"}:
                    continue
                rules = {**self.intents.expansion_rules, **data.expansion_rules}
                for sentence in data.sentences:
                    yield (name, sentence, rules, data.requires_context) if with_context else \
                        (name, sentence, rules)

    def sample(self, per_template: int, seed: int) -> list[Example]:
        """``per_template`` random sentences of every usable template (duplicates dropped)."""
        rng = random.Random(seed)
        seen, rows = set(), []
        for name, sentence, rules, need in self.templates(with_context=True):
            for _ in range(per_template):
                slots: list = []
                try:
                    text = re.sub(r"\s+", " ", self._expand(sentence.expression, rules, rng, slots,
                                                            need)).strip()
                except _Skip:
                    break
                if text and text not in seen:
                    seen.add(text)
                    rows.append(Example(text, name, tuple(sorted((s, v) for s, v, _ in slots))))
        return rows


def _fits(context: dict | None, need: dict | None) -> bool:
    """A list value's context satisfies a template's required context (a value or a list)."""
    for key, want in (need or {}).items():
        have = (context or {}).get(key)
        if have is None or have not in (want if isinstance(want, list) else [want]):
            return False
    return True


class SlotFiller(serving.SlotFiller):
    """The serving filler, its tables learned from the templates and labelled rows."""

    def __init__(self, hass: HassData, train: list[Example], fuzzy_cutoff: float = 75.0) -> None:
        from hassil.intents import RangeSlotList, TextSlotList

        super().__init__(fuzzy_cutoff)
        rng = random.Random(0)
        for name, sentence, rules in hass.templates():
            for ref in _list_refs(sentence.expression, rules):
                lst = hass.lists.get(ref.list_name)
                if isinstance(lst, RangeSlotList):
                    self.range_refs[name].add((ref.slot, ref.list_name))
                    self.multipliers[ref.list_name] = lst.multiplier
                elif isinstance(lst, TextSlotList):
                    for v in lst.values:
                        for _ in range(6):       # the spoken variants of the value
                            text = " ".join(_words(hass._expand(v.text_in, rules, rng, [])))
                            value = v.value_out if v.value_out is not None else text
                            if text:
                                key = (ref.slot, _value(value), ref.list_name)
                                self.phrases[name][text][key] += 1
        self.learn(train)

    def learn(self, train: list[Example]) -> None:
        """Learn from labelled rows too (and index the tables again)."""
        for row in train:
            self.vocab[row.intent].update(_words(row.text))
            self._learn(row)
        self._index()

    def learned(self, train: list[Example]) -> SlotFiller:
        """A copy that has learned ``train`` as well: a filler of the templates alone
        (``SlotFiller(hass, [])``, the slow part) made once serves several row sets."""
        other = copy.deepcopy(self)
        other.learn(train)
        return other

    def _learn(self, row: Example) -> None:
        """Phrase reliability and number-context -> range slot counts from one labelled row."""
        words = _words(row.text)
        gold = dict(row.slots)
        used = [False] * len(words)
        signature = set()
        for phrase, i, n in self._phrase_hits(row.intent, words, used, exact=True):
            self.seen[(row.intent, phrase)] += 1
            meant = [(slot, lst) for slot, value, lst in self.phrases[row.intent][phrase]
                     if gold.get(slot) == value]
            if meant and not any(used[i:i + n]):
                self.meant[(row.intent, phrase)] += 1
                used[i:i + n] = [True] * n
                signature.add(meant[0])
                slot, lst = meant[0]
                self.phrase_ctx[(row.intent, phrase, _unit_after(words, i + n, used))][
                    (slot, gold[slot], lst)] += 1
        self.signatures[(row.intent, frozenset(signature))] += 1
        refs = self.range_refs.get(row.intent, set())
        for i, j, value in _number_spans(words, used):
            options = [r for r in refs if gold.get(r[0]) == _value(self._scaled(r[1], value))]
            if len(options) == 1:
                for key in _context_keys(row.intent, words, used, i, j):
                    self.contexts[key][options[0]] += 1


def _list_refs(expr, rules, depth: int = 0) -> list[SlotRef]:
    from hassil.expression import Group, ListReference, RuleReference

    if depth > 20:
        return []
    if isinstance(expr, ListReference):
        return [SlotRef(expr.slot_name, expr.list_name)]
    if isinstance(expr, RuleReference) and expr.rule_name in rules:
        return _list_refs(rules[expr.rule_name].expression, rules, depth + 1)
    if isinstance(expr, Group):
        return [r for item in expr.items for r in _list_refs(item, rules, depth + 1)]
    return []

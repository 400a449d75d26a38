"""Home Assistant sentence templates as NLU data, and a slot filler for them.

Build/benchmark time only (needs ``hassil`` and ``home-assistant-intents``; pinned in the
report: hassil 3.12.1, home-assistant-intents 2026.10.27). ``HassData`` loads the English
templates with our slot lists (areas, floors, device names), and ``sample`` draws random
sentences from them with the slot values each one carries (``Example.slots``), which is
both training data and a held-out test set. Templates that need a wildcard list (free text:
timer names, shopping items, search queries, messages) or a satellite context are left
out, for hassil and for us alike; templates that need a device domain get device names of
that domain (``NAMES``: name -> domain, as Home Assistant passes its entities).

``SlotFiller`` fills the slots of a classified sentence: phrases of the intent's text
lists (exact, then misheard ones: spelled or sounding alike, ``hass_text``), numbers for its
range lists (words or digits, placed by the most specific context seen in training: unit
words such as "minutes", "percent", "degrees", the word before). Its tables save to JSON
(``to_dict``/``from_dict``), so the daemon needs neither hassil nor the templates.
"""
from __future__ import annotations

import itertools
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from .datasets import Example
from .hass_text import close as _close
from .hass_text import context_keys as _context_keys
from .hass_text import number_spans as _number_spans
from .hass_text import similarity, sound_key, squash
from .hass_text import unit_after as _unit_after
from .hass_text import words as _words
from .text import normalize_text

AREAS = ("kitchen", "living room", "bedroom", "bathroom", "office", "garage", "hallway", "basement")
FLOORS = ("ground floor", "first floor", "upstairs", "downstairs")
NAMES = {"desk lamp": "light", "floor lamp": "light", "reading lamp": "light", "porch light": "light",
         "ceiling fan": "fan", "air purifier": "fan", "coffee maker": "switch",
         "christmas tree": "switch", "stereo": "media_player", "tv": "media_player",
         "front door": "lock", "patio blinds": "cover", "movie night": "scene"}


class _Skip(Exception):
    """The template needs a wildcard list or an unknown list."""


@dataclass(frozen=True)
class SlotRef:
    slot: str
    list_name: str


def _value(v: Any) -> str:
    """Canonical text of a slot value (numbers without a trailing .0)."""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (int, float)):
        f = float(v)
        return str(int(f)) if f.is_integer() else f"{f:g}"
    return normalize_text(str(v))


class HassData:
    """The English Home Assistant intents, parsed by hassil, with our slot lists."""

    def __init__(self, language: str = "en", areas=AREAS, floors=FLOORS, names=NAMES) -> None:
        from hassil import Intents
        from hassil.intents import TextSlotList
        from home_assistant_intents import get_intents

        data = get_intents(language)
        if data is None:
            raise ValueError(f"home-assistant-intents has no language {language!r}")
        self.intents = Intents.from_dict(data)
        self.slot_lists = {"area": TextSlotList.from_strings(areas, name="area"),
                           "floor": TextSlotList.from_strings(floors, name="floor"),
                           "name": TextSlotList.from_tuples(
                               [(n, n, {"domain": d}) for n, d in names.items()], name="name")}
        self.lists = {**self.intents.slot_lists, **self.slot_lists}

    # -- sampling ---------------------------------------------------------------------------
    def _expand(self, expr, rules, rng: random.Random, slots: list, need: dict | None = None) -> str:
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
                n = rng.randrange(lst.start, lst.stop + 1, lst.step)
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

    # -- hassil as the reference -------------------------------------------------------------
    def hassil_parse(self, text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """(intent or ``oos``, captured slots) from hassil's own recognizer."""
        from hassil import recognize_best

        result = recognize_best(text, self.intents, slot_lists=self.slot_lists)
        if result is None:
            return "oos", ()
        slots = tuple(sorted((e.name, _value(e.value)) for e in result.entities_list
                             if e.text and not e.is_wildcard))
        return result.intent.name, slots


def _fits(context: dict | None, need: dict | None) -> bool:
    """A list value's context satisfies a template's required context (a value or a list)."""
    for key, want in (need or {}).items():
        have = (context or {}).get(key)
        if have is None or have not in (want if isinstance(want, list) else [want]):
            return False
    return True


FILLER_FORMAT = 1


class SlotFiller:
    """Slots for (intent, text): learned phrase -> value tables plus the template lists."""

    def __init__(self, hass: HassData, train: list[Example], fuzzy_cutoff: float = 75.0) -> None:
        from hassil.intents import RangeSlotList, TextSlotList

        self.fuzzy_cutoff = fuzzy_cutoff
        self.range_refs: dict[str, set[tuple[str, str]]] = defaultdict(set)   # (slot, list)
        self.phrases: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
        self.multipliers: dict[str, float | None] = {}      # range list -> value multiplier
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
                                self.phrases[name][text][(ref.slot, _value(value), ref.list_name)] += 1
        self.seen: Counter = Counter()           # (intent, phrase) in a training sentence
        self.meant: Counter = Counter()          # ... and it was one of that intent's slot values
        self.contexts: dict[tuple, Counter] = defaultdict(Counter)
        self.signatures: Counter = Counter()     # (intent, frozenset of (slot, list)) seen
        self.phrase_ctx: dict[tuple, Counter] = defaultdict(Counter)   # (intent, phrase, unit)
        self.vocab: dict[str, set[str]] = defaultdict(set)   # words of the intent's sentences
        for row in train:
            self.vocab[row.intent].update(_words(row.text))
            self._learn(row)
        self._index()

    def _index(self) -> None:
        self._sounds = {intent: [(p, len(p.split()), squash(p), sound_key(p)) for p in table]
                        for intent, table in self.phrases.items()}

    @property
    def intents(self) -> frozenset[str]:
        """The intents it fills slots for."""
        return frozenset(self.phrases) | frozenset(self.range_refs)

    def to_dict(self) -> dict:
        """Its learned tables as JSON-ready data (``from_dict`` reads them back)."""
        def counts(counter: Counter) -> list:
            return [[*k, c] for k, c in sorted(counter.items())]
        return {"format": FILLER_FORMAT, "fuzzy_cutoff": self.fuzzy_cutoff,
                "range_refs": {i: sorted(map(list, r)) for i, r in sorted(self.range_refs.items())},
                "multipliers": dict(sorted(self.multipliers.items())),
                "phrases": {i: {p: counts(c) for p, c in sorted(t.items())}
                            for i, t in sorted(self.phrases.items())},
                "seen": counts(self.seen), "meant": counts(self.meant),
                "contexts": [[list(k), counts(c)] for k, c in sorted(self.contexts.items())],
                "signatures": [[i, sorted(map(list, sig)), c]
                               for (i, sig), c in sorted(self.signatures.items(), key=repr)],
                "phrase_ctx": [[list(k), counts(c)] for k, c in sorted(self.phrase_ctx.items())],
                "vocab": {i: sorted(v) for i, v in sorted(self.vocab.items())}}

    @classmethod
    def from_dict(cls, data: dict) -> "SlotFiller":
        """A filler from ``to_dict`` data, without hassil or the templates."""
        if data.get("format") != FILLER_FORMAT:
            raise ValueError(f"slot table format {data.get('format')!r} is not {FILLER_FORMAT}")

        def counter(rows: list) -> Counter:
            return Counter({tuple(r[:-1]): r[-1] for r in rows})
        self = cls.__new__(cls)
        self.fuzzy_cutoff = float(data["fuzzy_cutoff"])
        self.range_refs = defaultdict(set, {i: {tuple(r) for r in refs}
                                            for i, refs in data["range_refs"].items()})
        self.multipliers = dict(data["multipliers"])
        self.phrases = defaultdict(lambda: defaultdict(Counter))
        for intent, table in data["phrases"].items():
            for phrase, rows in table.items():
                self.phrases[intent][phrase] = counter(rows)
        self.seen, self.meant = counter(data["seen"]), counter(data["meant"])
        self.contexts = defaultdict(Counter, {tuple(k): counter(v) for k, v in data["contexts"]})
        self.signatures = Counter({(i, frozenset(tuple(x) for x in sig)): c
                                   for i, sig, c in data["signatures"]})
        self.phrase_ctx = defaultdict(Counter, {tuple(k): counter(v) for k, v in data["phrase_ctx"]})
        self.vocab = defaultdict(set, {i: set(v) for i, v in data["vocab"].items()})
        self._index()
        return self

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

    def _scaled(self, list_name: str, value: float) -> float:
        multiplier = self.multipliers[list_name]
        return value * multiplier if multiplier else value

    def _phrase_hits(self, intent: str, words: list[str], used: list[bool], exact: bool):
        table = self.phrases.get(intent, {})
        for phrase in sorted(table, key=lambda p: (-len(p.split()), p)):
            n = len(phrase.split())
            for i in range(len(words) - n + 1):
                if any(used[i:i + n]):
                    continue
                cand = " ".join(words[i:i + n])
                if cand == phrase or (not exact and len(phrase) >= 4 and _close(cand, phrase,
                                                                                self.fuzzy_cutoff)):
                    yield phrase, i, n

    def _fuzzy_hits(self, intent: str, words: list[str], used: list[bool]):
        """Misheard phrases, best first, not overlapping: same-length spans spelled alike word
        by word (``hass_text.close``), and spans of one word more or less that sound alike
        (``hass_text.similarity``) when they hold a word never seen in the intent's training
        sentences (so the intent's own wording, "off this timer", is not read as "office")."""
        vocab = self.vocab.get(intent, set())
        found = []
        for phrase, n, phrase_squash, phrase_key in self._sounds.get(intent, ()):
            for k in {max(1, n - 1), n, n + 1}:
                for i in range(len(words) - k + 1):
                    if any(used[i:i + k]):
                        continue
                    span = words[i:i + k]
                    cand = " ".join(span)
                    score = 0.0
                    if not all(w in vocab for w in span):
                        score = similarity(cand, phrase, phrase_squash, phrase_key)
                    if k == n and len(phrase) >= 4 and _close(cand, phrase, self.fuzzy_cutoff):
                        score = max(score, self.fuzzy_cutoff)
                    if score:
                        found.append((score, n, -i, k, phrase))
        taken = list(used)
        for score, _, neg_i, k, phrase in sorted(found, reverse=True):   # ties: longer, earlier
            if not any(taken[-neg_i:-neg_i + k]):
                taken[-neg_i:-neg_i + k] = [True] * k
                yield phrase, -neg_i, k, score / 100

    def _reliability(self, intent: str, phrase: str) -> float:
        """How often the phrase, seen in the intent's training sentences, was a slot value
        there (1.0 when never seen): "on" in "locked on basement" is mostly a preposition."""
        seen = self.seen[(intent, phrase)]
        return self.meant[(intent, phrase)] / seen if seen else 1.0

    def _best_assignment(self, intent: str, hits: list) -> tuple[dict[str, str], list[bool]]:
        """One option (or none) per phrase hit: a slot combination seen in training for this
        intent first, then the most slots, then the most reliable phrases (exact matches over
        misheard ones), then the most frequent values."""
        best, best_score, best_keep = {}, None, [False] * len(hits)
        options = [[None, *((opt, rel) for opt in opts)] for _, _, opts, rel in hits]
        for choice in itertools.product(*options):
            picked = [c for c in choice if c is not None]
            slots = [c[0][0][0] for c in picked]
            if len(set(slots)) != len(slots):
                continue
            sig = frozenset((c[0][0][0], c[0][0][2]) for c in picked)
            seen = self.signatures.get((intent, sig), 0)
            score = (seen > 0, len(picked), round(sum(c[1] for c in picked), 6), seen,
                     sum(c[0][1] for c in picked))
            if best_score is None or score > best_score:
                best_score = score
                best = {c[0][0][0]: c[0][0][1] for c in picked}
                best_keep = [c is not None for c in choice]
        return best, best_keep

    def _numbers(self, intent: str, words: list[str], used: list[bool]) -> dict[str, str]:
        """Range slots from the free number phrases: each (number, slot) pair scored by the
        most specific context seen in training with that slot (then by its count), and
        matched greedily, one slot per number and one number per slot ("ground 4 4 by 17":
        the 17 after "by" is the volume step, not the stray 4)."""
        refs = self.range_refs.get(intent, set())
        spans = _number_spans(words, used)
        if not refs or not spans:
            return {}
        pairs = []
        for s, (i, j, _) in enumerate(spans):
            for level, key in enumerate(_context_keys(intent, words, used, i, j)):
                pairs.extend((level, -count, s, ref) for ref, count in
                             self.contexts.get(key, {}).items() if ref in refs)
        if not pairs and len(refs) == 1:
            pairs = [(0, 0, 0, next(iter(refs)))]
        out: dict[str, str] = {}
        done: set[int] = set()
        for _, _, s, (slot, list_name) in sorted(pairs):
            if s not in done and slot not in out:
                out[slot] = _value(self._scaled(list_name, spans[s][2]))
                done.add(s)
        return out

    def fill(self, intent: str, text: str) -> tuple[tuple[str, str], ...]:
        """Slots (name, canonical value) for ``text`` classified as ``intent``."""
        words = _words(text)
        used = [False] * len(words)
        hits = []
        for hits_of in (lambda: ((*h, 1.0) for h in self._phrase_hits(intent, words, used, True)),
                        lambda: self._fuzzy_hits(intent, words, used)):
            for phrase, i, n, quality in hits_of():
                if any(used[i:i + n]):
                    continue
                used[i:i + n] = [True] * n
                ctx = self.phrase_ctx.get((intent, phrase, _unit_after(words, i + n, used)))
                hits.append((i, n, (ctx or self.phrases[intent][phrase]).most_common(3),
                             self._reliability(intent, phrase) * quality))
        found, keep = self._best_assignment(intent, hits[:6])
        for (i, n, _, _), kept in zip(hits[:6], keep):
            if not kept:
                used[i:i + n] = [False] * n
        found.update(self._numbers(intent, words, used))   # a number may replace a text slot
        return tuple(sorted(found.items()))


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

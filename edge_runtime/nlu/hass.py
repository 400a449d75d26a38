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
lists (exact, then fuzzy for recognition errors), numbers for its range lists (words or
digits, placed by unit words such as "minutes", "percent", "degrees").
"""
from __future__ import annotations

import itertools
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

from .augment import digits_to_words
from .datasets import Example
from .numbers import parse_number
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


def _close(cand: str, phrase: str, cutoff: float) -> bool:
    """Recognition-error match of two phrases with the same number of words: similar
    spelling overall ("ground force" ~ "ground floor", "gait" ~ "gate") and word by word
    (so "our lamps" is not "floor lamp")."""
    cand = digits_to_words(cand)                 # "ground 4" ~ "ground four" ~ "ground floor"
    if len(cand.split()) != len(phrase.split()) or fuzz.ratio(cand, phrase) < cutoff:
        return False
    return all(fuzz.ratio(a, b) >= 50 and abs(len(a) - len(b)) <= 2
               for a, b in zip(cand.split(), phrase.split()))


def _fits(context: dict | None, need: dict | None) -> bool:
    """A list value's context satisfies a template's required context (a value or a list)."""
    for key, want in (need or {}).items():
        have = (context or {}).get(key)
        if have is None or have not in (want if isinstance(want, list) else [want]):
            return False
    return True


class SlotFiller:
    """Slots for (intent, text): learned phrase -> value tables plus the template lists."""

    def __init__(self, hass: HassData, train: list[Example], fuzzy_cutoff: float = 75.0) -> None:
        from hassil.intents import RangeSlotList, TextSlotList

        self.fuzzy_cutoff = fuzzy_cutoff
        self.range_refs: dict[str, set[tuple[str, str]]] = defaultdict(set)   # (slot, list)
        self.phrases: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
        self.range_lists: dict[str, Any] = {}
        rng = random.Random(0)
        for name, sentence, rules in hass.templates():
            for ref in _list_refs(sentence.expression, rules):
                lst = hass.lists.get(ref.list_name)
                if isinstance(lst, RangeSlotList):
                    self.range_refs[name].add((ref.slot, ref.list_name))
                    self.range_lists[ref.list_name] = lst
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
        for row in train:
            self._learn(row)

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
        lst = self.range_lists[list_name]
        return value * lst.multiplier if lst.multiplier else value

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

    def _reliable(self, intent: str, phrase: str) -> bool:
        seen = self.seen[(intent, phrase)]
        return seen < 3 or self.meant[(intent, phrase)] / seen >= 0.3

    def _best_assignment(self, intent: str, hits: list) -> tuple[dict[str, str], list[bool]]:
        """One option (or none) per phrase hit: a slot combination seen in training for this
        intent first, then the most slots, then the most frequent values."""
        best, best_score, best_keep = {}, None, [False] * len(hits)
        for choice in itertools.product(*[[None, *opts] for _, _, opts in hits]):
            picked = [c for c in choice if c is not None]
            slots = [c[0][0] for c in picked]
            if len(set(slots)) != len(slots):
                continue
            sig = frozenset((c[0][0], c[0][2]) for c in picked)
            seen = self.signatures.get((intent, sig), 0)
            score = (seen > 0, len(picked), seen, sum(c[1] for c in picked))
            if best_score is None or score > best_score:
                best_score = score
                best = {c[0][0]: c[0][1] for c in picked}
                best_keep = [c is not None for c in choice]
        return best, best_keep

    def fill(self, intent: str, text: str) -> tuple[tuple[str, str], ...]:
        """Slots (name, canonical value) for ``text`` classified as ``intent``."""
        words = _words(text)
        used = [False] * len(words)
        hits = []
        for exact in (True, False):
            for phrase, i, n in self._phrase_hits(intent, words, used, exact):
                if any(used[i:i + n]):
                    continue
                used[i:i + n] = [True] * n
                ctx = self.phrase_ctx.get((intent, phrase, _unit_after(words, i + n, used)))
                hits.append((i, n, (ctx or self.phrases[intent][phrase]).most_common(3)))
        found, keep = self._best_assignment(intent, hits[:6])
        for (i, n, _), kept in zip(hits[:6], keep):
            if not kept:
                used[i:i + n] = [False] * n
        free = set(self.range_refs.get(intent, set()))      # a number may replace a text slot
        filled: set[str] = set()                               # ("volume up" vs "volume up 10")
        for i, j, value in _number_spans(words, used):
            if not free:
                break
            ref = None
            for key in _context_keys(intent, words, used, i, j):
                options = [(c, r) for r, c in self.contexts.get(key, {}).items() if r in free]
                if options:
                    ref = max(options)[1]
                    break
            if ref is None and len(free) == 1:
                ref = next(iter(free))
            if ref is not None and ref[0] not in filled:
                found[ref[0]] = _value(self._scaled(ref[1], value))
                filled.add(ref[0])
                free = {r for r in free if r[0] != ref[0]}
        return tuple(sorted(found.items()))


_DIGIT_LETTER = re.compile(r"(?<=\d)(?=[a-z])")


_HALF = re.compile(r"\b1 (?:divided by|minus|slash|over|-) 2\b")
_POINT_FIVE = re.compile(r"\b(\d+)\.5 (hour|minute|second)")     # a recognizer's "9.5 minutes"
_TENS_UNITS = re.compile(r"\b([2-9]0) ([1-9])\b")


def _words(text: str) -> list[str]:
    """Normalized words, a unit glued to a number split off ("3900k" -> "3900 k"), "1/2"
    read as "half", a recognizer's "9.5 minutes" as "9 and a half minutes" and its "70 8"
    joined to "78"."""
    t = _DIGIT_LETTER.sub(" ", normalize_text(text.replace("-", " - ")))
    t = _HALF.sub("half", t)
    t = _POINT_FIVE.sub(r"\1 and a half \2", t)
    t = _TENS_UNITS.sub(lambda m: str(int(m.group(1)) + int(m.group(2))), t)
    return t.split()


def _unit(word: str) -> str:
    return word[:-1] if word in ("hours", "minutes", "seconds", "degrees", "percents") else word


def _number_spans(words: list[str], used: list[bool]) -> list[tuple[int, int, float]]:
    """(start, end, value) of each number phrase outside ``used`` words."""
    masked = [w if not u else "|" for w, u in zip(words, used)]
    spans, i = [], 0
    while i < len(masked):
        parsed = parse_number(masked, i) if masked[i] != "|" else None
        if parsed is None:
            i += 1
            continue
        value, j = parsed
        spans.append((i, j, value))
        i = j
    return spans


_UNITS = frozenset({"hour", "minute", "second", "percent", "degree", "kelvin", "k"})
_CUES = ("temperature", "brightness", "bright", "dim", "volume", "loud", "position", "open",
         "close", "speed", "fan", "up", "down", "increase", "decrease", "raise", "lower")


def _unit_after(words: list[str], j: int, used: list[bool]) -> str:
    """The first unit word within 4 free words after position ``j`` ("-" if none)."""
    free = 0
    for k in range(j, len(words)):
        if used[k]:
            continue
        if _unit(words[k]) in _UNITS:
            return _unit(words[k])
        free += 1
        if free >= 4:
            break
    return "-"


def _context_keys(intent: str, words: list[str], used: list[bool], i: int, j: int) -> list[tuple]:
    """Context of the number at words[i:j], most specific first."""
    prev2 = " ".join(words[max(0, i - 2):i])
    prev = words[i - 1] if i > 0 else "<s>"
    nxt = _unit(words[j]) if j < len(words) else "</s>"
    nxt2 = " ".join(_unit(w) for w in words[j:j + 2]) or "</s>"
    unit = _unit_after(words, j, used)
    cue = " ".join(sorted({w for w in words if w in _CUES})) or "-"
    return [(intent, "u", unit, cue, prev), (intent, "u", unit, cue), (intent, "u", unit),
            (intent, prev2, nxt2), (intent, prev, nxt2), (intent, prev, nxt),
            (intent, "n", nxt2), (intent, "n", nxt), (intent, "p", prev), (intent,)]


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

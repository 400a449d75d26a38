"""Home Assistant intents beside the model in the daemon: hassil's template match and the
slot filler.

``HassData`` loads the English Home Assistant templates (``hassil`` and
``home-assistant-intents``, the ``hass`` extra; pinned in a model's ``hass.json``) with
our slot lists (areas, floors, device names: ``NAMES`` maps name -> domain, as Home
Assistant passes its entities); ``hassil_parse`` is hassil's own recognizer on them.
Sampling the templates into training rows is build time: ``train.hass``.

``SlotFiller`` fills the slots of a classified sentence: phrases of the intent's text
lists (exact, then misheard ones: spelled or sounding alike, ``hass_text``), numbers for its
range lists (words or digits, placed by the most specific context seen in training: unit
words such as "minutes", "percent", "degrees", the word before). Its tables are learned at
build time (``train.hass.SlotFiller``) and saved to JSON (``to_dict``/``from_dict``), so the
daemon needs neither hassil nor the templates.
"""
from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any, TypeVar

from .base import OOS
from .hass_text import close as _close
from .hass_text import context_keys as _context_keys
from .hass_text import number_spans as _number_spans
from .hass_text import similarity, sound_key, squash
from .hass_text import unit_after as _unit_after
from .hass_text import words as _words
from .text import normalize_text

if TYPE_CHECKING:
    from hassil.intents import SlotList

AREAS = ("kitchen", "living room", "bedroom", "bathroom", "office", "garage", "hallway", "basement")
FLOORS = ("ground floor", "first floor", "upstairs", "downstairs")
NAMES = {"desk lamp": "light", "floor lamp": "light", "reading lamp": "light",
         "porch light": "light",
         "ceiling fan": "fan", "air purifier": "fan", "coffee maker": "switch",
         "christmas tree": "switch", "stereo": "media_player", "tv": "media_player",
         "front door": "lock", "patio blinds": "cover", "movie night": "scene"}


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
        self.slot_lists: dict[str, SlotList] = {
            "area": TextSlotList.from_strings(areas, name="area"),
            "floor": TextSlotList.from_strings(floors, name="floor"),
            "name": TextSlotList.from_tuples(
                [(n, n, {"domain": d}) for n, d in names.items()], name="name")}
        self.lists = {**self.intents.slot_lists, **self.slot_lists}

    def hassil_parse(self, text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """(intent or ``oos``, captured slots) from hassil's own recognizer."""
        from hassil import recognize_best

        result = recognize_best(text, self.intents, slot_lists=self.slot_lists)
        if result is None:
            return OOS, ()
        slots = tuple(sorted((e.name, _value(e.value)) for e in result.entities_list
                             if e.text and not e.is_wildcard))
        return result.intent.name, slots


FILLER_FORMAT = 1


_Filler = TypeVar("_Filler", bound="SlotFiller")


class SlotFiller:
    """Slots for (intent, text): learned phrase -> value tables plus the template lists."""

    def __init__(self, fuzzy_cutoff: float = 75.0) -> None:
        """An empty filler (fills nothing): ``from_dict`` loads a model's tables, and
        ``train.hass.SlotFiller`` learns them from the templates and labelled rows."""
        self.fuzzy_cutoff = fuzzy_cutoff
        self.range_refs: dict[str, set[tuple[str, str]]] = defaultdict(set)   # (slot, list)
        self.phrases: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
        self.multipliers: dict[str, float | None] = {}      # range list -> value multiplier
        self.seen: Counter = Counter()           # (intent, phrase) in a training sentence
        self.meant: Counter = Counter()          # ... and it was one of that intent's slot values
        self.contexts: dict[tuple, Counter] = defaultdict(Counter)
        self.signatures: Counter = Counter()     # (intent, frozenset of (slot, list)) seen
        self.phrase_ctx: dict[tuple, Counter] = defaultdict(Counter)   # (intent, phrase, unit)
        self.vocab: dict[str, set[str]] = defaultdict(set)   # words of the intent's sentences
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
    def from_dict(cls: type[_Filler], data: dict) -> _Filler:
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
        self.phrase_ctx = defaultdict(Counter, {tuple(k): counter(v)
                                                for k, v in data["phrase_ctx"]})
        self.vocab = defaultdict(set, {i: set(v) for i, v in data["vocab"].items()})
        self._index()
        return self

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
        pairs: list[tuple[int, int, int, tuple[str, str]]] = []
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
        for (i, n, _, _), kept in zip(hits[:6], keep, strict=True):
            if not kept:
                used[i:i + n] = [False] * n
        found.update(self._numbers(intent, words, used))   # a number may replace a text slot
        return tuple(sorted(found.items()))

"""A home's areas, floors and named entities, and masking them in a sentence.

The home classifier never sees entity names: both its training sentences (``sample``) and
the sentences it parses have each area, floor and entity name replaced by a placeholder
(``@area``, ``@floor``, ``@name @<domain>``), so a model built once understands any home's
lists. ``HomeLists.mask(words)`` finds the phrases (longest first, a plural or singular last
word also matching: "kitchen lights" is the entity "Kitchen Light") and returns the masked
words with the values found. ``repair(words, known)`` first puts back names a recognizer
misheard ("the epic fan" -> "the attic fan", "patio keeper" -> "patio heater"): a span
holding a word the home model never saw (not in ``known``) that sounds and is spelled like
one of the home's names or areas of two words or more (``hass_text.similarity``) is
replaced by that name.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping

from rapidfuzz import fuzz

from ..hass_text import similarity, sound_key, squash
from ..text import normalize_text
from .words import said_number

ENTITY_SLOTS = ("area", "floor", "name")
REPAIR_CUTOFF = 70.0     # hass_text.similarity score a misheard name must reach
SPLIT_CUTOFF = 92.0      # letters alike (rapidfuzz ratio) for a name heard one word longer
_NOT_FIRST = frozenset(("the", "a", "an", "my", "our", "and", "to", "on", "in", "of", "off"))
# words a request says for what they mean, never a misheard name word
_SAID_FOR_ITSELF = frozenset(("timer", "timers", "list", "volume", "music", "temperature",
                              "alarm", "song", "playlist", "album",
                              # a question's own word ("what temperature's the boiler
                              # reading" is no Heated Propagator)
                              "what", "whats", "how", "hows", "where", "which", "who",
                              # nor which way ("turn the sonos down" is no Sonos One)
                              "up", "down", "on", "off"))
_MIN_JOINED = 6          # letters a phrase needs to match with its spaces dropped
_WORD_ALIKE = 34.0       # rapidfuzz ratio a never-seen word needs to the name word it replaces


def _aligned(heard: list[str], phrase: tuple[str, ...], known: frozenset[str] | set[str]
             ) -> bool:
    """A word the model knows, heard where the name has another word, is spelled like
    it ("heated airer" heard as "heater to" is not: "to" is a word said; nor is "panel
    heater" in "a bath later"): a recognizer mishears a name word for word, and a word
    it never saw is still a third alike ("epic" for "attic", not "bath" for "panel")."""
    for a, b in zip(heard, phrase, strict=True):
        if a in _SAID_FOR_ITSELF and a != b:
            return False       # "set a sauna timer": the timer, not the Sauna Heater
        alike = fuzz.ratio(a, b)
        if a in known or a in _NOT_FIRST:
            if alike < 50 or abs(len(a) - len(b)) > 2 or \
                    a.endswith("ing") and not b.endswith("ing"):
                return False   # (a verb said: "start making chapatis" is no Main Gate)
        elif alike < _WORD_ALIKE:
            return False
    return True

# The home the default model is built with (any home's lists work at run time).
DEFAULT_AREAS = ("kitchen", "living room", "bedroom", "bathroom", "office", "garage", "hallway",
                 "basement", "dining room", "guest room", "kids room", "porch", "attic", "garden")
# the words of rooms people have (a room the home lacks is no misheard name: "basement")
ROOM_WORDS = frozenset(w for area in DEFAULT_AREAS for w in area.split()) - {"room"}
DEFAULT_FLOORS = ("ground floor", "first floor", "second floor", "upstairs", "downstairs")
DEFAULT_NAMES = {
    "desk lamp": "light", "floor lamp": "light", "reading lamp": "light", "porch light": "light",
    "ceiling light": "light", "kitchen light": "light", "bedroom lamp": "light",
    "led strip": "light", "night light": "light", "chandelier": "light",
    "ceiling fan": "fan", "air purifier": "fan", "box fan": "fan",
    "coffee maker": "switch", "christmas tree": "switch", "kettle": "switch",
    "dehumidifier": "switch", "heater": "switch",
    "stereo": "media_player", "living room tv": "media_player", "kitchen speaker": "media_player",
    "sonos": "media_player", "record player": "media_player",
    "front door": "lock", "back door": "lock", "garage door lock": "lock",
    "patio blinds": "cover", "garage door": "cover", "bedroom curtains": "cover",
    "office shades": "cover", "skylight": "cover",
    "movie night": "scene", "party mode": "scene", "good night": "script",
    "thermostat": "climate", "upstairs thermostat": "climate", "air conditioner": "climate",
    "roomba": "vacuum", "robot vacuum": "vacuum", "lawn mower": "lawn_mower",
    "mowbot": "lawn_mower",
    "shopping list": "todo", "chores": "todo", "groceries": "todo",
    "outside temperature": "sensor", "humidity sensor": "sensor", "front porch sensor": "sensor",
    "local weather": "weather", "home forecast": "weather",
    "main valve": "valve", "mom": "person", "alex": "person",
}


def mask_token(list_name: str, domain: str = "") -> list[str]:
    """The placeholder words for a value of ``list_name``."""
    if list_name == "name":
        return ["@name", f"@{domain}"] if domain else ["@name"]
    return [f"@{list_name}"]


def _unaccented(word: str) -> str:
    """``word`` without its accents ("dépanneur" -> "depanneur")."""
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def phrase_words(name: str) -> tuple[str, ...]:
    """A list value as words: template syntax dropped ("Trader Joe[']s" -> trader joes)."""
    return tuple(normalize_text(re.sub(r"[\[\]()<>{}|]", "", name)).split())


# what stands before and after a room called by its last word ("the parlor fan", "in the
# parlor please"; not "the bomb shelter", "fix the gallery railing")
_BEFORE_ROOM = frozenset(("the", "my", "our", "in", "on", "at", "to", "from", "of", "upstairs",
                          "downstairs"))
_AFTER_ROOM = frozenset(("light", "lights", "lamp", "lamps", "fan", "fans", "blinds", "blind",
                         "curtains", "shades", "window", "windows", "door", "heating", "heater",
                         "tv", "speaker", "music", "temperature", "please", "now", "and", "to",
                         "is", "are", "on", "off", "up", "down", "too", "for", "at", "with",
                         "before", "after", "while", "when", "because", "so", "tonight", "today"))
# words that end a room's name but say no room of their own ("in the house": all of it)
_NO_HEAD = frozenset(("house", "home", "room", "rooms", "place", "flat", "apartment", "area",
                      "floor", "level", "side", "space", "unit", "quarters"))


@dataclass(frozen=True)
class Match:
    slot: str            # area | floor | name
    value: str           # the value as the home names it ("Kitchen Light")
    domain: str          # entity domain ("" for areas and floors)
    start: int
    end: int


_GROUND = frozenset(("ground", "main", "downstairs", "lower"))
_UPPER = frozenset(("first", "second", "upper", "upstairs", "top"))


def stair_floors(floors: Iterable[str]) -> dict[str, str]:
    """"upstairs" and "downstairs" for a home of two floors, one at ground level and one
    above it ("Ground Floor", "First Floor"); none where either could be another floor."""
    floors = list(floors)
    if len(floors) != 2:
        return {}
    ground = [f for f in floors if set(phrase_words(f)) & _GROUND]
    upper = [f for f in floors if set(phrase_words(f)) & _UPPER]
    if len(ground) != 1 or len(upper) != 1 or ground == upper:
        return {}
    return {"downstairs": ground[0], "upstairs": upper[0]}


@dataclass
class HomeLists:
    areas: tuple[str, ...] = DEFAULT_AREAS
    floors: tuple[str, ...] = DEFAULT_FLOORS
    names: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_NAMES))  # name -> domain

    def __post_init__(self) -> None:
        table: dict[tuple[str, ...], tuple[str, str, str]] = {}
        plain: set[tuple[str, ...]] = set()      # the phrases as the home says them
        spelled: list[tuple[tuple[str, ...], tuple[str, str, str]]] = []
        # entity names first: "kitchen light" is a name, not the area kitchen + "light"
        for slot, values in (("name", self.names.items()), ("area", ((a, "") for a in self.areas)),
                             ("floor", ((f, "") for f in self.floors))):
            for value, domain in values:
                words = phrase_words(value)
                if not words:
                    continue
                for form in _forms(words):
                    plain.add(form)
                    table.setdefault(form, (slot, value, domain))
                spelled.extend((form, (slot, value, domain)) for form in _spelled(words))
        # then the same phrases said another way, where no phrase of the home is said so
        places = {f for p in (*self.areas, *self.floors) for f in _forms(phrase_words(p))}
        for form in sorted(plain):
            for other in said_otherwise([form]):
                for said in _forms(other):       # ("the telly's loud": "tellys")
                    table.setdefault(said, table[form])
            if len(form) > 1 and form[-1] in _LIT and form[:-1] not in places and \
                    form[-2] != "floor":
                # a lamp is called a light and a light a lamp, as the last word of a name
                # ("the night lamp": the Night Light); never a one-word name, nor a place's
                # ("the kitchen lamps" are the Kitchen's lights, not its Kitchen Light)
                table.setdefault((*form[:-1], _LIT[form[-1]]), table[form])
        for form, hit in spelled:
            table.setdefault(form, hit)
        for form, hit in list(table.items()):
            table.setdefault(tuple(_unaccented(w) for w in form), hit)   # "depanneur list":
            # the Dépanneur, as typed without its accent
        for word, floor in stair_floors(self.floors).items():
            table.setdefault((word,), ("floor", floor, ""))   # "the lights upstairs"
        # a room called by its last word, where no other room ends so ("the parlor": the
        # Front Parlor, "the bedroom": the Primary Bedroom, in a home with one bedroom), or
        # a "...room" by its first part ("the bath": the Bathroom)
        heads: dict[str, list[str]] = {}
        for area in self.areas:
            words = phrase_words(area)
            if len(words) > 1 and len(words[-1]) > 3 and words[-1] not in _NO_HEAD and \
                    not said_number(words[-1]):
                heads.setdefault(words[-1], []).append(area)
            elif len(words) == 1 and words[0].endswith("room") and len(words[0]) > 7:
                heads.setdefault(words[0][:-4], []).append(area)   # "in the bath": Bathroom
        self._heads = {form: ("area", areas[0], "") for head, areas in heads.items()
                       if len(areas) == 1 for form in _forms((head,)) if form not in table}
        self._table = table
        self._longest = max((len(k) for k in table), default=0)
        # the same phrases with their spaces dropped: recognizers and people split and join
        # compounds ("sound bar" is the Soundbar, "backdoor" the Back Door)
        joined: dict[str, tuple[str, str, str]] = {}
        for form, hit in table.items():
            joined.setdefault("".join(form), hit)
        self._joined = joined
        # sound-alike index: first sound -> (phrase words, squashed, sound key)
        sounds: dict[str, list[tuple[tuple[str, ...], str, str]]] = {}
        # names of two words or more: a one-word name has too many sound-alikes ("goes" ~
        # "chores", "halfway" ~ "hallway")
        # a one-word area with the word for its lights is two words too ("steady lights" ->
        # the study lights), heard as one phrase; only the area's word is ever repaired
        lit = {(*phrase_words(a), w) for a in self.areas if len(phrase_words(a)) == 1
               for w in ("lights", "light")}
        self._lit = lit
        # (not the names said another way: "travel alarm" is not the "telly room")
        for words in {k for k in plain if len(k) > 1} | lit:
            text = " ".join(words)
            key = sound_key(text)
            if key:
                sounds.setdefault(key[0], []).append((words, squash(text), key))
        self._sounds = sounds

    def repair(self, words: list[str], known: frozenset[str] | set[str],
               cutoff: float = REPAIR_CUTOFF) -> list[str]:
        """``words`` with misheard names and areas put back (best matches first, not
        overlapping); unchanged when every word is ``known`` or in the lists."""
        heard = self.matches(words)
        exact = {i for m in heard for i in range(m.start, m.end)}
        odd = [i for i, w in enumerate(words) if i not in exact and w not in known
               and not w[:1].isdigit()]
        if not odd:
            return words
        found = []
        for i in range(len(words)):
            for k in range(2, min(self._longest + 1, len(words) - i) + 1):
                if not any(i <= j < i + k for j in odd) or any(
                        m.start < i + k and i < m.end and not i <= m.start < m.end <= i + k
                        for m in heard):
                    continue            # (a name heard right is never cut: "dust extractor
                                        # filled" is not the extractor fan)
                if words[i + k:i + k + 1] in (["timer"], ["timers"]):
                    continue            # a timer's own name ("set a scones timer" is no
                                        # Air Con timer)
                span = " ".join(words[i:i + k])
                key = sound_key(span)
                for phrase, flat, pkey in self._sounds.get(key[:1], ()):
                    if len(phrase) == k - 1 and words[i] not in _NOT_FIRST:
                        # one word heard as two, letter for letter ("nights and speaker")
                        alike = fuzz.ratio(squash(span), flat)
                        if alike >= SPLIT_CUTOFF:
                            found.append((len(phrase), True, alike, k, -i, phrase))
                        continue
                    if len(phrase) != k:            # word for word: never eats or adds one
                        continue
                    if phrase in self._lit and words[i + 1] != phrase[1]:
                        continue
                    if not _aligned(words[i:i + k], phrase, known) or any(
                            not (a.startswith(b) or b.startswith(a))
                            for m in heard if i <= m.start and m.end <= i + k
                            for a, b in zip(words[m.start:m.end], phrase[m.start - i:],
                                            strict=False)):
                        continue            # (a room heard right stays: "the lights in the
                                            # hall na" is not the wall fan)
                    score = similarity(span, " ".join(phrase), flat, pkey, cutoff)
                    if score:
                        found.append((len(phrase), k == len(phrase), score, k, -i, phrase))
        if not found:
            return words
        taken = [False] * len(words)
        out: dict[int, tuple[int, tuple[str, ...]]] = {}
        # names of more words first ("halls come" is the hall sconce, not the hallway)
        for *_, k, neg, phrase in sorted(found, reverse=True):
            i = -neg
            if not any(taken[i:i + k]):
                taken[i:i + k] = [True] * k
                out[i] = (k, phrase)
        fixed: list[str] = []
        i = 0
        while i < len(words):
            if i in out:
                k, phrase = out[i]
                fixed.extend(phrase)
                i += k
            else:
                fixed.append(words[i])
                i += 1
        return fixed

    def reordered(self, words: list[str]) -> list[str]:
        """``words`` with a device said by its room after it ("the door to the cellar",
        "the light of the porch") put as the home names it ("cellar door"), where the home
        has that name; unchanged otherwise."""
        if "to" not in words and "of" not in words:
            return words                 # (most requests: no second matching pass)
        for m in self.matches(words):
            if m.slot != "area":
                continue
            at = m.start - (m.start > 0 and words[m.start - 1] == "the")
            if at < 2 or words[at - 1] not in ("to", "of"):
                continue
            kind = words[at - 2]
            said = (*words[m.start:m.end], kind)
            hit = self._table.get(said)
            if hit is not None and hit[0] == "name":
                return [*words[:at - 2], *said, *words[m.end:]]
        return words

    @classmethod
    def from_entities(cls, areas: Iterable[str], floors: Iterable[str],
                      entities: Iterable[tuple[str, str]]) -> HomeLists:
        """From (name, domain) pairs (Home Assistant's entity ids give the domain)."""
        names: dict[str, str] = {}
        for name, domain in entities:
            names.setdefault(name, domain)
        return cls(tuple(areas), tuple(floors), names)

    def matches(self, words: list[str], skip: frozenset[str] = frozenset()) -> list[Match]:
        """Phrases of the lists in ``words``, longest first, not overlapping; names whose
        words are all in ``skip`` are not matched."""
        out, i = [], 0
        bare = [_unaccented(w) for w in words]      # ("depanneur" typed for Dépanneur)
        accented = bare != words
        while i < len(words):
            for n in range(min(self._longest, len(words) - i), 0, -1):
                span = tuple(words[i:i + n])
                hit = self._table.get(span)
                if hit is None and accented:
                    hit = self._table.get(tuple(bare[i:i + n]))
                if hit is None and len(flat := "".join(span)) >= _MIN_JOINED:
                    hit = self._joined.get(flat)
                if hit is None and n == 1 and span in self._heads and \
                        words[i - 1:i] in ([], *([w] for w in _BEFORE_ROOM)) and \
                        (i + 1 == len(words) or words[i + 1] not in _NO_HEAD and
                         (words[i + 1] in _AFTER_ROOM or not words[i + 1].isalpha())):
                    hit = self._heads[span]      # "in the parlor" (not "the bomb shelter")
                if hit is not None and not (hit[0] == "name" and set(words[i:i + n]) <= skip):
                    out.append(Match(hit[0], hit[1], hit[2], i, i + n))
                    i += n
                    break
            else:
                i += 1
        return out

    @staticmethod
    def mask(words: list[str], found: list[Match]) -> list[str]:
        """``words`` with every match replaced by its placeholder."""
        out, i = [], 0
        for m in found:
            out.extend(words[i:m.start])
            out.extend(mask_token(m.slot, m.domain))
            i = m.end
        out.extend(words[i:])
        return out

    def to_dict(self) -> dict:
        return {"areas": list(self.areas), "floors": list(self.floors), "names": dict(self.names)}

    @classmethod
    def from_dict(cls, data: Mapping) -> HomeLists:
        return cls(tuple(data.get("areas", ())), tuple(data.get("floors", ())),
                   dict(data.get("names", {})))


# everyday words for the same thing: "the telly" is the home's TV, "the couch lamp" its Sofa
# Lamp (a name as the home says it always wins over one found through these)
_SAME = (("tv", "telly", "television", "tele"), ("sofa", "couch", "settee"))
_SAME_AS = {w: group for group in _SAME for w in group}
_LIT = {"light": "lamp", "lamp": "light", "lights": "lamps", "lamps": "lights"}


def _forms(words: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The phrase, and its last word singular or plural."""
    last = words[-1]
    forms = [words]
    if len(last) > 2:
        other = last[:-1] if last.endswith("s") else last + "s"
        forms.append((*words[:-1], other))
    return forms


def _spelled(words: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The phrase with its last word spelled with or without a silent last "e" ("Annexe"
    is written "annex" by a recognizer, "Annex" "annexe"); matched, never a repair."""
    last = words[-1]
    if len(last) < 5 or last.endswith("s"):
        return []
    return [(*words[:-1], last[:-1] if last.endswith("e") else last + "e")]


def said_otherwise(forms: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """``forms`` with one word said another way (``_SAME``)."""
    return [(*f[:i], alt, *f[i + 1:]) for f in forms for i, w in enumerate(f)
            for alt in _SAME_AS.get(w, ()) if alt != w]

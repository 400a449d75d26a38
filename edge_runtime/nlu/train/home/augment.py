"""Rewrites of masked template sentences toward natural speech (build time, pure Python).

Templates cover one wording of each request; people say it many ways. Each rewrite applies
one or two of: a filler word or polite frame ("please", "can you", "hey"), a dropped
function word, a synonym ("switch on" for "turn on", "lamp" for "light"), the room moved
to the front ("in the kitchen turn on the light"), a number's unit spelled out or dropped.
Placeholders (``@area``, ``@name`` ...) are never touched.
"""
from __future__ import annotations

import random

from ...home.model import QUESTION_STARTS
from ...home.words import said_number

_FRAMES = (("please",), ("can", "you"), ("could", "you"), ("hey",), ("i", "want", "you", "to"),
           ("would", "you"), ("okay",), ("um",), ("go", "ahead", "and"), ("i", "need", "you", "to"),
           ("can", "you", "please"), ("lets",), ("just",))
_ASKS = (("hey",), ("okay",), ("um",), ("so",), ("quick", "question"))    # before a question
_TAILS = (("please",), ("for", "me"), ("now",), ("right", "now"), ("thanks",), ("thank", "you"))
_DROP = frozenset(("the", "a", "my", "to", "of", "please", "all", "in", "is", "are", "for", "me"))
_SYNONYMS = {
    ("turn", "on"): (("switch", "on"), ("put", "on"), ("power", "on")),
    ("turn", "off"): (("switch", "off"), ("shut", "off"), ("power", "off"), ("kill",)),
    ("lights",): (("lamps",), ("lighting",)), ("light",): (("lamp",),),
    ("set",): (("change",), ("make",), ("put",), ("adjust",)),
    ("increase",): (("raise",), ("bump", "up"), ("up",)),
    ("decrease",): (("lower",), ("reduce",), ("drop",)),
    ("what", "is"): (("whats",),), ("whats",): (("what", "is"),),
    ("open",): (("raise",),), ("close",): (("shut",), ("lower",)),
    ("volume",): (("sound",),), ("timer",): (("countdown",),),
    ("pause",): (("stop",), ("hold",)), ("resume",): (("continue",), ("unpause",)),
    ("temperature",): (("temp",),), ("percent",): (("percentage",), ("%",)),
    ("add",): (("put",),), ("list",): (("lists",),), ("song",): (("track",),),
    ("track",): (("song",),), ("minutes",): (("mins",),),
}


# a synonym that means another request beside these words: to stop a timer is to cancel
# it (Home Assistant's HassCancelTimer), not to pause it as "stop the music" does
_NOT_BESIDE: dict[tuple[str, ...], frozenset[str]] = {
    ("stop",): frozenset(("timer", "timers", "countdown"))}


def _synonym(words: list[str], rng: random.Random) -> list[str]:
    spots = [(i, key) for i in range(len(words)) for key in _SYNONYMS
             if tuple(words[i:i + len(key)]) == key]
    if not spots:
        return words
    i, key = rng.choice(spots)
    repl = list(rng.choice(_SYNONYMS[key]))
    if repl == ["%"] or _NOT_BESIDE.get(tuple(repl), frozenset()).intersection(words):
        return words
    return words[:i] + repl + words[i + len(key):]


def _move_room(words: list[str]) -> list[str]:
    for tail in (["in", "the", "@area"], ["in", "@area"]):
        if len(words) > len(tail) + 1 and words[-len(tail):] == tail:
            return tail + words[:-len(tail)]
    return words


def variant(words: list[str], rng: random.Random) -> list[str]:
    """One natural-speech rewrite of masked ``words`` (a new list)."""
    out = list(words)
    question = bool(words) and words[0] in QUESTION_STARTS
    for _ in range(rng.choice((1, 1, 2))):
        r = rng.random()
        if r < 0.25 and question:
            out = list(rng.choice(_ASKS)) + out
        elif r < 0.25:
            out = list(rng.choice(_FRAMES)) + out
        elif r < 0.35:
            out = out + list(rng.choice(_TAILS))
        elif r < 0.6:
            # never a question's first word: "is the fan on" without it is a command
            # nor "to" before a number: "increase the volume to 80" is a level, and
            # "increase the volume 80" reads as a step
            drops = [i for i, w in enumerate(out) if w in _DROP
                     and not (i == 0 and w in QUESTION_STARTS)
                     and not (w == "to" and i + 1 < len(out) and said_number(out[i + 1]))]
            if drops and len(out) > 2:
                del out[rng.choice(drops)]
        elif r < 0.9:
            out = _synonym(out, rng)
        else:
            out = _move_room(out)
    return out


def unmask(masked: list[str], values: dict[str, str]) -> list[str] | None:
    """Masked words with each placeholder replaced by its value in ``values`` (``name``,
    ``area``, ``floor``); None when one has no value."""
    out: list[str] = []
    skip = False
    for w in masked:
        if skip:
            skip = False
            if w.startswith("@"):
                continue                       # the domain placeholder after @name
        if w in ("@name", "@area", "@floor"):
            value = values.get(w[1:])
            if not value:
                return None
            out.extend(value.split())
            skip = w == "@name"
        elif w.startswith("@"):
            return None
        else:
            out.append(w)
    return out


def vocabulary() -> set[str]:
    """Every word a rewrite can bring in (frames, tails, synonyms)."""
    words = {w for group in (_FRAMES, _ASKS, _TAILS) for phrase in group for w in phrase}
    for key, options in _SYNONYMS.items():
        words.update(key)
        words.update(w for phrase in options for w in phrase)
    return words

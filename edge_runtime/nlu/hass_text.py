"""Text helpers of the Home Assistant slot filler (``hass.SlotFiller``): recognizer-output
words, number spans and their context, and recognition-error-tolerant phrase matching.

``words`` repairs what a recognizer does to numbers ("9.5 minutes", "70 8", "70 one",
"52nd" for "fifty second", "for seconds" for "four seconds"); ``similarity`` scores a span of
words against a list phrase by spelling and by sound (``sound_key``: a Metaphone-like key, so
"test clamp" ~ "desk lamp", "air pure fire" ~ "air purifier", "own" ~ "on"), across a word
count of one more or one less than the phrase's.
"""
from __future__ import annotations

import re

from rapidfuzz import fuzz

from .numbers import digits_to_words, parse_number
from .text import normalize_text

_DIGIT_LETTER = re.compile(r"(?<=\d)(?=[a-z])")
_HALF = re.compile(r"\b1 (?:divided by|minus|slash|over|-) 2\b")
_POINT_FIVE = re.compile(r"\b(\d+)\.5 (hour|minute|second)")     # a recognizer's "9.5 minutes"
_TENS_UNITS = re.compile(r"\b([2-9]0) ([1-9])\b")
_NUMBER_DASH = re.compile(r"\b(?!1-2\b)(\d+)-(?=\d)")               # "50-8": fifty-eight, not minus
_TENS_SUFFIX = re.compile(r"\b([2-9])(?:t|ty)\b")                 # "7t 5": seventy five
_TEEN_UNITS = re.compile(r"\b1([3-9]) ([1-9])\b")                # "seventy eight" as "17, 8"
_UNIT_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9}
_TENS_UNIT_WORD = re.compile(r"\b([2-9]0) (" + "|".join(_UNIT_WORDS) + r")\b")
_ORDINAL_SECOND = re.compile(r"\b([2-9])2nd\b")                   # "fifty second" as "52nd"
_NUMBER_HOMOPHONE = re.compile(r"(?<![\d.] )\b(for|to|too)\b(?= (?:hours?|minutes?|seconds?)\b)")
_HOMOPHONE_VALUE = {"for": "4", "to": "2", "too": "2"}


def words(text: str) -> list[str]:
    """Normalized words, a unit glued to a number split off ("3900k" -> "3900 k"), "1/2"
    read as "half", and a recognizer's numbers repaired: "9.5 minutes" -> "9 and a half
    minutes"; "70 8", "70-8", "7t 8" -> "78"; "70 one" -> "71"; "17, 8" (-ty heard as -teen)
    -> "78"; "52nd" (heard "fifty second") -> "50 second"; "for"/"to" right before a time
    unit with no number ("cancel for seconds timer") -> 4/2; "4-4" is two numbers, not minus."""
    t = normalize_text(_NUMBER_DASH.sub(r"\1 ", text).replace("-", " - "))
    t = _ORDINAL_SECOND.sub(r"\g<1>0 second", t)
    t = _TENS_SUFFIX.sub(r"\g<1>0", t)
    t = _DIGIT_LETTER.sub(" ", t)
    t = _HALF.sub("half", t)
    t = _POINT_FIVE.sub(r"\1 and a half \2", t)
    t = _TENS_UNITS.sub(lambda m: str(int(m.group(1)) + int(m.group(2))), t)
    t = _TEEN_UNITS.sub(r"\1\2", t)
    t = _TENS_UNIT_WORD.sub(lambda m: str(int(m.group(1)) + _UNIT_WORDS[m.group(2)]), t)
    t = _NUMBER_HOMOPHONE.sub(lambda m: _HOMOPHONE_VALUE[m.group(1)], t)
    return t.split()


# -- sound-alike matching -------------------------------------------------------------------
_SOUND_RULES = tuple((re.compile(p), r) for p, r in (
    (r"ght", "t"), (r"ph", "f"), (r"ck", "k"), (r"sch", "sk"), (r"c(?=[eiy])", "s"),
    (r"[cqg]", "k"), (r"x", "ks"), (r"z", "s"), (r"v", "f"), (r"b", "p"), (r"d", "t"),
    (r"th", "t"), (r"j", "k"), (r"(?<=.)[aeiouyhw]", ""), (r"^[aeiouyhw]+", "a"),
    (r"(.)\1+", r"\1")))
_NOT_LETTER = re.compile(r"[^a-z]")


def squash(text: str) -> str:
    """Letters only, numbers spelled ("ground 4" -> "groundfour")."""
    return _NOT_LETTER.sub("", digits_to_words(text))


def sound_key(text: str) -> str:
    """A rough English sound key: voiced and unvoiced pairs merged (b/p, d/t, g/k, v/f, z/s),
    vowels after the first letter dropped, doubles collapsed ("desk lamp" -> "tsklmp")."""
    t = squash(text)
    for pattern, repl in _SOUND_RULES:
        t = pattern.sub(repl, t)
    return t


def similarity(span: str, phrase: str, phrase_squash: str, phrase_key: str,
               cutoff: float = 75.0) -> float:
    """0-100: how likely ``span`` (recognizer words) is ``phrase`` misheard; 0 when not.

    Both must start with the same sound. Phrases of 4+ letters: the mean of the spelling
    ratio and the sound-key ratio (letters only, so word boundaries may move) at least
    ``cutoff``, each above its own floor. Shorter phrases ("on", "off"): a one-word span
    that sounds alike and is spelled alike."""
    s = squash(span)
    if not s or not (0.5 <= len(s) / max(1, len(phrase_squash)) <= 2.0):
        return 0.0
    key = sound_key(span)
    if not key or not phrase_key or key[0] != phrase_key[0]:
        return 0.0
    spell = fuzz.ratio(s, phrase_squash)
    sound = fuzz.ratio(key, phrase_key)
    if len(phrase_squash) < 4:
        ok = " " not in span and len(phrase_key) >= 2 and sound >= 80 and spell >= 75
    else:
        ok = spell >= 60 and sound >= 75 and spell + sound >= 2 * cutoff
    return (spell + sound) / 2 if ok else 0.0


def close(cand: str, phrase: str, cutoff: float) -> bool:
    """Recognition-error match of two phrases with the same number of words: similar
    spelling overall ("ground force" ~ "ground floor", "gait" ~ "gate") and word by word
    (so "our lamps" is not "floor lamp")."""
    cand = digits_to_words(cand)                 # "ground 4" ~ "ground four" ~ "ground floor"
    if len(cand.split()) != len(phrase.split()) or fuzz.ratio(cand, phrase) < cutoff:
        return False
    return all(fuzz.ratio(a, b) >= 50 and abs(len(a) - len(b)) <= 2
               for a, b in zip(cand.split(), phrase.split(), strict=True))


# -- numbers and their context --------------------------------------------------------------
def unit(word: str) -> str:
    """A unit word in the singular ("minutes" -> "minute"); other words unchanged."""
    return word[:-1] if word in ("hours", "minutes", "seconds", "degrees", "percents") else word


def number_spans(words: list[str], used: list[bool]) -> list[tuple[int, int, float]]:
    """(start, end, value) of each number phrase outside ``used`` words."""
    masked = [w if not u else "|" for w, u in zip(words, used, strict=True)]
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


def unit_after(words: list[str], j: int, used: list[bool]) -> str:
    """The first unit word within 4 free words after position ``j``, unless another number
    in digits comes first ("4 brightness 94 percent": the percent is the 94's) ("-" if none)."""
    free = 0
    for k in range(j, len(words)):
        if used[k]:
            continue
        if unit(words[k]) in _UNITS:
            return unit(words[k])
        if words[k][:1].isdigit():
            break
        free += 1
        if free >= 4:
            break
    return "-"


def context_keys(intent: str, words: list[str], used: list[bool], i: int, j: int) -> list[tuple]:
    """Context of the number at words[i:j], most specific first."""
    prev2 = " ".join(words[max(0, i - 2):i])
    prev = words[i - 1] if i > 0 else "<s>"
    nxt = unit(words[j]) if j < len(words) else "</s>"
    nxt2 = " ".join(unit(w) for w in words[j:j + 2]) or "</s>"
    after = unit_after(words, j, used)
    cue = " ".join(sorted({w for w in words if w in _CUES})) or "-"
    return [(intent, "u", after, cue, prev), (intent, "u", after, cue), (intent, "u", after),
            (intent, prev2, nxt2), (intent, prev, nxt2), (intent, prev, nxt),
            (intent, "n", nxt2), (intent, "n", nxt), (intent, "p", prev), (intent,)]

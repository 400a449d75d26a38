"""Numbers in words and digits: "twenty five", "a hundred and two", "three point five", "3.5".

``tokenize`` splits normalized text into tokens and merges every number phrase into one
token that carries its value, so later parsers see ``[set, a, timer, for, <5.5>, minutes]``
for "set a timer for five and a half minutes".
"""
from __future__ import annotations

import re
from dataclasses import dataclass

UNITS = {"zero": 0, "oh": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
         "seven": 7, "eight": 8, "nine": 9}
TEENS = {"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
         "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fourty": 40, "fifty": 50, "sixty": 60,
        "seventy": 70, "eighty": 80, "ninety": 90}
SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
FRACTIONS = {"half": 0.5, "quarter": 0.25}
NUMBER_WORDS = (frozenset(UNITS) | frozenset(TEENS) | frozenset(TENS) | frozenset(SCALES)
                | {"hundred"})

_DIGITS = re.compile(r"^\d+(?:\.\d+)?$")
_NEGATORS = ("minus", "negative")


@dataclass(frozen=True, slots=True)
class Token:
    """One word, or one whole number phrase with its ``value`` (``None`` for words)."""

    text: str
    value: float | None = None

    @property
    def is_number(self) -> bool:
        return self.value is not None


def _word_value(word: str) -> tuple[str, float] | None:
    if word == "oh":                # only a digit inside "point oh five" style decimals
        return None
    for kind, table in (("unit", UNITS), ("teen", TEENS), ("tens", TENS)):
        if word in table:
            return kind, float(table[word])
    return None


def _parse_decimals(words: list[str], j: int) -> tuple[str, int]:
    digits = ""
    while j < len(words):
        w = words[j]
        if w in UNITS:
            digits += str(UNITS[w])
        elif w.isdigit():
            digits += w
        else:
            break
        j += 1
    return digits, j


def parse_number(words: list[str], i: int) -> tuple[float, int] | None:
    """Parse the number phrase starting at ``words[i]``; return (value, index after it)."""
    n = len(words)
    total, current, last, j = 0.0, 0.0, None, i
    if words[i] in ("a", "an") and i + 1 < n and \
            (words[i + 1] == "hundred" or words[i + 1] in SCALES):
        current, last, j = 1.0, "unit", i + 1
    while j < n:
        w = words[j]
        wv = _word_value(w)
        if _DIGITS.match(w):
            if last is not None:
                break
            current, last = float(w), "digits"
        elif wv is not None:
            kind, v = wv
            if last in ("unit", "teen", "digits") or (last == "tens" and kind != "unit"):
                break
            current, last = current + v, kind
        elif w == "hundred":
            if last in ("hundred", "scale"):
                break
            current, last = (current or 1.0) * 100.0, "hundred"
        elif w in SCALES:
            if last is None:
                break
            total, current, last = total + (current or 1.0) * SCALES[w], 0.0, "scale"
        elif (w == "and" and last in ("hundred", "scale") and j + 1 < n
              and _word_value(words[j + 1]) is not None):
            j += 1
            continue
        elif w == "point" and last is not None and j + 1 < n:
            digits, k = _parse_decimals(words, j + 1)
            if digits:
                current += float("0." + digits)
                j = k
            break
        else:
            break
        j += 1
    if last is None:
        return None
    value = total + current
    if words[j:j + 3] in (["and", "a", "half"], ["and", "a", "quarter"]):
        value += FRACTIONS[words[j + 2]]
        j += 3
    return value, j


def tokenize(normalized: str) -> list[Token]:
    """Split normalized text into tokens, merging number phrases (and negatives) into one."""
    words = normalized.split()
    out: list[Token] = []
    i = 0
    while i < len(words):
        w = words[i]
        neg = (w in _NEGATORS and i + 1 < len(words)
               and (w == "negative" or not out or not out[-1].is_number))
        start = i + 1 if neg else i
        parsed = parse_number(words, start) if start < len(words) else None
        if parsed is not None:
            value, j = parsed
            out.append(Token(" ".join(words[i:j]), -value if neg else value))
            i = j
        else:
            out.append(Token(w))
            i += 1
    return out


def format_number(value: float, digits: int = 2) -> str:
    """Render a number for speech: integers without ".0", others rounded to ``digits`` places."""
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    rounded = round(value, digits)
    if float(rounded).is_integer():
        return str(int(rounded))
    return f"{rounded:.{digits}f}".rstrip("0").rstrip(".")


_SPELL_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
               "fourteen fifteen sixteen seventeen eighteen nineteen").split()
_SPELL_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def number_to_words(n: int) -> str:
    """English words for 0 <= n < 10**12 ("125" -> "one hundred twenty five")."""
    if n < 20:
        return _SPELL_ONES[n]
    if n < 100:
        return _SPELL_TENS[n // 10] + ("" if n % 10 == 0 else " " + _SPELL_ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return (_SPELL_ONES[n // 100] + " hundred"
                + ("" if rest == 0 else " " + number_to_words(rest)))
    for scale, word in ((10**9, "billion"), (10**6, "million"), (1000, "thousand")):
        if n >= scale:
            rest = n % scale
            return (number_to_words(n // scale) + " " + word
                    + ("" if rest == 0 else " " + number_to_words(rest)))
    raise ValueError(n)


_NUMBERS_IN_TEXT = re.compile(r"\d+(?:\.\d+)?")


def digits_to_words(text: str) -> str:
    """Spell every number in ``text`` ("3.5" -> "three point five"); huge numbers stay digits."""
    def spell(match: re.Match[str]) -> str:
        whole, _, frac = match.group(0).partition(".")
        if len(whole) > 12:
            return match.group(0)
        words = number_to_words(int(whole))
        if frac:
            words += " point " + " ".join(number_to_words(int(d)) for d in frac)
        return words
    return _NUMBERS_IN_TEXT.sub(spell, text)

"""Text normalization shared by the classifier, the entity extractor and the answer cache.

``normalize_text`` turns typed text and speech-recognition output into one spoken-style
form: lower case, Unicode NFKC, apostrophes joined ("what's" -> "whats"), math symbols
between numbers spelled as words ("2+2" -> "2 plus 2", "15%" -> "15 percent"), all other
punctuation, symbols and emoji removed, whitespace collapsed. A decimal point or a colon
between two digits is kept ("3.5", "7:30") so numbers and clock times survive, and digit
group commas are dropped ("1,000" -> "1000"); dates such as "12/03/2019" become three
numbers rather than a division.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_APOSTROPHES = re.compile(r"['\u2019\u2018`\u02bc]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_SUBSTITUTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(\d{1,4})[/.-](\d{1,2})[/.-](\d{1,4})\b"), r"\1 \2 \3"),   # dates, not math
    (re.compile(r"%"), " percent "),
    (re.compile(r"\u00b0"), " degrees "),
    (re.compile(r"\+"), " plus "),
    (re.compile(r"[\u00d7*]"), " times "),
    (re.compile(r"\u00f7"), " divided by "),
    (re.compile(r"(?<=\d)\s*/\s*(?=[\d.])"), " divided by "),
    (re.compile(r"(?<=[a-z])/(?=[a-z])"), " per "),
    (re.compile(r"\^"), " to the power of "),
    (re.compile(r"(?<=\d)\s*[-\u2212]\s*(?=\d)"), " minus "),
    (re.compile(r"(?:^|(?<=\s))[-\u2212](?=\d)"), "minus "),
    (re.compile(r"(?<=\d)\s*=\s*$"), " "),
)
_NOT_WORD = re.compile(r"[^\w\s.:]|_")
_STRAY_DOT = re.compile(r"(?<!\d)[.:]|[.:](?!\d)")
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=1024)      # a parse normalizes the same clauses several times
def normalize_text(text: str) -> str:
    """Return the normalized, spoken-style form of ``text`` (may be ``""`` for
    emoji/punctuation)."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = _APOSTROPHES.sub("", t)
    t = _THOUSANDS.sub("", t)
    for pattern, repl in _SUBSTITUTIONS:
        t = pattern.sub(repl, t)
    t = _NOT_WORD.sub(" ", t)
    t = _STRAY_DOT.sub(" ", t)
    return _SPACES.sub(" ", t).strip()


def has_letters(text: str) -> bool:
    """True when ``text`` contains at least one alphabetic character (any script)."""
    return any(ch.isalpha() for ch in text)

"""Durations, clock times and dates from tokenized text (see ``numbers.tokenize``).

Values are symbolic and clock-free, so a parse never depends on when it ran:
durations are ``{"hours", "minutes", "seconds"}`` (zero parts omitted), times are
``{"hour", "minute", "ambiguous"}`` (24-hour when am/pm is known), dates are
``{"relative_days": n}``, ``{"weekday": 0..6, "which": "this"|"next"|"last"}`` or
``{"month": 1..12, "day": 1..31[, "year": y]}``. Skills resolve them against their clock.
"""
from __future__ import annotations

import re
from typing import Any

from .numbers import Token

DURATION_UNITS = {"h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
                  "min": 60, "mins": 60, "minute": 60, "minutes": 60,
                  "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
                  "day": 86400, "days": 86400}
MONTHS = {name: i + 1 for i, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"))}
MONTHS.update({"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8,
               "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12})
WEEKDAYS = {name: i for i, name in enumerate(
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))}
ORDINALS = {w: i + 1 for i, w in enumerate(
    ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
     "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
     "eighteenth", "nineteenth", "twentieth"))}
ORDINALS["thirtieth"] = 30
_ORD_DIGITS = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)$")
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})$")
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_RELATIVE = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1}
_MERIDIEM = (  # (words, "am"/"pm")
    (("am",), "am"), (("a", "m"), "am"), (("pm",), "pm"), (("p", "m"), "pm"),
    (("in", "the", "morning"), "am"), (("in", "the", "afternoon"), "pm"),
    (("in", "the", "evening"), "pm"), (("at", "night"), "pm"), (("tonight",), "pm"),
)
_PAST = ("past", "after")
_TO = ("to", "till", "til", "before")


def _texts(tokens: list[Token]) -> list[str]:
    return [t.text for t in tokens]


def split_seconds(total: float) -> dict[str, float | int]:
    """Split seconds into ``{"hours", "minutes", "seconds"}`` with zero parts left out."""
    total = round(total, 3)
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    out: dict[str, float | int] = {}
    for key, val in (("hours", hours), ("minutes", minutes), ("seconds", seconds)):
        if val:
            out[key] = int(val) if float(val).is_integer() else round(val, 3)
    return out


def duration_seconds(duration: dict[str, Any]) -> float:
    """Total seconds of a duration slot."""
    return (float(duration.get("hours", 0)) * 3600 + float(duration.get("minutes", 0)) * 60
            + float(duration.get("seconds", 0)))


def _amount(tokens: list[Token], i: int) -> tuple[float, int] | None:
    t = tokens[i]
    if t.value is not None:
        return t.value, i + 1
    if t.text in ("a", "an"):
        if i + 1 < len(tokens) and tokens[i + 1].text in ("half", "quarter"):
            return _amount(tokens, i + 1)
        return 1.0, i + 1
    if t.text in ("half", "quarter"):
        j = i + 1
        if j < len(tokens) and tokens[j].text == "of":
            j += 1
        if j < len(tokens) and tokens[j].text in ("a", "an"):
            j += 1
        return (0.5 if t.text == "half" else 0.25), j
    return None


def extract_duration(tokens: list[Token]) -> float | None:
    """Total seconds of every "<amount> <unit>" in ``tokens``; ``None`` when there is none."""
    total, found, i, n = 0.0, False, 0, len(tokens)
    while i < n:
        amount = _amount(tokens, i)
        if amount is None or amount[1] >= n or tokens[amount[1]].text not in DURATION_UNITS:
            i += 1
            continue
        value, j = amount
        unit = DURATION_UNITS[tokens[j].text]
        total += value * unit
        found = True
        j += 1
        if _texts(tokens[j:j + 3]) == ["and", "a", "half"]:
            total += 0.5 * unit
            j += 3
        elif (unit in (3600, 60) and j < n and (v := tokens[j].value) is not None and 0 < v < 60
              and (j + 1 == n or (tokens[j + 1].text not in DURATION_UNITS
                                  and not tokens[j + 1].is_number))):
            total += v * unit / 60  # "an hour twenty", "5 min 30"
            j += 1
        i = j
    return total if found else None


def _meridiem(tokens: list[Token], j: int) -> tuple[str | None, int]:
    texts = _texts(tokens[j:j + 3])
    for words, mer in _MERIDIEM:
        if tuple(texts[:len(words)]) == words:
            return mer, j + len(words)
    return None, j


def _clock_value(hour: int, minute: int, mer: str | None) -> dict[str, Any] | None:
    if not (0 <= hour <= 23 and 0 <= minute <= 59):
        return None
    if mer is not None and 1 <= hour <= 12:
        hour = hour % 12 + (12 if mer == "pm" else 0)
    ambiguous = mer is None and 1 <= hour <= 12
    return {"hour": hour, "minute": minute, "ambiguous": ambiguous}


def _int_value(tok: Token, lo: int, hi: int) -> int | None:
    v = tok.value
    if v is not None and float(v).is_integer() and lo <= v <= hi:
        return int(v)
    return None


def extract_time(tokens: list[Token]) -> dict[str, Any] | None:
    """The first clock time: "7:30 pm", "seven thirty pm", "half past seven", "noon" …"""
    n = len(tokens)
    for i, tok in enumerate(tokens):
        text = tok.text
        if text in ("noon", "midday"):
            return {"hour": 12, "minute": 0, "ambiguous": False}
        if text == "midnight":
            return {"hour": 0, "minute": 0, "ambiguous": False}
        m = _CLOCK.match(text)
        if m:
            mer, _ = _meridiem(tokens, i + 1)
            return _clock_value(int(m.group(1)), int(m.group(2)), mer)
        minutes = {"half": 30, "quarter": 15}.get(text)
        if minutes is None:
            minutes = _int_value(tok, 1, 59)
        if minutes is not None:
            k = i + 2 if i + 1 < n and tokens[i + 1].text == "minutes" else i + 1
            hour = (_int_value(tokens[k + 1], 1, 12)
                    if k + 1 < n and tokens[k].text in _PAST + _TO else None)
            if hour is not None:
                if tokens[k].text in _TO:
                    hour, minutes = (hour - 2) % 12 + 1, 60 - minutes
                mer, _ = _meridiem(tokens, k + 2)
                return _clock_value(hour, minutes, mer)
        hour = _int_value(tok, 0, 23)
        if hour is None:
            continue
        j = i + 1
        minute = 0
        if j < n and tokens[j].text == "oh" and j + 1 < n and \
                (oh_minute := _int_value(tokens[j + 1], 0, 9)) is not None:
            minute, j = oh_minute, j + 2
        elif j < n and (next_minute := _int_value(tokens[j], 0, 59)) is not None:
            minute, j = next_minute, j + 1
        if _texts(tokens[j:j + 2]) == ["o", "clock"] or (j < n and tokens[j].text == "oclock"):
            return _clock_value(hour, minute, None)
        mer, _ = _meridiem(tokens, j)
        if mer is not None:
            return _clock_value(hour, minute, mer)
        if j > i + 1 and i > 0 and tokens[i - 1].text in ("at", "until", "till"):
            return _clock_value(hour, minute, None)
    return None


def _ordinal(tokens: list[Token], i: int) -> tuple[int, int] | None:
    if i >= len(tokens):
        return None
    tok = tokens[i]
    m = _ORD_DIGITS.match(tok.text)
    if m:
        return int(m.group(1)), i + 1
    if tok.text in ORDINALS:
        return ORDINALS[tok.text], i + 1
    if tok.value in (20.0, 30.0) and i + 1 < len(tokens) and tokens[i + 1].text in ORDINALS \
            and ORDINALS[tokens[i + 1].text] <= 9:
        return int(tok.value) + ORDINALS[tokens[i + 1].text], i + 2
    day = _int_value(tok, 1, 31)
    return (day, i + 1) if day is not None else None


def _year(tokens: list[Token], j: int) -> int | None:
    if j < len(tokens):
        year = _int_value(tokens[j], 1900, 2200)
        if year is not None:
            return year
        century = _int_value(tokens[j], 19, 21)
        if century is not None and j + 1 < len(tokens):
            rest = _int_value(tokens[j + 1], 10, 99)
            if rest is not None:
                return century * 100 + rest
    return None


def _month_day(month: int, day: int, year: int | None) -> dict[str, Any] | None:
    if not 1 <= day <= _DAYS_IN_MONTH[month - 1]:
        return None
    out: dict[str, Any] = {"month": month, "day": day}
    if year is not None:
        out["year"] = year
    return out


def extract_date(tokens: list[Token]) -> dict[str, Any] | None:
    """The first date: "tomorrow", "next friday", "march 3rd", "the 3rd of march", "in 3 days"."""
    texts = _texts(tokens)
    n = len(tokens)
    for i, text in enumerate(texts):
        if texts[i:i + 3] == ["day", "after", "tomorrow"]:
            return {"relative_days": 2}
        if texts[i:i + 3] == ["day", "before", "yesterday"]:
            return {"relative_days": -2}
        if text in _RELATIVE and not (i > 0 and texts[i - 1] in ("after", "before")):
            return {"relative_days": _RELATIVE[text]}
        if text == "in" and i + 2 < n and (days := tokens[i + 1].value) is not None and \
                texts[i + 2] in ("day", "days"):
            return {"relative_days": int(days)}
        if text in WEEKDAYS:
            which = texts[i - 1] if i > 0 and texts[i - 1] in ("this", "next", "last") else "this"
            return {"weekday": WEEKDAYS[text], "which": which}
        if text in MONTHS and (text != "may" or (i + 1 < n and _ordinal(tokens, i + 1))):
            j = i + 1 + (1 if i + 1 < n and texts[i + 1] == "the" else 0)
            od = _ordinal(tokens, j)
            if od is not None:
                return _month_day(MONTHS[text], od[0], _year(tokens, od[1]))
        od = _ordinal(tokens, i)
        if od is not None:
            j = od[1] + (1 if od[1] < n and texts[od[1]] == "of" else 0)
            if j < n and texts[j] in MONTHS:
                return _month_day(MONTHS[texts[j]], od[0], _year(tokens, j + 1))
    return None

"""Small helpers that turn values into words for spoken answers."""
from __future__ import annotations

import math

from ..nlu.numbers import format_number


def join_words(items: list[str], conjunction: str = "and") -> str:
    """``["a", "b", "c"]`` -> ``"a, b and c"``."""
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def plural(value: float, word: str, many: str | None = None) -> str:
    """``plural(1, "minute")`` -> ``"1 minute"``; ``plural(2.5, "minute")`` -> ``"2.5 minutes"``."""
    return f"{format_number(value)} {word if value == 1 else (many or word + 's')}"


def say_duration(seconds: float) -> str:
    """Seconds as words, largest units first: 330 -> "5 minutes and 30 seconds".

    Whole seconds (rounded up, so a running timer never says 0 while time remains);
    below 1 second it says "less than a second"."""
    if seconds <= 0:
        return "0 seconds"
    if seconds < 1:
        return "less than a second"
    total = int(math.ceil(seconds - 1e-9))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [plural(v, w) for v, w in ((hours, "hour"), (minutes, "minute"), (secs, "second")) if v]
    return join_words(parts)


def round_for_speech(value: float) -> str:
    """A result worth saying: 2 decimals from 1 up, 3 significant digits below 1, 1 decimal
    from 1000 up; integers stay whole; from 10^15 "1.27 times 10 to the power of 30";
    negative numbers start with "minus"."""
    if value < 0:
        return "minus " + round_for_speech(-value)
    magnitude = abs(value)
    if magnitude >= 1e15:
        exponent = int(math.floor(math.log10(magnitude)))
        return f"{format_number(magnitude / 10 ** exponent, 2)} times 10 to the power of {exponent}"
    if float(value).is_integer() or magnitude >= 1000:
        return format_number(value, 1)
    if magnitude >= 1:
        return format_number(value, 2)
    if magnitude == 0:
        return "0"
    digits = 2 - int(math.floor(math.log10(magnitude)))
    return format_number(value, min(digits, 10))


def is_approximate(value: float) -> bool:
    """True when ``round_for_speech(value)`` is not exactly ``value`` (say "about")."""
    text = round_for_speech(value).replace("minus ", "-")
    try:
        return abs(float(text) - value) > 1e-9 * max(1.0, abs(value))
    except ValueError:
        return True


def sentence(text: str) -> str:
    """Upper-case the first letter ("minus 40 ..." -> "Minus 40 ...")."""
    return text[:1].upper() + text[1:]

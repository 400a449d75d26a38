"""normalize_text and number tokenization."""
from __future__ import annotations

import pytest

from edge_runtime.nlu import normalize_text
from edge_runtime.nlu.numbers import format_number, tokenize


@pytest.mark.parametrize("raw, expected", [
    ("What's the TIME?", "whats the time"),
    ("  lots   of\tspace \n", "lots of space"),
    ("Ｆｕｌｌｗｉｄｔｈ", "fullwidth"),                       # NFKC
    ("2+2=", "2 plus 2"),
    ("12×7", "12 times 7"),
    ("15% of 80", "15 percent of 80"),
    ("10 - 3", "10 minus 3"),
    ("-40°C", "minus 40 degrees c"),
    ("km/h", "km per h"),
    ("3.5 kg, please.", "3.5 kg please"),
    ("7:30 p.m.", "7:30 p m"),
    ("1,000,000", "1000000"),
    ("on 12/03/2019", "on 12 03 2019"),
    ("\U0001F600\U0001F600", ""),
    ("?!...", ""),
])
def test_normalize_text(raw: str, expected: str) -> None:
    assert normalize_text(raw) == expected


def test_normalize_text_keeps_distinct_numbers_distinct() -> None:
    assert normalize_text("what is 3.5 times 2") != normalize_text("what is 35 times 2")


@pytest.mark.parametrize("text, values", [
    ("twenty five", [25]),
    ("a hundred and two", [102]),
    ("one thousand two hundred and thirty four", [1234]),
    ("three point one four", [3.14]),
    ("3.5", [3.5]),
    ("five and a half", [5.5]),
    ("five five", [5, 5]),                # two numbers, not 10 or 55
    ("twenty twenty", [20, 20]),
    ("2 hundred", [200]),
    ("a million", [1e6]),
    ("minus five plus 3", [-5, 3]),
    ("10 minus 3", [10, 3]),              # minus after a number is an operator
    ("negative four", [-4]),
    ("set a timer", []),                  # "a" alone is not a number
])
def test_tokenize_numbers(text: str, values: list[float]) -> None:
    assert [t.value for t in tokenize(text) if t.is_number] == pytest.approx(values)


def test_tokenize_keeps_words_in_order() -> None:
    assert [t.text for t in tokenize("set a timer for twenty five minutes")] == \
        ["set", "a", "timer", "for", "twenty five", "minutes"]


@pytest.mark.parametrize("value, text", [(84.0, "84"), (3.14159, "3.14"), (-2.5, "-2.5"), (0.004, "0")])
def test_format_number(value: float, text: str) -> None:
    assert format_number(value) == text

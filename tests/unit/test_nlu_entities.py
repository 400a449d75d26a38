"""Entity parsers on tricky inputs: durations, times, dates, units, arithmetic, lists."""
from __future__ import annotations

from typing import Any

import pytest

from edge_runtime.config import NluConfig
from edge_runtime.nlu import normalize_text
from edge_runtime.nlu.entities import Extractor
from edge_runtime.nlu.expression import MathError, evaluate, extract_expression, parse, speak
from edge_runtime.nlu.lists import ListConfigError, ListMatcher
from edge_runtime.nlu.numbers import tokenize
from edge_runtime.nlu.timeparse import extract_date, extract_duration, extract_time, split_seconds
from edge_runtime.nlu.units import convert, extract_conversion, extract_temperature


def toks(text: str):
    return tokenize(normalize_text(text))


@pytest.mark.parametrize("text, parts", [
    ("set a timer for five and a half minutes", {"minutes": 5, "seconds": 30}),
    ("timer 5 min 30 s", {"minutes": 5, "seconds": 30}),
    ("in an hour", {"hours": 1}),
    ("half an hour", {"minutes": 30}),
    ("an hour and a half", {"hours": 1, "minutes": 30}),
    ("a minute and a half", {"minutes": 1, "seconds": 30}),
    ("1 hour 20", {"hours": 1, "minutes": 20}),
    ("two hours and ten minutes", {"hours": 2, "minutes": 10}),
    ("90 seconds", {"minutes": 1, "seconds": 30}),
    ("a quarter of an hour", {"minutes": 15}),
    ("twenty five minutes", {"minutes": 25}),
])
def test_durations(text: str, parts: dict[str, int]) -> None:
    seconds = extract_duration(toks(text))
    assert seconds is not None and split_seconds(seconds) == parts


@pytest.mark.parametrize("text", ["set a timer for five", "what time is it", "the second timer"])
def test_no_duration(text: str) -> None:
    assert extract_duration(toks(text)) is None


@pytest.mark.parametrize("text, hour, minute, ambiguous", [
    ("wake me at 7:30 pm", 19, 30, False),
    ("seven thirty p.m.", 19, 30, False),
    ("half past seven", 7, 30, True),
    ("quarter to eight", 7, 45, True),
    ("ten past six in the morning", 6, 10, False),
    ("twelve am", 0, 0, False),
    ("noon", 12, 0, False),
    ("midnight", 0, 0, False),
    ("19:45", 19, 45, False),
    ("9 pm tonight", 21, 0, False),
    ("at seven oh five", 7, 5, True),
])
def test_times(text: str, hour: int, minute: int, ambiguous: bool) -> None:
    assert extract_time(toks(text)) == {"hour": hour, "minute": minute, "ambiguous": ambiguous}


@pytest.mark.parametrize("text", ["set a timer for 5 minutes", "what is 12 times 7", "25:99"])
def test_no_time(text: str) -> None:
    assert extract_time(toks(text)) is None


@pytest.mark.parametrize("text, date", [
    ("tomorrow", {"relative_days": 1}),
    ("the day after tomorrow", {"relative_days": 2}),
    ("yesterday", {"relative_days": -1}),
    ("in 3 days", {"relative_days": 3}),
    ("march 3rd", {"month": 3, "day": 3}),
    ("march third 2027", {"month": 3, "day": 3, "year": 2027}),
    ("the 21st of june", {"month": 6, "day": 21}),
    ("twenty first of june", {"month": 6, "day": 21}),
    ("the third of july twenty twenty seven", {"month": 7, "day": 3, "year": 2027}),
    ("next friday", {"weekday": 4, "which": "next"}),
    ("last monday", {"weekday": 0, "which": "last"}),
])
def test_dates(text: str, date: dict[str, Any]) -> None:
    assert extract_date(toks(text)) == date


@pytest.mark.parametrize("text", ["may i ask you something", "february 30th", "what is the date"])
def test_no_date(text: str) -> None:
    assert extract_date(toks(text)) is None


@pytest.mark.parametrize("text, value, src, dst, result", [
    ("convert 5 km to miles", 5, "kilometer", "mile", 3.10686),
    ("how many feet in a mile", 1, "mile", "foot", 5280),
    ("what is 20 c in f", 20, "celsius", "fahrenheit", 68),
    ("-40°C to °F", -40, "celsius", "fahrenheit", -40),
    ("what is 98.6 f in c", 98.6, "fahrenheit", "celsius", 37),
    ("what is 25 degrees in fahrenheit", 25, "celsius", "fahrenheit", 77),
    ("how many seconds are in an hour", 1, "hour", "second", 3600),
    ("ten pounds in kilos", 10, "pound", "kilogram", 4.53592),
    ("convert 3.5 liters to gallons", 3.5, "liter", "gallon", 0.92460),
    ("100 km/h in mph", 100, "kilometer_per_hour", "mile_per_hour", 62.1371),
    ("convert 12 fluid ounces to milliliters", 12, "fluid_ounce", "milliliter", 354.882),
    ("how many tablespoons in a cup", 1, "cup", "tablespoon", 16),
    ("what is 300 kelvin in celsius", 300, "kelvin", "celsius", 26.85),
])
def test_conversions(text: str, value: float, src: str, dst: str, result: float) -> None:
    conv = extract_conversion(toks(text))
    assert conv is not None
    assert (conv["value"], conv["from_unit"], conv["to_unit"]) == (pytest.approx(value), src, dst)
    assert convert(conv["value"], src, dst) == pytest.approx(result, rel=1e-4)


def test_conversion_without_value_or_target() -> None:
    assert extract_conversion(toks("convert miles to kilometers"))["value"] is None
    assert extract_conversion(toks("convert 5 kilometers"))["to_unit"] is None
    assert extract_conversion(toks("how many calories are in an apple")) is None
    assert extract_conversion(toks("meet me in the office")) is None     # "m", "in" are not units here


def test_temperature_and_percent() -> None:
    ext = Extractor({})
    assert extract_temperature(toks("set it to 21 degrees")) == {"value": 21, "unit": None}
    assert extract_temperature(toks("it is minus 5 degrees celsius")) == {"value": -5, "unit": "celsius"}
    assert ext.extract(normalize_text("a 15% tip"))["percent"] == 15
    assert ext.extract(normalize_text("twenty five percent off"))["percent"] == 25


@pytest.mark.parametrize("text, expression, value", [
    ("what is 12 times 7", "12 * 7", 84),
    ("twenty divided by four", "20 / 4", 5),
    ("square root of 81", "sqrt 81", 9),
    ("what is the square root of eighty one", "sqrt 81", 9),
    ("whats 15% of 80", "15 % * 80", 12),
    ("2+2*3", "2 + 2 * 3", 8),
    ("add 5 and 3", "( 5 + 3 )", 8),
    ("subtract 4 from 10", "( 10 - 4 )", 6),
    ("multiply six by seven", "( 6 * 7 )", 42),
    ("5 squared", "5 ^ 2", 25),
    ("2 to the power of 10", "2 ^ 10", 1024),
    ("what is a hundred and five divided by five", "105 / 5", 21),
    ("what is minus 5 plus 3", "( -5 ) + 3", -2),
    ("what is 3.5 x 2", "3.5 * 2", 7),
])
def test_expressions(text: str, expression: str, value: float) -> None:
    found = extract_expression(toks(text))
    assert found == expression
    assert evaluate(parse(found)) == pytest.approx(value)


@pytest.mark.parametrize("text", ["what is 12", "what time is it", "what is five plus", "plus times"])
def test_no_expression(text: str) -> None:
    assert extract_expression(toks(text)) is None


@pytest.mark.parametrize("expression, kind", [
    ("10 / 0", "division_by_zero"), ("sqrt ( -4 )", "negative_sqrt"), ("9 ^ 999", "too_large"),
    ("0 ^ ( -1 )", "division_by_zero"), ("( -8 ) ^ 0.5", "undefined"),
])
def test_math_errors(expression: str, kind: str) -> None:
    with pytest.raises(MathError) as err:
        evaluate(parse(expression))
    assert err.value.kind == kind


def test_parser_rejects_code_and_speaks_ast() -> None:
    for bad in ("__import__('os')", "1 +", "2 ** 3 )", "x"):
        with pytest.raises(ValueError):
            parse(bad)
    assert speak(parse("15 % * 80")) == "15 percent of 80"
    assert speak(parse("sqrt 81")) == "the square root of 81"


LISTS = NluConfig().lists


@pytest.mark.parametrize("text, found", [
    ("turn on the kitchn lights", {"area": "kitchen", "device": "lights"}),
    ("switch off the living rom lamp", {"area": "living room", "device": "lamp"}),
    ("turn off the bed room fan", {"area": "bedroom", "device": "fan"}),
    ("turn on the livingroom lamps", {"area": "living room", "device": "lamp"}),
    ("turn on the tv", {"device": "tv"}),
    ("hallway light please", {"area": "hallway", "device": "lights"}),
    ("speak up", {}),                      # "speak" is not close enough to "speaker"
    ("what time is it", {}),
    ("can you turn the fan off", {"device": "fan"}),
])
def test_list_matching_tolerates_recognition_errors(text: str, found: dict[str, str]) -> None:
    assert ListMatcher(LISTS).match(normalize_text(text)) == found


def test_list_short_values_need_exact_match() -> None:
    matcher = ListMatcher({"device": ("tv", "fan")})
    assert matcher.match("turn on the tc") == {}
    assert matcher.match("turn on the can") == {}


def test_list_config_must_be_strings() -> None:
    with pytest.raises(ListConfigError, match="nlu.lists.area"):
        ListMatcher({"area": "kitchen"})   # type: ignore[dict-item]


@pytest.mark.parametrize("text, name", [
    ("set a pasta timer for 8 minutes", "pasta"),
    ("set a timer called eggs for six minutes", "eggs"),
    ("cancel the timer for the laundry", "laundry"),
    ("set a 5 minute timer", None),
    ("cancel the second timer", None),
    ("set a timer for 5 minutes", None),
])
def test_timer_names(text: str, name: str | None) -> None:
    assert Extractor(LISTS).extract(normalize_text(text)).get("timer_name") == name


def test_extract_only_wanted_slots() -> None:
    ext = Extractor(LISTS)
    text = normalize_text("turn on the kitchen lights for 5 minutes")
    assert set(ext.extract_tokens(text, tokenize(text), ("area",))) == {"area"}
    assert {"area", "device", "duration", "duration_s", "numbers"} <= set(ext.extract(text))

"""Time/date, arithmetic, unit conversion, conversation and device skills, plus the registry."""
from __future__ import annotations

import datetime as dt

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.config import NluConfig, SkillsConfig
from edge_runtime.errors import BadInputError, ConfigError
from edge_runtime.nlu import Understander
from edge_runtime.skills import SkillConfigError, SkillInputError, SkillRegistry
from edge_runtime.types import Intent

# 2026-03-10 14:05:30 UTC, a Tuesday
T0 = dt.datetime(2026, 3, 10, 14, 5, 30, tzinfo=dt.timezone.utc).timestamp()


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock(start=T0)


@pytest.fixture()
def skills(clock: FakeClock) -> SkillRegistry:
    return SkillRegistry.from_config(SkillsConfig(timezone="UTC", max_timers=4), clock)


@pytest.fixture(scope="module")
def nlu() -> Understander:
    return Understander.from_config(NluConfig())


def answer(nlu: Understander, skills: SkillRegistry, text: str) -> str:
    intent = nlu.parse(text)
    skill = skills.get(nlu.intents.spec(intent.name).skill or "")
    assert skill is not None, (text, intent)
    return skill.handle(intent, text)


def test_acceptance_what_time_is_it(nlu: Understander, skills: SkillRegistry, clock: FakeClock) -> None:
    assert answer(nlu, skills, "what time is it") == "It's 2:05 PM."
    clock.advance(8 * 3600)
    assert answer(nlu, skills, "what time is it") == "It's 10:05 PM."


def test_time_follows_configured_zone(clock: FakeClock) -> None:
    skills = SkillRegistry.from_config(SkillsConfig(timezone="Asia/Tokyo"), clock)
    assert skills.get("time").handle(Intent("get_time", 1.0), "what time is it") == "It's 11:05 PM."


def test_time_in_a_named_city(skills: SkillRegistry) -> None:
    time = skills.get("time")
    assert time.handle(Intent("get_time", 1.0), "what time is it in new york right now") == \
        "In New York it's 10:05 AM."
    assert time.handle(Intent("get_time", 1.0), "what time is it in here") == "It's 2:05 PM."
    with pytest.raises(SkillInputError, match="time zone of atlantis"):
        time.handle(Intent("get_time", 1.0), "what time is it in atlantis")


def test_bad_timezone_is_a_config_error(clock: FakeClock) -> None:
    with pytest.raises(SkillConfigError) as err:
        SkillRegistry.from_config(SkillsConfig(timezone="Mars/Olympus"), clock)
    assert "skills.timezone" in err.value.message and isinstance(err.value, ConfigError)


@pytest.mark.parametrize("text, expected", [
    ("what is the date today", "Today is Tuesday, March 10, 2026."),
    ("what day is tomorrow", "Tomorrow is Wednesday, March 11, 2026."),
    ("what day was yesterday", "Yesterday was Monday, March 9, 2026."),
    ("what day is march 3rd", "March 3, 2027 is a Wednesday."),         # already past this year
    ("what day of the week is the twenty first of june", "June 21, 2026 is a Sunday."),
    ("what is the date next friday", "Next Friday is March 13."),
    ("what day is february 29th", "February 29, 2028 is a Tuesday."),    # next leap year
    ("what year is it", "It's 2026."),
])
def test_dates(nlu: Understander, skills: SkillRegistry, text: str, expected: str) -> None:
    assert answer(nlu, skills, text) == expected


@pytest.mark.parametrize("text, expected", [
    ("what is 12 times 7", "12 times 7 is 84."),
    ("twenty divided by four", "20 divided by 4 is 5."),
    ("what is the square root of 81", "The square root of 81 is 9."),
    ("whats 15 percent of 80", "15 percent of 80 is 12."),
    ("what is 1 divided by 3", "1 divided by 3 is about 0.333."),
    ("what is 10 minus 25", "10 minus 25 is minus 15."),
    ("what is 2 to the power of 100", "2 to the power of 100 is about 1.27 times 10 to the power of 30."),
])
def test_arithmetic(nlu: Understander, skills: SkillRegistry, text: str, expected: str) -> None:
    assert answer(nlu, skills, text) == expected


def test_arithmetic_explains_impossible_results(skills: SkillRegistry) -> None:
    arithmetic = skills.get("arithmetic")
    zero = arithmetic.handle(Intent("arithmetic", 1.0, {"expression": "10 / 0"}), "")
    assert zero.startswith("10 divided by 0 has no answer") and "zero" in zero
    assert "not a real number" in arithmetic.handle(Intent("arithmetic", 1.0, {"expression": "sqrt ( -4 )"}), "")
    with pytest.raises(BadInputError, match="calculation"):
        arithmetic.handle(Intent("arithmetic", 1.0, {}), "")
    with pytest.raises(BadInputError):
        arithmetic.handle(Intent("arithmetic", 1.0, {"expression": "__import__('os')"}), "")


@pytest.mark.parametrize("text, expected", [
    ("convert 5 km to miles", "5 kilometers is about 3.11 miles."),
    ("how many feet are in a mile", "1 mile is 5280 feet."),
    ("what is 20 degrees celsius in fahrenheit", "20 degrees Celsius is 68 degrees Fahrenheit."),
    ("minus forty celsius in fahrenheit", "Minus 40 degrees Celsius is minus 40 degrees Fahrenheit."),
    ("convert ten pounds to kilograms", "10 pounds is about 4.54 kilograms."),
    ("how many liters are in a gallon", "1 gallon is about 3.79 liters."),
    ("convert 60 miles per hour to kilometers per hour", "60 miles per hour is about 96.56 kilometers per hour."),
    ("how many seconds are in an hour", "1 hour is 3600 seconds."),
])
def test_unit_conversion(nlu: Understander, skills: SkillRegistry, text: str, expected: str) -> None:
    assert answer(nlu, skills, text) == expected


@pytest.mark.parametrize("conversion, needle", [
    ({"value": None, "from_unit": "mile", "to_unit": "kilometer"}, "How many miles"),
    ({"value": 5.0, "from_unit": "kilometer", "to_unit": None}, "What should I convert kilometers to"),
    ({"value": 5.0, "from_unit": "kilogram", "to_unit": "kilometer"}, "can't convert mass to length"),
    ({"value": 5.0, "from_unit": "parsec", "to_unit": "mile"}, "what to convert"),
])
def test_unit_conversion_clarifies(skills: SkillRegistry, conversion: dict, needle: str) -> None:
    with pytest.raises(BadInputError, match=needle):
        skills.get("unit_convert").handle(Intent("unit_convert", 1.0, {"conversion": conversion}), "")


def test_conversation(nlu: Understander, skills: SkillRegistry, clock: FakeClock) -> None:
    assert answer(nlu, skills, "hello") == "Good afternoon! How can I help?"
    clock.advance(20 * 3600)                              # 10:05 next morning
    assert answer(nlu, skills, "hi there") == "Good morning! How can I help?"
    assert answer(nlu, skills, "how are you") == "I'm doing well, thanks for asking. How can I help?"
    assert answer(nlu, skills, "good night") == "Good night!"
    assert answer(nlu, skills, "see you later") == "Goodbye! Talk to you soon."
    assert answer(nlu, skills, "thank you so much") == "You're welcome!"
    assert answer(nlu, skills, "stop") == "Okay."
    help_text = answer(nlu, skills, "what can you do")
    for thing in ("time and date", "timers", "arithmetic", "convert units", "devices"):
        assert thing in help_text


def test_devices(nlu: Understander, skills: SkillRegistry) -> None:
    assert answer(nlu, skills, "turn on the kitchn lights") == "Turned on the kitchen lights."
    assert answer(nlu, skills, "turn on the kitchen lights") == "The kitchen lights are already on."
    assert answer(nlu, skills, "are the lights on") == "The lights are on in the kitchen."
    assert answer(nlu, skills, "is the bedroom fan on") == "The bedroom fan is off."
    assert answer(nlu, skills, "turn off the lights") == "Turned off the kitchen lights."   # the only ones on
    assert answer(nlu, skills, "turn on all the lights") == "Turned on the lights in 7 rooms."
    assert answer(nlu, skills, "turn off the lamp in the office") == "The office lamp is already off."
    assert skills.devices.get("office", "lights") is True
    with pytest.raises(BadInputError, match="Which room"):
        answer(nlu, skills, "turn on the fan")
    with pytest.raises(BadInputError, match="Which device in the garage"):
        skills.get("device").handle(Intent("device_on", 1.0, {"area": "garage"}), "")


def test_registry(skills: SkillRegistry, nlu: Understander) -> None:
    assert set(skills.names) == {"time", "date", "timer", "arithmetic", "unit_convert", "greeting",
                                 "goodbye", "thanks", "help", "stop", "device"}
    assert skills.get("weather") is None
    for spec in nlu.intents.intents.values():       # every built-in intent's skill exists
        assert spec.skill is None or skills.get(spec.skill) is not None, spec.name


def test_registry_uses_configured_lists(clock: FakeClock) -> None:
    skills = SkillRegistry.from_config(SkillsConfig(), clock, {"area": ("porch",), "device": ("light",)})
    assert skills.get("device").handle(Intent("device_on", 1.0, {"area": "porch", "device": "light"}), "") == \
        "Turned on the porch light."

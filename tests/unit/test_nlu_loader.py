"""Intent file loading and validation."""
from __future__ import annotations

from pathlib import Path

import pytest

from edge_runtime.errors import ConfigError
from edge_runtime.nlu import OOS, IntentFileError, load_intents, normalize_text
from edge_runtime.nlu.loader import parse_intents

REQUIRED = ("get_time", "get_date", "timer_set", "timer_cancel", "timer_status", "arithmetic",
            "unit_convert", "greeting", "goodbye", "thanks", "help", "stop", "device_on",
            "device_off", OOS)


def test_builtin_set_covers_the_assistant() -> None:
    intents = load_intents(None)
    assert set(REQUIRED) <= set(intents.names)
    for name in REQUIRED:
        spec = intents.spec(name)
        assert len({normalize_text(e) for e in spec.examples}) >= 30, name
        assert (spec.skill is None) == (name == OOS), name
    assert intents.spec(OOS).cacheable
    assert not intents.spec("get_time").cacheable          # time-dependent answers are never cached
    assert intents.spec("arithmetic").abstain_without == ("expression",)


def test_examples_look_like_speech_recognition_output() -> None:
    for spec in load_intents(None).intents.values():
        for example in spec.examples:
            assert example == example.lower() and normalize_text(example).replace(".", "") == \
                example.replace(".", ""), (spec.name, example)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "intents.yaml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = """
version: 1
intents:
  lights:
    skill: device
    slots: [area]
    examples: [turn on the lights, lights on please, switch the lights on]
"""


def test_user_file_gets_builtin_oos(tmp_path: Path) -> None:
    intents = load_intents(write(tmp_path, GOOD))
    assert intents.names == ("lights", OOS)
    assert len(intents.spec(OOS).examples) > 100
    assert intents.source.endswith("intents.yaml")


@pytest.mark.parametrize("text, needle", [
    ("intents: {}", "non-empty mapping"),
    ("- a\n- b", "must be a mapping"),
    ("version: 2\nintents: {a: {examples: [x, y, z]}}", "version 2"),
    ("colour: 1\nintents: {a: {examples: [x, y, z]}}", "unknown top-level key 'colour'"),
    ("intents:\n  Bad-Name: {examples: [a b, c d, e f]}", "Bad-Name"),
    ("intents:\n  lights: {skil: device, examples: [a, b, c]}", "intent 'lights': unknown key 'skil'"),
    ("intents:\n  lights: {examples: [a, b]}", "intent 'lights': needs at least 3"),
    ("intents:\n  lights: {examples: [on, off, 'yes']}", "intent 'lights': examples must be a list"),
    ("intents:\n  lights: {examples: [a, b, c], cacheable: maybe}", "cacheable must be true or false"),
    ("intents:\n  lights: {examples: [a, b, c], budget_ms: -5}", "budget_ms must be a positive"),
    ("intents:\n  lights: {examples: [a, b, c], abstain_without: [area]}", "not in slots"),
    ("intents:\n  oos: {skill: time, examples: [a, b, c]}", "oos intent is answered by the LLM"),
    ("intents:\n  a: {examples: [x y, z w, same]}\n  b: {examples: [same, q r, s t]}", "also an example of 'a'"),
    ("intents:\n  a: {examples: [x, y, z]}\n  a: {examples: [x, y, z]}", "duplicate key 'a'"),
    ("intents: [unclosed", "not valid YAML"),
])
def test_bad_files_name_the_problem(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(IntentFileError) as err:
        load_intents(write(tmp_path, text))
    assert needle in err.value.message
    assert str(tmp_path) in err.value.message
    assert isinstance(err.value, ConfigError) and err.value.hint


def test_missing_file_names_the_config_key(tmp_path: Path) -> None:
    with pytest.raises(IntentFileError) as err:
        load_intents(tmp_path / "nope.yaml")
    assert "does not exist" in err.value.message and "nlu.intents_file" in (err.value.hint or "")


def test_parse_intents_returns_specs() -> None:
    specs = parse_intents(GOOD)
    assert specs["lights"].skill == "device" and specs["lights"].slots == ("area",)
    assert specs["lights"].cache_ttl_s is None and specs["lights"].budget_ms is None

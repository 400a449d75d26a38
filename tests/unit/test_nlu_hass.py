"""Home Assistant templates as data: sampled sentences carry the slots hassil finds, and
the slot filler recovers them (text and recognition-style errors)."""
from __future__ import annotations

import pytest

pytest.importorskip("hassil")
pytest.importorskip("home_assistant_intents")

from edge_runtime.nlu.hass import HassData, SlotFiller  # noqa: E402


@pytest.fixture(scope="module")
def hass() -> HassData:
    return HassData()


@pytest.fixture(scope="module")
def filler(hass: HassData) -> SlotFiller:
    return SlotFiller(hass, hass.sample(4, seed=1))


def test_sampled_sentences_agree_with_hassil(hass: HassData) -> None:
    rows = hass.sample(1, seed=3)
    assert len({r.intent for r in rows}) >= 25
    assert all(r.text == r.text.strip() and "  " not in r.text for r in rows)
    checked = rows[::15]
    agree = [r for r in checked if hass.hassil_parse(r.text) == (r.intent, r.slots)]
    assert len(agree) / len(checked) >= 0.97


def test_sampling_is_deterministic(hass: HassData) -> None:
    assert hass.sample(1, seed=5)[:50] == hass.sample(1, seed=5)[:50]


@pytest.mark.parametrize("intent,text,slots", [
    ("HassTurnOn", "turn on the desk lamp", {"name": "desk lamp"}),
    ("HassLightSet", "set the kitchen lights to 40 percent", {"area": "kitchen", "brightness": "40"}),
    ("HassLightSet", "set the bedroom lights to forty percent", {"area": "bedroom", "brightness": "40"}),
    ("HassStartTimer", "set a timer for 5 minutes and 30 seconds", {"minutes": "5", "seconds": "30"}),
    ("HassStartTimer", "timer for 2 and a half hours", {"hours": "2", "minutes": "30"}),
    ("HassClimateSetTemperature", "set the temperature in the office to 21 degrees",
     {"area": "office", "temperature": "21"}),
    ("HassSetVolumeRelative", "turn the volume down by 10 in the kitchen",
     {"area": "kitchen", "volume_step": "-10"}),
    ("HassTurnOff", "turn off the living rum lights", {"area": "living room"}),   # fuzzy
    # recognizer output: "and a half" as ".5", "floor" heard as "4", punctuation and capitals
    ("HassDecreaseTimer", "Decrease my timer by 9.5 minutes.", {"minutes": "9", "seconds": "30"}),
    ("HassTurnOn", "Turn on each and every light in ground 4.", {"floor": "ground floor"}),
    ("HassTurnOff", "switch out all our lamps", {}),            # "our lamps" is not "floor lamp"
])
def test_filler_recovers_slots(filler: SlotFiller, intent: str, text: str, slots: dict) -> None:
    assert dict(filler.fill(intent, text)) == slots


def test_filler_finds_nothing_in_unrelated_text(filler: SlotFiller) -> None:
    assert filler.fill("HassTurnOn", "why is the sky blue") == ()

"""Home Assistant templates as data: sampled sentences carry the slots hassil finds, and
the slot filler recovers them (text and recognition-style errors)."""
from __future__ import annotations

import pytest

pytest.importorskip("hassil")
pytest.importorskip("home_assistant_intents")

from edge_runtime.nlu.train.hass import HassData, SlotFiller  # noqa: E402
from edge_runtime.nlu.hass_text import similarity, sound_key, squash, unit_after, words  # noqa: E402


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
    # sound-alikes across word boundaries, and short values heard as other words
    ("HassTurnOn", "test clamp on", {"name": "desk lamp"}),
    ("HassTurnOff", "turn off the air pure fire", {"name": "air purifier"}),
    ("HassGetState", "are any fans own in the kitchen", {"area": "kitchen", "state": "on"}),
    ("HassTurnOn", "turn on the lights in the bad room", {"area": "bedroom"}),
    # ... but the intent's own words are not misheard values
    ("HassGetState", "which lights are in the kitchen", {"area": "kitchen"}),
    ("HassDecreaseTimer", "take 5 minutes off this timer", {"minutes": "5"}),
    ("HassTurnOn", "turn on these lights", {}),
    # numbers as a recognizer writes them
    ("HassCancelTimer", "cancel the 70 one second timer", {"start_seconds": "71"}),
    ("HassCancelTimer", "cancel for minutes timer", {"start_minutes": "4"}),
    ("HassStartTimer", "set a timer for 3 minutes and 52nd", {"minutes": "3", "seconds": "50"}),
    ("HassSetVolumeRelative", "turn the volume down in the ground 4 4 by 17",
     {"floor": "ground floor", "volume_step": "-17"}),
    # an exact value beats a misheard guess ("our light" ~ "porch light")
    ("HassTurnOn", "switch on our light upstairs", {"floor": "upstairs"}),
    # a value word that is mostly a preposition loses to a real value
    ("HassGetState", "any doors securely locked on basement", {"area": "basement", "state": "locked"}),
])
def test_filler_recovers_slots(filler: SlotFiller, intent: str, text: str, slots: dict) -> None:
    assert dict(filler.fill(intent, text)) == slots


def test_sound_key_merges_what_recognizers_confuse() -> None:
    assert sound_key("desk lamp") == sound_key("desk lamb") == "tsklmp"
    assert sound_key("test clamp") != sound_key("desk lamp")
    assert sound_key("own") == sound_key("on")


@pytest.mark.parametrize("span,phrase,ok", [
    ("air pure fire", "air purifier", True), ("oning", "awning", True), ("own", "on", True),
    ("these", "gates", False), ("and", "on", False), ("scenario", "stereo", False),
])
def test_similarity_accepts_mishearings_only(span: str, phrase: str, ok: bool) -> None:
    assert (similarity(span, phrase, squash(phrase), sound_key(phrase)) > 0) is ok


def test_recognizer_numbers_are_repaired() -> None:
    assert words("Decrease the 70 one second timer") == ["decrease", "the", "71", "second", "timer"]
    assert words("timer for 70 8 minutes") == ["timer", "for", "78", "minutes"]
    assert words("by 17, 8 seconds") == ["by", "78", "seconds"]           # -ty heard as -teen
    assert words("remove 50-8 second") == ["remove", "58", "second"]
    assert words("decrease 7T 5 seconds timer") == ["decrease", "75", "seconds", "timer"]
    assert words("ground 4-4 brightness") == ["ground", "4", "4", "brightness"]   # not minus
    assert words("timer for 1-2 hours") == ["timer", "for", "half", "hours"]
    assert words("set it to 17.5 degrees") == ["set", "it", "to", "17.5", "degrees"]
    assert words("cancel for seconds timer") == ["cancel", "4", "seconds", "timer"]
    assert words("set a timer for 5 minutes") == ["set", "a", "timer", "for", "5", "minutes"]


def test_a_unit_belongs_to_the_number_right_before_it() -> None:
    w = ["ground", "4", "brightness", "94", "percent"]
    assert unit_after(w, 2, [False] * 5) == "-"
    assert unit_after(w, 4, [False] * 5) == "percent"


def test_filler_finds_nothing_in_unrelated_text(filler: SlotFiller) -> None:
    assert filler.fill("HassTurnOn", "why is the sky blue") == ()

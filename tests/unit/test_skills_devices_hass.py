"""The device skill acts on Home Assistant intents (slots as ``nlu.hass_model`` gives them)."""
from __future__ import annotations

import pytest

from edge_runtime.skills.base import SkillInputError
from edge_runtime.skills.devices import DeviceSkill, DeviceStore
from edge_runtime.types import Intent

AREAS = ("kitchen", "office", "bedroom")
DEVICES = ("lights", "lamp", "fan", "tv")


@pytest.fixture
def skill() -> DeviceSkill:
    return DeviceSkill(DeviceStore(AREAS, DEVICES))


def ask(skill: DeviceSkill, intent: str, **slots) -> str:
    return skill.handle(Intent(intent, 0.99, slots), "")


def test_turn_on_and_off_by_entity_name(skill: DeviceSkill) -> None:
    assert ask(skill, "HassTurnOn", name="desk lamp", area="office") == "Turned on the office lamp."
    assert skill.store.get("office", "lamp") is True
    assert ask(skill, "HassTurnOff", name="ceiling fan", area="office") == "The office fan is already off."
    assert ask(skill, "HassTurnOff", device="lamp", area="office") == "Turned off the office lamp."
    assert skill.store.get("office", "lamp") is False


def test_singular_and_plural_device_words_match(skill: DeviceSkill) -> None:
    assert ask(skill, "HassTurnOn", device_class="light", area="kitchen") == "Turned on the kitchen lights."
    assert ask(skill, "HassTurnOn", name="tvs", area="bedroom") == "Turned on the bedroom tv."


def test_turn_off_the_only_one_on_without_a_room(skill: DeviceSkill) -> None:
    ask(skill, "HassTurnOn", device="fan", area="bedroom")
    assert ask(skill, "HassTurnOff", device="fan") == "Turned off the bedroom fan."


def test_get_state(skill: DeviceSkill) -> None:
    ask(skill, "HassTurnOn", device="lights", area="kitchen")
    assert ask(skill, "HassGetState", device="lights", area="kitchen", state="on") == \
        "The kitchen lights are on."
    assert ask(skill, "HassGetState", area="kitchen") == "In the kitchen, the lights are on."
    assert ask(skill, "HassGetState", name="reading lamp", state="on") == "No lamp is on."


def test_light_set_brightness_color_and_zero_is_off(skill: DeviceSkill) -> None:
    assert ask(skill, "HassLightSet", area="bedroom", brightness=40) == "Set the bedroom lights to 40 percent."
    assert skill.store.get("bedroom", "lights") is True
    assert skill.store.settings("bedroom", "lights") == {"brightness": 40}
    assert ask(skill, "HassLightSet", name="desk lamp", area="office", color="red") == \
        "Set the office lamp to red."
    assert ask(skill, "HassLightSet", area="bedroom", brightness=0) == "Set the bedroom lights to 0 percent."
    assert skill.store.get("bedroom", "lights") is False


@pytest.mark.parametrize("slots,needle", [
    ({"floor": "upstairs"}, "which rooms are upstairs"),
    ({"floor": "first floor", "device": "lights"}, "which rooms are on the first floor"),
    ({"name": "coffee maker", "area": "kitchen"}, "Which device in the kitchen"),
    ({"device": "lights", "area": "garage"}, "Which room should I use for the lights"),
])
def test_unusable_slots_ask_back(skill: DeviceSkill, slots: dict, needle: str) -> None:
    with pytest.raises(SkillInputError, match=needle):
        ask(skill, "HassTurnOn", **slots)


@pytest.mark.parametrize("slots,needle", [
    ({"area": "kitchen"}, "How should I set the kitchen lights"),
    ({"area": "kitchen", "brightness": 150}, "0 to 100 percent, not 150"),
])
def test_light_set_needs_a_usable_setting(skill: DeviceSkill, slots: dict, needle: str) -> None:
    with pytest.raises(SkillInputError, match=needle):
        ask(skill, "HassLightSet", **slots)
    assert skill.store.get("kitchen", "lights") is False


def test_other_hass_intents_are_refused(skill: DeviceSkill) -> None:
    with pytest.raises(SkillInputError, match="cannot handle HassMediaPause"):
        ask(skill, "HassMediaPause", name="tv")

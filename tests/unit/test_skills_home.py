"""The home skill on the simulated home: covers, locks, climate, media, lists, weather, timers."""
from __future__ import annotations

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.skills.base import SkillInputError
from edge_runtime.skills.devices import DeviceSkill, DeviceStore
from edge_runtime.skills.home import NO_WEATHER, ClarifySkill, HomeSkill
from edge_runtime.skills.home_state import SimHome
from edge_runtime.skills.home_timers import HomeTimers
from edge_runtime.skills.timers import TimerStore
from edge_runtime.types import Intent

AREAS = ("kitchen", "office", "bedroom")
DEVICES = ("lights", "lamp", "fan", "tv")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def skill(clock: FakeClock) -> HomeSkill:
    store = DeviceStore(AREAS, DEVICES)
    return HomeSkill(SimHome(AREAS, DEVICES), DeviceSkill(store), HomeTimers(TimerStore(clock, 4)))


def ask(skill: HomeSkill, intent: str, **slots) -> str:
    return skill.handle(Intent(intent, 0.99, slots), "")


def test_entity_names_of_the_simulated_home_reach_the_device_store(skill: HomeSkill) -> None:
    assert "kitchen lamp" in skill.home.entities()
    assert ask(skill, "HassTurnOn", name="kitchen lamp") == "Turned on the kitchen lamp."
    assert skill.devices.store.get("kitchen", "lamp") is True
    assert ask(skill, "HassTurnOn", area="office", domain="light") == "Turned on the office lights."
    assert ask(skill, "HassLightSet", name="kitchen lamp", brightness=40) == \
        "Set the kitchen lamp to 40 percent."
    assert skill.devices.store.settings("kitchen", "lamp") == {"brightness": 40}


def test_light_set_without_a_value_is_asked_back(skill: HomeSkill) -> None:
    with pytest.raises(SkillInputError, match="How should I set"):
        ask(skill, "HassLightSet", name="kitchen lamp")


def test_covers_open_close_and_position(skill: HomeSkill) -> None:
    assert ask(skill, "HassTurnOn", name="garage door") == "Opened the garage door."
    assert ask(skill, "HassTurnOn", name="garage door") == "The garage door is already open."
    assert ask(skill, "HassGetState", name="garage door") == "The garage door is open."
    assert ask(skill, "HassSetPosition", name="office blinds", position=40) == \
        "Set the office blinds to 40 percent open."
    assert skill.home.covers["office blinds"] == 40
    assert ask(skill, "HassTurnOff", name="office blinds") == "Closed the office blinds."
    with pytest.raises(SkillInputError, match="Which one"):      # three blinds: ask back
        ask(skill, "HassTurnOn", device_class="blind", domain="cover")
    assert skill.home.covers == {"garage door": 100, "kitchen blinds": 0, "office blinds": 0,
                                 "bedroom blinds": 0}
    with pytest.raises(SkillInputError, match="percentage"):
        ask(skill, "HassSetPosition", name="office blinds", position=140)


def test_locks(skill: HomeSkill) -> None:
    assert ask(skill, "HassGetState", name="front door") == "The front door is locked."
    assert ask(skill, "HassTurnOff", name="front door") == "Unlocked the front door."
    assert skill.home.locks["front door"] is False


def test_climate_get_and_set(skill: HomeSkill) -> None:
    assert ask(skill, "HassClimateGetTemperature") == "The thermostats are set to 20 degrees."
    assert ask(skill, "HassClimateSetTemperature", area="office", temperature=22) == \
        "Set the office to 22 degrees."
    assert ask(skill, "HassClimateGetTemperature", area="office") == \
        "The office thermostat is set to 22 degrees."
    with pytest.raises(SkillInputError, match="5 to 35"):
        ask(skill, "HassClimateSetTemperature", temperature=80)
    assert skill.home.temperature["kitchen"] == 20.0
    with pytest.raises(SkillInputError, match="Which room"):
        ask(skill, "HassClimateGetTemperature", area="attic", name="")


def test_media_player(skill: HomeSkill) -> None:
    assert ask(skill, "HassMediaPause") == "Nothing is playing."
    assert ask(skill, "HassMediaUnpause") == "Playing Morning Light."
    assert ask(skill, "HassMediaNext") == "Playing Blue Harbour."
    assert ask(skill, "HassMediaPrevious") == "Playing Morning Light."
    assert ask(skill, "HassSetVolume", volume_level=30) == "Volume set to 30 percent."
    assert ask(skill, "HassSetVolumeRelative", volume_step="up") == "Volume up to 40 percent."
    assert ask(skill, "HassSetVolumeRelative", volume_step=-15) == "Volume down to 25 percent."
    with pytest.raises(SkillInputError, match="up or down"):
        ask(skill, "HassSetVolumeRelative")
    assert ask(skill, "HassMediaPause") == "Paused."


def test_shopping_and_todo_lists(skill: HomeSkill) -> None:
    assert ask(skill, "HassShoppingListAddItem", item="milk") == "Added milk to the shopping list."
    assert ask(skill, "HassListAddItem", item="call mom", name="to do list") == \
        "Added call mom to the to do list."
    assert skill.home.lists == {"shopping list": ["milk"], "to do list": ["call mom"]}
    with pytest.raises(SkillInputError, match="can't find eggs"):
        ask(skill, "HassShoppingListCompleteItem", item="eggs")
    assert ask(skill, "HassShoppingListCompleteItem", item="milk") == \
        "Checked off milk on the shopping list."
    with pytest.raises(SkillInputError, match="Which list"):
        ask(skill, "HassListAddItem", item="x", name="garage list")


def test_weather_is_never_invented(skill: HomeSkill) -> None:
    answer = ask(skill, "HassGetWeather")
    assert answer == NO_WEATHER and "no weather source" in answer
    assert not any(w in answer.lower() for w in ("sunny", "rain", "cloud", "degrees"))


def test_timers_adjust_pause_resume_and_ask_back(skill: HomeSkill, clock: FakeClock) -> None:
    store = skill.timers.store
    with pytest.raises(SkillInputError, match="no timer"):
        ask(skill, "HassIncreaseTimer", minutes=2)
    store.add(300, None)
    clock.advance(60)
    assert ask(skill, "HassIncreaseTimer", minutes=2) == \
        "Added 2 minutes to the timer for 5 minutes; 6 minutes left."
    assert ask(skill, "HassDecreaseTimer", minutes=1) == \
        "Took 1 minute off the timer for 6 minutes; 5 minutes left."
    store.add(600, "pasta")
    with pytest.raises(SkillInputError, match="Which timer: .* or the pasta timer"):
        ask(skill, "HassPauseTimer")
    assert ask(skill, "HassPauseTimer", name="pasta") == \
        "Paused the pasta timer with 10 minutes left."
    clock.advance(120)
    assert "the pasta timer is paused with 10 minutes left" in ask(skill, "HassTimerStatus")
    assert ask(skill, "HassUnpauseTimer") == "Resumed the pasta timer; 10 minutes left."
    with pytest.raises(SkillInputError, match="can't take off"):
        ask(skill, "HassDecreaseTimer", name="pasta", hours=1)
    assert len(store.active()) == 2


def test_clarify_speaks_the_question() -> None:
    assert ClarifySkill().handle(Intent("clarify", 0.5, {"question": "Which timer?"}), "") == \
        "Which timer?"


def test_registry_adds_the_home_skills_on_request(clock: FakeClock) -> None:
    from edge_runtime.config import SkillsConfig
    from edge_runtime.skills.registry import SkillRegistry

    registry = SkillRegistry.from_config(SkillsConfig(timezone="UTC"), clock)
    assert registry.get("home") is None
    registry.add_home()
    assert isinstance(registry.get("home"), HomeSkill)
    assert isinstance(registry.get("clarify"), ClarifySkill)
    assert registry.home is not None and "kitchen lights" in registry.home.entities()

"""The home skill against Home Assistant's REST API (real HTTP on loopback to a server that
speaks the documented API, ``tests/ha_server.py``): actions, state, lists read for the
understanding, and every bad input of issue 15 (down, slow, 401, garbage, a removed entity,
an area matching two areas) answered in words, with no action sent twice."""
from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.config import HomeConfig, NluConfig, SkillsConfig, load_config
from edge_runtime.errors import ConfigError
from edge_runtime.nlu.home.serve import home_lists
from edge_runtime.skills.base import SkillInputError
from edge_runtime.skills.ha_client import (TOKEN_REFUSED, UNREACHABLE, HAHome,
                                           HomeAssistantClient)
from edge_runtime.skills.home_assistant import HomeAssistantSkill
from edge_runtime.skills.home_timers import HomeTimers
from edge_runtime.skills.registry import SkillRegistry
from edge_runtime.skills.timers import TimerStore
from edge_runtime.types import Intent
from tests.ha_server import TOKEN, FakeHomeAssistant


@pytest.fixture
def ha() -> Iterator[FakeHomeAssistant]:
    server = FakeHomeAssistant().start()
    yield server
    server.stop()


def make_skill(ha: FakeHomeAssistant, token: str = TOKEN, timeout_s: float = 5.0
               ) -> HomeAssistantSkill:
    client = HomeAssistantClient(ha.url, token, timeout_s)
    return HomeAssistantSkill(client, HAHome.read(client), HomeTimers(TimerStore(FakeClock(), 4)))


def ask(skill: HomeAssistantSkill, intent: str, **slots) -> str:
    try:
        return skill.handle(Intent(intent, 0.99, slots), "")
    except SkillInputError as exc:
        return exc.message


def test_lists_read_from_home_assistant_name_areas_and_entities(ha: FakeHomeAssistant) -> None:
    home = HAHome.read(HomeAssistantClient(ha.url, TOKEN))
    assert set(home.areas) == {"kitchen", "living room", "master bedroom", "guest bedroom"}
    assert home.by_name["kitchen lamp"].entity_id == "light.kitchen_lamp"
    assert home.by_name["kitchen lamp"].area == "kitchen"
    assert home.by_name["garage door"].area == ""
    lists = home_lists(NluConfig(), home)
    assert lists.names["coffee maker"] == "switch" and "guest bedroom" in lists.areas
    assert "desk lamp" not in lists.names           # not the default home's names


def test_actions_call_the_documented_services(ha: FakeHomeAssistant) -> None:
    skill = make_skill(ha)
    assert ask(skill, "HassTurnOn", name="Kitchen Lamp") == "Turned on the kitchen lamp."
    assert ha.calls[-1] == ("light", "turn_on", {"entity_id": "light.kitchen_lamp"})
    assert ask(skill, "HassTurnOn", name="kitchen lamp") == "The kitchen lamp is already on."
    assert len(ha.calls) == 1
    assert ask(skill, "HassTurnOn", area="kitchen", domain="light") == \
        "Turned on 2 lights in the kitchen."
    assert ha.calls[-1][2]["entity_id"] == ["light.kitchen_lamp", "light.kitchen_ceiling"]
    assert ask(skill, "HassTurnOff", name="coffee maker") == "The coffee maker is already off."
    assert ask(skill, "HassTurnOff", name="ceiling fan") == "Turned off the ceiling fan."
    assert ha.calls[-1][:2] == ("fan", "turn_off")
    assert ask(skill, "HassLightSet", name="reading light", brightness=40, color="red") == \
        "Set the reading light to 40 percent and red."
    assert ha.calls[-1] == ("light", "turn_on", {"entity_id": "light.reading_light",
                                                 "brightness_pct": 40,
                                                 "rgb_color": [255, 0, 0]})
    assert ask(skill, "HassLightSet", name="reading light", temperature=2700) == \
        "Set the reading light to 2700 kelvin."
    assert ha.calls[-1][2]["color_temp_kelvin"] == 2700
    assert ask(skill, "HassTurnOn", name="garage door") == "Opened the garage door."
    assert ha.states["cover.garage_door"]["state"] == "open"
    assert ask(skill, "HassSetPosition", name="garage door", position=30) == \
        "Set the garage door to 30 percent open."
    assert ha.calls[-1] == ("cover", "set_cover_position",
                            {"entity_id": "cover.garage_door", "position": 30})
    assert ask(skill, "HassClimateSetTemperature", temperature=22) == \
        "Set the thermostat to 22 degrees."
    assert ask(skill, "HassClimateGetTemperature") == "The thermostat is set to 22 degrees."
    assert ask(skill, "HassMediaNext") == "Skipped to the next track."
    assert ha.calls[-1][:2] == ("media_player", "media_next_track")
    assert ask(skill, "HassMediaPause") == "Paused."
    assert ask(skill, "HassSetVolume", volume_level=40) == "Volume set to 40 percent."
    assert ha.calls[-1][2] == {"entity_id": "media_player.living_room_speaker",
                               "volume_level": 0.4}
    assert ask(skill, "HassShoppingListAddItem", item="milk") == \
        "Added milk to the shopping list."
    assert ha.shopping == ["milk"]
    assert ask(skill, "HassListAddItem", name="chores", item="dishes") == \
        "Added dishes to the chores."
    assert ha.calls[-1] == ("todo", "add_item", {"entity_id": "todo.chores", "item": "dishes"})


def test_shopping_list_uses_its_todo_entity_where_there_is_one(ha: FakeHomeAssistant) -> None:
    ha.states["todo.shopping_list"] = {"entity_id": "todo.shopping_list", "state": "0",
                                       "area": "", "attributes": {"friendly_name": "Shopping List"}}
    skill = make_skill(ha)
    assert ask(skill, "HassShoppingListAddItem", item="bread") == \
        "Added bread to the shopping list."
    assert ha.calls == [("todo", "add_item", {"entity_id": "todo.shopping_list", "item": "bread"})]
    assert ask(skill, "HassShoppingListCompleteItem", item="bread") == \
        "Checked off bread on the shopping list."
    assert ha.calls[-1] == ("todo", "update_item", {"entity_id": "todo.shopping_list",
                                                    "item": "bread", "status": "completed"})
    assert ha.shopping == []


def test_state_questions_read_the_entity(ha: FakeHomeAssistant) -> None:
    skill = make_skill(ha)
    assert ask(skill, "HassGetState", name="reading light") == "The reading light is on."
    ha.states["light.reading_light"]["state"] = "off"       # changed in Home Assistant
    assert ask(skill, "HassGetState", name="reading light") == "The reading light is off."
    assert ha.calls == []


def test_home_assistant_down_is_said_and_the_daemon_keeps_serving(ha: FakeHomeAssistant) -> None:
    skill = make_skill(ha)
    ha.stop()
    assert ask(skill, "HassTurnOn", name="kitchen lamp") == UNREACHABLE
    with socket.socket() as s:                  # a port nobody listens on: refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = HomeAssistantClient(f"http://127.0.0.1:{port}", TOKEN, 1.0)
    with pytest.raises(SkillInputError, match="can't reach Home Assistant"):
        HAHome.read(client)


def test_slow_home_assistant_times_out_and_the_action_is_sent_once(ha: FakeHomeAssistant) -> None:
    skill = make_skill(ha, timeout_s=0.3)
    ha.mode, ha.delay_s = "slow", 1.0
    assert ask(skill, "HassShoppingListAddItem", item="eggs") == UNREACHABLE
    ha.mode = ""
    assert [c for c in ha.calls if c[0] == "shopping_list"] == \
        [("shopping_list", "add_item", {"name": "eggs"})]
    assert ask(skill, "HassTurnOn", name="kitchen lamp") == "Turned on the kitchen lamp."


def test_refused_token_names_the_setting(ha: FakeHomeAssistant) -> None:
    skill = make_skill(ha)
    skill.client = HomeAssistantClient(ha.url, "wrong-token")
    assert ask(skill, "HassTurnOn", name="kitchen lamp") == TOKEN_REFUSED
    assert TOKEN_REFUSED == "Home Assistant refused the token: check home.token."
    assert "wrong-token" not in repr(skill.client)
    assert ha.calls == []


def test_garbage_reply_is_said_clearly(ha: FakeHomeAssistant) -> None:
    skill = make_skill(ha)
    ha.mode = "garbage"
    assert "an answer I can't read" in ask(skill, "HassGetState", name="kitchen lamp")
    assert ha.calls == []
    with pytest.raises(SkillInputError, match="can't read"):
        HAHome.read(HomeAssistantClient(ha.url, TOKEN))


def test_entity_removed_since_the_lists_were_read(ha: FakeHomeAssistant) -> None:
    skill = make_skill(ha)
    del ha.states["light.kitchen_lamp"]
    assert ask(skill, "HassTurnOn", name="kitchen lamp") == \
        "I can't find the kitchen lamp in Home Assistant any more."
    assert ask(skill, "HassLightSet", name="kitchen lamp", brightness=20) == \
        "I can't find the kitchen lamp in Home Assistant any more."
    assert ha.calls == []


def test_an_area_matching_two_areas_is_asked_back(ha: FakeHomeAssistant) -> None:
    skill = make_skill(ha)
    assert ask(skill, "HassTurnOn", area="bedroom", domain="light") == \
        "Which bedroom: the guest bedroom or the master bedroom?"
    assert ha.calls == []
    assert ask(skill, "HassTurnOn", area="guest bedroom", domain="light") == \
        "Turned on the guest lamp."


def test_a_domain_alone_means_all_of_it(ha: FakeHomeAssistant) -> None:
    # the understanding accepts "turn on all the lights" as a domain alone, and asks back a
    # domain alone that did not say all, every or everywhere
    skill = make_skill(ha)
    lights = sorted(e for e in ha.states if e.startswith("light."))
    assert len(lights) > 1
    assert ask(skill, "HassTurnOn", domain="light") == f"Turned on all {len(lights)} lights."
    (call,) = ha.calls
    assert sorted(call[2]["entity_id"]) == lights


def test_config_validates_the_home_section() -> None:
    assert load_config(env={}).home == HomeConfig()
    with pytest.raises(ConfigError, match="home.token"):
        load_config(env={}, overrides={"home": {"backend": "home_assistant"}})
    with pytest.raises(ConfigError, match="home.url"):
        load_config(env={}, overrides={"home": {"url": "homeassistant.local:8123"}})
    with pytest.raises(ConfigError, match="home.backend"):
        load_config(env={}, overrides={"home": {"backend": "openhab"}})
    cfg = load_config(env={}, overrides={"home": {"backend": "home_assistant", "token": "s3cr"}})
    assert "s3cr" not in repr(cfg)


def test_registry_uses_home_assistant_when_configured(ha: FakeHomeAssistant) -> None:
    registry = SkillRegistry.from_config(SkillsConfig(timezone="UTC"), FakeClock())
    registry.add_home(HomeConfig(backend="home_assistant", url=ha.url, token=TOKEN))
    skill = registry.get("home")
    assert isinstance(skill, HomeAssistantSkill)
    assert registry.home is not None and "kitchen lamp" in registry.home.entities()
    assert ask(skill, "HassTurnOn", name="kitchen lamp") == "Turned on the kitchen lamp."


def test_home_assistant_down_at_start_is_read_on_the_next_request(ha: FakeHomeAssistant) -> None:
    registry = SkillRegistry.from_config(SkillsConfig(timezone="UTC"), FakeClock())
    registry.add_home(HomeConfig(backend="home_assistant", url=ha.url, token="bad"))
    skill = registry.get("home")
    assert isinstance(skill, HomeAssistantSkill) and skill.home.by_name == {}
    assert ask(skill, "HassTurnOn", name="kitchen lamp") == TOKEN_REFUSED
    skill.client = HomeAssistantClient(ha.url, TOKEN)
    assert ask(skill, "HassTurnOn", name="kitchen lamp") == "Turned on the kitchen lamp."


def test_entity_aliases_are_read_over_the_websocket_api(ha: FakeHomeAssistant) -> None:
    ha.aliases = {"light.reading_light": ["Big Light", "reading lamp"]}
    skill = make_skill(ha)
    assert skill.home.by_name["big light"].entity_id == "light.reading_light"
    assert home_lists(NluConfig(), skill.home).names["big light"] == "light"
    assert ask(skill, "HassTurnOff", name="big light") == "Turned off the reading light."
    ha.websocket = False                    # an old Home Assistant: names only, no failure
    home = HAHome.read(HomeAssistantClient(ha.url, TOKEN))
    assert "big light" not in home.by_name and "reading light" in home.by_name


def test_aliases_over_a_refused_websocket_are_skipped(ha: FakeHomeAssistant) -> None:
    from edge_runtime.skills.ha_ws import WebSocketError, entity_aliases
    ha.aliases = {"light.reading_light": ["big light"]}
    with pytest.raises(WebSocketError, match="refused"):
        entity_aliases(ha.url, "wrong", ["light.reading_light"])
    assert entity_aliases(ha.url, TOKEN, ["light.reading_light", "light.gone"]) == \
        {"light.reading_light": ["big light"]}

"""Home Assistant's lists kept fresh (``skills.ha_refresh``): retried with backoff after a
start-time failure, read again periodically and soon after an entity is not found, and
every good read reaches the understanding. Real HTTP to the loopback server speaking the
documented API (``tests/ha_server.py``); time from a ``FakeClock``."""
from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.config import HomeConfig, NluConfig, SkillsConfig
from edge_runtime.nlu.home.lists import HomeLists
from edge_runtime.nlu.home.serve import home_lists
from edge_runtime.skills.base import SkillInputError
from edge_runtime.skills.ha_client import HAHome, HomeAssistantClient
from edge_runtime.skills.ha_refresh import HomeRefresher
from edge_runtime.skills.registry import SkillRegistry
from edge_runtime.types import Intent
from tests.ha_server import TOKEN, FakeHomeAssistant


@pytest.fixture
def ha() -> Iterator[FakeHomeAssistant]:
    server = FakeHomeAssistant().start()
    yield server
    server.stop()


def _dead_url() -> str:
    with socket.socket() as s:                  # a port nobody listens on: refused
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_down_at_start_is_retried_with_backoff_until_it_answers(ha: FakeHomeAssistant) -> None:
    clock = FakeClock()
    client = HomeAssistantClient(_dead_url(), TOKEN, 1.0)
    home = HAHome()
    refresher = HomeRefresher(client, home, refresh_s=600, retry_s=5, clock=clock)
    seen: list[int] = []
    refresher.on_change(lambda h: seen.append(len(h.by_name)))
    assert not refresher.fresh
    waits = [refresher.step()]                  # tried at once, failed: wait 5 s
    for _ in range(3):
        clock.advance(waits[-1])
        waits.append(refresher.step())
    assert waits == [5, 10, 20, 40] and refresher.failures == 4 and seen == []
    clock.advance(1)
    assert refresher.step() == pytest.approx(39)     # nothing due before the wait is over
    refresher.client = HomeAssistantClient(ha.url, TOKEN)     # Home Assistant is back
    clock.advance(39)
    assert refresher.step() == 600              # read: next periodic read in refresh_s
    assert refresher.fresh and "kitchen lamp" in home.by_name and seen == [len(home.by_name)]


def test_periodic_refresh_and_a_request_pick_up_changes(ha: FakeHomeAssistant) -> None:
    clock = FakeClock()
    client = HomeAssistantClient(ha.url, TOKEN)
    home = HAHome.read(client)
    refresher = HomeRefresher(client, home, refresh_s=600, retry_s=5, clock=clock)
    ha.states["light.porch"] = {"entity_id": "light.porch", "state": "off", "area": "",
                                "attributes": {"friendly_name": "Porch Light"}}
    assert refresher.step() == 600 and "porch light" not in home.by_name   # not due yet
    clock.advance(600)
    refresher.step()
    assert "porch light" in home.by_name
    del ha.states["light.porch"]
    refresher.request()                         # a request did not find it
    refresher.request()                         # (at most one per retry_s)
    assert refresher.step() == 600 and "porch light" not in home.by_name
    assert refresher.reads == 2


def test_a_periodic_failure_keeps_the_lists_and_backs_off(ha: FakeHomeAssistant) -> None:
    clock = FakeClock()
    client = HomeAssistantClient(ha.url, TOKEN, 1.0)
    home = HAHome.read(client)
    refresher = HomeRefresher(client, home, refresh_s=60, retry_s=5, clock=clock)
    names = dict(home.by_name)
    refresher.client = HomeAssistantClient(_dead_url(), TOKEN, 1.0)
    clock.advance(60)
    assert refresher.step() == 5 and home.by_name == names


def test_the_skill_asks_for_a_refresh_when_an_entity_is_gone_or_unknown(
        ha: FakeHomeAssistant) -> None:
    clock = FakeClock()
    registry = SkillRegistry.from_config(SkillsConfig(timezone="UTC"), clock)
    registry.add_home(HomeConfig(backend="home_assistant", url=ha.url, token=TOKEN))
    refresher, skill = registry.refresher, registry.get("home")
    assert refresher is not None and skill is not None and refresher.fresh
    lists: list[HomeLists] = []                  # what the understanding is given
    refresher.on_change(lambda h: lists.append(home_lists(NluConfig(), h)))
    del ha.states["light.kitchen_lamp"]
    with pytest.raises(SkillInputError, match="any more"):
        skill.handle(Intent("HassTurnOn", 0.99, {"name": "kitchen lamp"}), "")
    assert refresher.step() == 600
    assert lists and "kitchen lamp" not in lists[-1].names
    assert "kitchen lamp" not in registry.home.entities()     # type: ignore[union-attr]

"""The daemon's pipeline with ``home.backend = "home_assistant"``: the home understanding
built without torch, fed the entities and areas read from Home Assistant (a loopback server
speaking its documented REST API, ``tests/ha_server.py``), acts through its services; with
Home Assistant gone the answer says so and the daemon keeps serving."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("hassil")
pytest.importorskip("home_assistant_intents")

from edge_runtime.config import load_config  # noqa: E402
from edge_runtime.nlu.train.home.build import build_home_model  # noqa: E402
from edge_runtime.runtime import Runtime  # noqa: E402
from edge_runtime.skills.ha_client import UNREACHABLE  # noqa: E402
from tests.ha_server import TOKEN, FakeHomeAssistant  # noqa: E402


@pytest.fixture(scope="module")
def home_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("home-model")
    build_home_model(out, per_template=4, copies=1, epochs=5)
    return out


async def test_requests_reach_home_assistant_and_its_absence_is_said(tmp_path, home_dir) -> None:
    ha = FakeHomeAssistant().start()
    cfg = load_config(env={}).with_overrides(
        paths={"home": str(tmp_path / "home")}, llm={"model_dir": str(tmp_path / "none")},
        cloud={"enabled": False}, voice={"enabled": False},
        nlu={"home": True, "home_dir": str(home_dir)},
        home={"backend": "home_assistant", "url": ha.url, "token": TOKEN})
    rt = Runtime.build(cfg)
    try:
        assert "coffee maker" in rt.stages.skills.home.entities()
        r = await rt.pipeline.ask("turn on the coffee maker")
        assert (r.route, r.answer) == ("skill", "Turned on the coffee maker.")
        assert ha.calls == [("switch", "turn_on", {"entity_id": "switch.coffee_maker"})]
        r = await rt.pipeline.ask("set the reading light to 40 percent")
        assert r.answer == "Set the reading light to 40 percent."
        assert ha.calls[-1][2] == {"entity_id": "light.reading_light", "brightness_pct": 40}
        ha.stop()
        r = await rt.pipeline.ask("turn off the coffee maker")
        assert r.answer == UNREACHABLE and len(ha.calls) == 2
        r = await rt.pipeline.ask("what time is it")
        assert r.route == "skill" and r.answer
    finally:
        ha.stop()
        await rt.close()


async def test_lists_unreadable_at_start_are_read_in_the_background(tmp_path, home_dir) -> None:
    import asyncio

    ha = FakeHomeAssistant().start()
    ha.mode = "garbage"                       # Home Assistant answers nonsense at start
    cfg = load_config(env={}).with_overrides(
        paths={"home": str(tmp_path / "home")}, llm={"model_dir": str(tmp_path / "none")},
        cloud={"enabled": False}, voice={"enabled": False},
        nlu={"home": True, "home_dir": str(home_dir)},
        home={"backend": "home_assistant", "url": ha.url, "token": TOKEN, "retry_s": 0.2})
    rt = Runtime.build(cfg)
    try:
        refresher = rt.stages.skills.refresher
        assert refresher is not None and not refresher.fresh
        assert rt.stages.skills.home.entities() == {}
        await rt.start()
        await asyncio.sleep(0.5)              # a retry or two, still failing
        assert not refresher.fresh and refresher.failures >= 1
        ha.mode = ""                          # back
        for _ in range(100):
            if refresher.fresh:
                break
            await asyncio.sleep(0.1)
        assert refresher.fresh
        # the understanding knows the names read now (not the default home's)
        got = rt.stages.understander.parse("turn on the guest lamp")
        assert (got.name, got.slots.get("name")) == ("HassTurnOn", "guest lamp")
        r = await rt.pipeline.ask("turn on the guest lamp")
        assert r.answer == "Turned on the guest lamp."
        r = await rt.pipeline.ask("allume la lumière de la cuisine")
        assert r.route == "skill" and "only understand English" in r.answer
        assert len(ha.calls) == 1
    finally:
        ha.stop()
        await rt.close()

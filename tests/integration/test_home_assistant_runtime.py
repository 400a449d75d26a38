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

"""The Home Assistant backend against a real Home Assistant Core started on loopback.

Skipped unless ``EDGE_TEST_HASS`` names a ``hass`` executable: current Home Assistant needs
a newer Python than the project's (2026.x: >= 3.14.2); the last release for Python 3.11
(2024.3.3) installs in a venv of its own (its pins clash with the project's, e.g.
aiohttp==3.9.3): ``python3.11 -m venv /tmp/ha && /tmp/ha/bin/pip install
homeassistant==2024.3.3`` then ``EDGE_TEST_HASS=/tmp/ha/bin/hass``. The test writes a
config with the ``demo`` integration (lights, covers, climate, media players in areas) and
``shopping_list``, onboards a user to get a token, and drives the skill through the REST API.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.skills.ha_client import HAHome, HomeAssistantClient
from edge_runtime.skills.home_assistant import HomeAssistantSkill
from edge_runtime.skills.home_timers import HomeTimers
from edge_runtime.skills.timers import TimerStore
from edge_runtime.types import Intent

HASS = os.environ.get("EDGE_TEST_HASS", "")
pytestmark = pytest.mark.skipif(not HASS, reason="EDGE_TEST_HASS (a hass executable) not set")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, body: bytes, ctype: str) -> dict:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def core(tmp_path_factory) -> Iterator[tuple[str, str]]:
    conf = tmp_path_factory.mktemp("hass")
    port = _port()
    (conf / "configuration.yaml").write_text(
        "homeassistant:\n  name: Test\n  unit_system: metric\n  time_zone: UTC\n"
        "  latitude: 52.3\n  longitude: 4.9\n  elevation: 0\n"
        f"http:\n  server_host: 127.0.0.1\n  server_port: {port}\n"
        "api:\nonboarding:\nauth:\ndemo:\n")
    log = (conf / "hass.log").open("w")
    proc = subprocess.Popen([HASS, "-c", str(conf)], stdout=log,
                            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 420     # the first start pip-installs requirements
        while True:
            try:
                urllib.request.urlopen(base + "/api/onboarding", timeout=5).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = Path(log.name).read_text()[-2000:]
                    pytest.fail(f"Home Assistant did not start: {tail}")
                time.sleep(1)
        client_id = base + "/"
        code = _post(base + "/api/onboarding/users", json.dumps({
            "client_id": client_id, "name": "Test", "username": "test", "password": "test-pass",
            "language": "en"}).encode(), "application/json")["auth_code"]
        token = _post(base + "/auth/token", urllib.parse.urlencode({
            "grant_type": "authorization_code", "code": code, "client_id": client_id}).encode(),
            "application/x-www-form-urlencoded")["access_token"]
        client = HomeAssistantClient(base, token, 10)
        auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        flow = json.loads(urllib.request.urlopen(urllib.request.Request(   # the shopping list's
            base + "/api/config/config_entries/flow", method="POST", headers=auth,  # entry
            data=json.dumps({"handler": "shopping_list"}).encode()), timeout=30).read())
        urllib.request.urlopen(urllib.request.Request(
            base + f"/api/config/config_entries/flow/{flow['flow_id']}", method="POST",
            headers=auth, data=b"{}"), timeout=30).read()
        deadline = time.monotonic() + 120          # the demo entities come up after start
        while not {"light.bed_light", "todo.shopping_list"} <= {
                s["entity_id"] for s in client.states()}:
            assert time.monotonic() < deadline, "no demo lights or shopping list"
            time.sleep(1)
        yield base, token
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def test_real_home_assistant_lists_actions_and_bad_token(core) -> None:
    base, token = core
    client = HomeAssistantClient(base, token, 10)
    home = HAHome.read(client)
    lights = [e for e in home.by_name.values() if e.domain == "light"]
    assert lights and "kitchen" in home.areas     # onboarding's default areas, by template
    skill = HomeAssistantSkill(client, home, HomeTimers(TimerStore(FakeClock(), 4)))
    lamp = lights[0]
    before = client.state(lamp.entity_id, lamp.name)["state"]
    answer = skill.handle(Intent("HassTurnOff" if before == "on" else "HassTurnOn", 0.99,
                                 {"name": lamp.name}), "")
    assert answer.startswith("Turned")
    after = client.state(lamp.entity_id, lamp.name)["state"]
    assert after != before
    assert skill.handle(Intent("HassLightSet", 0.99, {"name": lamp.name, "brightness": 40}),
                        "") == f"Set the {lamp.name} to 40 percent."
    attrs = client.state(lamp.entity_id, lamp.name)["attributes"]
    assert attrs["brightness"] == round(255 * 40 / 100)
    assert skill.handle(Intent("HassShoppingListAddItem", 0.99, {"item": "milk"}), "") == \
        "Added milk to the shopping list."
    gone = HomeAssistantSkill(HomeAssistantClient(base, "not-a-token", 10), home,
                              HomeTimers(TimerStore(FakeClock(), 4)))
    with pytest.raises(Exception, match="refused the token"):
        gone.handle(Intent("HassTurnOn", 0.99, {"name": lamp.name}), "")

"""The daemon's microphone loop when there is no microphone: one WARNING that names the
fix, /healthz says so, and the daemon keeps serving (fake voice engines, real aiohttp)."""
import asyncio
import logging
import socket

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from edge_runtime import daemon
from edge_runtime.audio.errors import AudioDeviceError
from edge_runtime.audio.playback import VirtualSpeaker
from edge_runtime.config import load_config
from edge_runtime.errors import ConfigError
from edge_runtime.runtime import Runtime
from edge_runtime.voice.api import VOICE_KEY
from edge_runtime.voice.listener import MicListener, start_listener
from edge_runtime.voice.service import VoiceService
from edge_runtime.voice.stack import VoiceStack
from tests.pipeline_fakes import make_pipeline
from tests.voice_fixtures import EnergyVad, FakeAsr, FakeTts


def _portaudio() -> bool:
    try:
        import sounddevice  # noqa: F401
    except OSError:                # "PortAudio library not found"
        return False
    return True


def _runtime(tmp_path, **overrides):
    cfg = load_config(env={}).with_overrides(paths={"home": str(tmp_path)}, **overrides)
    p = make_pipeline(cfg=cfg)
    return Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p)


def _fake_stack(cfg):
    return VoiceStack(cfg, EnergyVad(), FakeAsr(), FakeTts())


async def test_a_microphone_that_cannot_open_leaves_the_daemon_serving(tmp_path, caplog):
    rt = _runtime(tmp_path, audio={"input_device": "no-such-microphone"},
                  voice={"microphone": True})
    app = daemon.make_app(rt)
    app[VOICE_KEY].stack = _fake_stack(rt.cfg)
    async with TestClient(TestServer(app)) as client:
        with caplog.at_level(logging.WARNING, logger="edge_runtime.voice.listener"):
            listener = await start_listener(client.app[VOICE_KEY])   # real sounddevice
        assert listener.state == "unavailable"
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        if _portaudio():
            assert "no-such-microphone" in warnings[0].getMessage()
            assert "audio.input_device" in warnings[0].getMessage()      # the fix
        else:                      # a machine without PortAudio: that is what it names
            assert "libportaudio2" in warnings[0].getMessage()
        health = await client.get("/healthz")
        assert health.status == 200
        body = await health.json()
        assert body["microphone"].startswith("unavailable: ") and body["voice"] == "ok"
        r = await client.post("/v1/ask", json={"text": "what time is it"})
        assert r.status == 200 and (await r.json())["answer"] == "It is noon."
        await listener.stop()


async def test_no_voice_models_no_loop_and_no_exception(tmp_path, caplog):
    service = VoiceService(_runtime(tmp_path))
    service.error = AudioDeviceError("stand-in load failure")
    opened = []
    listener = MicListener(service, source=lambda cfg: opened.append(cfg))
    with caplog.at_level(logging.WARNING, logger="edge_runtime.voice.listener"):
        assert await listener.start() is False
    assert opened == []                       # the microphone is not even opened
    assert listener.health().startswith("unavailable: voice models unavailable")
    assert "models pull" in caplog.records[-1].getMessage()


async def test_a_loop_that_fails_later_is_reported_not_raised(tmp_path):
    service = VoiceService(_runtime(tmp_path))
    service.stack = _fake_stack(service.cfg)

    def broken(cfg):
        def chunks():
            raise OSError("device unplugged")
            yield
        return type("Src", (), {"__iter__": lambda self: chunks(), "close": lambda self: None})()
    listener = MicListener(service, source=broken, player=lambda cfg, r: VirtualSpeaker(r))
    assert await listener.start()
    await listener.wait()
    assert listener.health() == "unavailable: the microphone loop failed: device unplugged"
    await listener.stop()


def test_microphone_needs_the_voice_routes():
    assert load_config(env={}).voice.microphone is False        # built-in default: off
    with pytest.raises(ConfigError, match="voice.microphone"):
        load_config(env={}, overrides={"voice": {"microphone": True, "enabled": False}})


async def test_serve_with_the_microphone_on_and_no_sound_card(tmp_path, monkeypatch, caplog):
    """daemon.serve itself: the loop is started beside the API, and stopped with it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rt = _runtime(tmp_path, server={"port": port}, voice={"microphone": True},
                  audio={"input_device": "no-such-microphone"})
    monkeypatch.setattr(Runtime, "build", staticmethod(lambda cfg: rt))

    async def start(self):
        self.stack = _fake_stack(self.cfg)
    monkeypatch.setattr(VoiceService, "start", start)
    task = asyncio.create_task(daemon.serve(rt.cfg))
    url = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as http:
        for _ in range(100):
            try:
                async with http.get(url + "/healthz") as r:
                    body = await r.json()
                if "microphone" in body and body["microphone"] != "off":
                    break
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.05)
        assert body["microphone"].startswith("unavailable")
        async with http.post(url + "/v1/ask", json={"text": "what time is it"}) as r:
            assert r.status == 200
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_timer_that_rings_is_spoken_by_the_listening_loop(tmp_path):
    service = VoiceService(_runtime(tmp_path))
    service.stack = _fake_stack(service.cfg)
    speaker = VirtualSpeaker(16_000)
    listener = MicListener(service, source=lambda cfg: _Silence(),
                           player=lambda cfg, r: speaker)
    assert listener.announce("Your timer is done.") is None     # not listening yet
    assert await listener.start()
    spoken = listener.announce("Your timer is done.")
    await spoken.rendered()
    assert service.stack.tts.calls == ["Your timer is done."]
    assert len(speaker.heard()) > 0
    await listener.stop()
    assert listener.state == "stopped"


class _Silence:
    """A microphone in a quiet room until closed."""

    def __init__(self):
        import threading
        self._closed = threading.Event()

    def __iter__(self):
        import numpy as np
        while not self._closed.wait(0.032):
            yield np.zeros(512, np.float32)

    def close(self):
        self._closed.set()


def test_the_jetson_config_turns_the_microphone_loop_on():
    from pathlib import Path
    cfg = load_config(Path(__file__).parents[2] / "jetson" / "config.orin-nano-8gb.toml",
                      env={})
    assert cfg.voice.microphone is True and cfg.voice.enabled
    assert cfg.voice.wake_word == "okay_nabu"         # always on in a room: wait for the word

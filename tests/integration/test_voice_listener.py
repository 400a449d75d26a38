"""The daemon's microphone loop (voice/listener.py) with the real voice models, driven by a
file-backed microphone paced in real time (and once by a PulseAudio null sink), and `chat`
attached to a real daemon app on loopback."""
import asyncio

import numpy as np
import pytest
from aiohttp.test_utils import TestClient, TestServer

from edge_runtime.audio.format import read_wav_file
from edge_runtime.audio.playback import VirtualSpeaker
from edge_runtime.audio.sources import FileSource
from edge_runtime.config import load_config
from edge_runtime.daemon import make_app
from edge_runtime.runtime import Runtime
from edge_runtime.voice import cli as voice_cli
from edge_runtime.voice.api import VOICE_KEY
from edge_runtime.voice.listener import MicListener, start_listener
from edge_runtime.voice.service import VoiceService
from tests.integration.test_voice_loop import pulse  # noqa: F401  (a fixture)
from tests.pipeline_fakes import make_pipeline
from tests.unit.test_voice_session import SlowPipeline
from tests.voice_fixtures import command_wav, real_stack, silence

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def wavs(tmp_path_factory):
    d = tmp_path_factory.mktemp("listener")
    return {t: read_wav_file(command_wav(t, d)) for t in ("what time is it",
                                                          "stop the music", "Hey Jarvis.")}


def _runtime(tmp_path, **overrides):
    cfg = load_config(env={}).with_overrides(paths={"home": str(tmp_path)}, **overrides)
    p = make_pipeline(cfg=cfg)
    return Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p)


def _file_mic(samples):
    return lambda cfg: FileSource(samples, realtime=True, tail_silence_s=0.8)


async def test_listener_answers_what_the_microphone_hears_on_the_shared_stack(tmp_path,
                                                                              wavs):
    stack = real_stack()
    service = VoiceService(_runtime(tmp_path, voice={"microphone": True}), stack=stack)
    players = []

    def player(cfg, rate):
        players.append(VirtualSpeaker(rate))
        return players[-1]
    listener = await start_listener(service, source=_file_mic(wavs["what time is it"]),
                                    player=player)
    assert listener.state == "listening" and service.listener is listener
    await listener.wait()
    await listener.stop()
    kinds = [e["type"] for e in listener.events]
    assert "result" in kinds, kinds
    result = next(e for e in listener.events if e["type"] == "result")
    assert "time" in result["transcript"].lower()
    assert result["route"] == "skill" and result["answer"] == "It is noon."
    assert listener.turns == 1
    assert service.stack is stack                 # the daemon's one copy, not a new load
    assert len(players[0].heard()) > 0.3 * stack.tts.sample_rate   # the answer was spoken
    assert listener.state == "stopped"


async def test_listener_waits_for_the_wake_word(tmp_path, wavs):
    stack = real_stack()
    rt = _runtime(tmp_path, voice={"microphone": True, "wake_word": "hey_jarvis"})
    service = VoiceService(rt, stack=stack)
    # a command without the wake word (ignored), then the wake word and the command
    mic = np.concatenate([wavs["what time is it"], silence(1.0), wavs["Hey Jarvis."],
                          wavs["what time is it"]])
    listener = MicListener(service, source=_file_mic(mic),
                           player=lambda cfg, rate: VirtualSpeaker(rate))
    assert await listener.start()
    await listener.wait()
    await listener.stop()
    kinds = [e["type"] for e in listener.events]
    assert kinds.count("wake") == 1 and listener.wakes == 1
    assert kinds.index("wake") < kinds.index("speech_start")   # deaf until the wake word
    assert kinds.count("result") == 1, kinds
    result = next(e for e in listener.events if e["type"] == "result")
    assert "time" in result["transcript"].lower() and result["answer"] == "It is noon."


async def test_listener_barge_in_stops_the_answer_and_takes_the_new_turn(tmp_path, wavs):
    stack = real_stack()
    rt = _runtime(tmp_path)
    pipe = SlowPipeline(answer="Here is a long answer that keeps going. " * 4)
    rt.pipeline = pipe
    service = VoiceService(rt, stack=stack)
    speaker = VirtualSpeaker(stack.tts.sample_rate)
    mic = np.concatenate([wavs["what time is it"], silence(2.5), wavs["stop the music"]])
    listener = MicListener(service, source=_file_mic(mic), player=lambda cfg, rate: speaker)
    assert await listener.start()
    await listener.wait()
    await listener.stop()
    assert [e["type"] for e in listener.events].count("barge_in") == 1
    assert pipe.cancel_tokens[0].cancelled and speaker.stopped_at is not None
    assert len(pipe.asked) == 2 and "music" in pipe.asked[1].lower()


@pytest.fixture
async def daemon(tmp_path):
    """A real daemon app (real voice models, fake pipeline stages) on a loopback port."""
    rt = _runtime(tmp_path)
    app = make_app(rt)
    app[VOICE_KEY].stack = real_stack()
    server = TestServer(app, host="127.0.0.1")
    client = TestClient(server)
    await client.start_server()
    yield rt, server.port, client
    await client.close()


def _no_local_models(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("chat loaded models although a daemon is up")
    monkeypatch.setattr(Runtime, "build", refuse)
    monkeypatch.setattr(VoiceService, "start", refuse)


async def test_chat_attaches_to_a_running_daemon_and_streams_the_microphone(
        daemon, tmp_path, wavs, monkeypatch, capsys):
    _, port, _ = daemon
    _no_local_models(monkeypatch)
    cfg = load_config(env={}).with_overrides(server={"port": port})
    speaker = VirtualSpeaker(22050)
    rc = await voice_cli.chat(cfg, False, source=FileSource(wavs["what time is it"],
                                                            realtime=True, tail_silence_s=0.8),
                              player=speaker)
    out = capsys.readouterr().out
    assert rc == 0
    assert f"attached to the daemon at http://127.0.0.1:{port}" in out
    assert "bot> It is noon." in out and "[skill/none]" in out
    assert len(speaker.heard()) > 0.3 * 22050      # the daemon's speech, played here


async def test_chat_text_mode_attached_keeps_one_conversation(daemon, monkeypatch, capsys):
    rt, port, _ = daemon
    _no_local_models(monkeypatch)
    lines = iter(["what time is it", "", "/quit"])
    monkeypatch.setattr(voice_cli, "_prompt", lambda: next(lines))
    cfg = load_config(env={}).with_overrides(server={"port": port})
    assert await voice_cli.chat(cfg, True) == 0
    out = capsys.readouterr().out
    assert "attached to the daemon" in out and "bot> It is noon." in out


async def test_chat_without_a_daemon_loads_the_models_itself(tmp_path, monkeypatch, capsys):
    import socket
    with socket.socket() as s:                     # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rt = _runtime(tmp_path)
    built = []

    def build(cfg, *a, **k):
        built.append(cfg)
        return rt
    monkeypatch.setattr(Runtime, "build", build)
    monkeypatch.setattr(VoiceService, "start", _use_shared_stack)
    lines = iter(["what time is it", "/quit"])
    monkeypatch.setattr(voice_cli, "_prompt", lambda: next(lines))
    cfg = load_config(env={}).with_overrides(server={"port": port})
    assert await voice_cli.chat(cfg, True) == 0
    out = capsys.readouterr().out
    assert f"no daemon at http://127.0.0.1:{port}: loading the models" in out
    assert built and "bot> It is noon." in out


async def _use_shared_stack(self):
    self.stack = real_stack()


async def test_serving_daemon_reports_its_microphone_in_healthz(daemon, tmp_path, wavs):
    rt, _, client = daemon
    service = client.app[VOICE_KEY]
    listener = await start_listener(service, source=_file_mic(silence(30.0)),
                                    player=lambda cfg, rate: VirtualSpeaker(rate))
    try:
        health = await (await client.get("/healthz")).json()
        assert health["microphone"] == "listening" and health["voice"] == "ok"
    finally:
        await listener.stop()
    health = await (await client.get("/healthz")).json()
    assert health["microphone"] == "stopped"


async def test_listener_on_the_default_sound_devices_of_a_pulseaudio_null_sink(
        pulse, tmp_path, wavs):  # noqa: F811  (the fixture imported above)
    """The daemon's own device path (sounddevice in and out), on a virtual microphone."""
    import sounddevice as sd
    sd._terminate()
    sd._initialize()                      # PortAudio must see the private PulseAudio
    from edge_runtime.audio.format import write_wav
    wav = tmp_path / "cmd.wav"
    write_wav(wav, np.concatenate([wavs["what time is it"], silence(1.0)]), 16000)
    service = VoiceService(_runtime(tmp_path, voice={"microphone": True}), stack=real_stack())
    listener = await start_listener(service)          # default devices: vspk.monitor, vspk
    try:
        assert listener.state == "listening", listener.health()
        await asyncio.sleep(1.0)          # PulseAudio loses about the first second
        play = await asyncio.create_subprocess_exec("paplay", "--device=vspk", str(wav),
                                                    env=pulse)
        await play.wait()
        for _ in range(80):               # up to 8 s for the answer to be spoken
            if listener.turns and not listener._player.playing:
                break
            await asyncio.sleep(0.1)
    finally:
        await listener.stop()
    kinds = [e["type"] for e in listener.events]
    assert "result" in kinds, kinds
    result = next(e for e in listener.events if e["type"] == "result")
    assert "time" in result["transcript"].lower() and result["answer"] == "It is noon."
    assert "barge_in" not in kinds        # it heard itself through the sink, and ignored it


async def test_chat_attached_without_the_daemons_token_is_a_clear_error(tmp_path, monkeypatch):
    from edge_runtime.errors import EdgeError
    rt = _runtime(tmp_path, server={"token": "s3cret"})
    app = make_app(rt)
    app[VOICE_KEY].stack = real_stack()
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        _no_local_models(monkeypatch)
        cfg = load_config(env={}).with_overrides(server={"port": client.server.port})
        with pytest.raises(EdgeError, match="refused the audio stream") as info:
            await voice_cli.chat(cfg, False, source=FileSource(silence(0.5)),
                                 player=VirtualSpeaker(22050))
        assert "server.token" in info.value.hint

"""Wyoming with the real voice models (silero, whisper tiny.en, Piper joe, microWakeWord)
over TCP on loopback, driven by the `wyoming` package's client; fake pipeline stages.
Plus the daemon itself (`edge-runtime serve --wyoming`) as a subprocess with every real
model, as Home Assistant would use it."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript, TranscriptChunk
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.handle import Handled
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop
from wyoming.wake import Detect, Detection

from edge_runtime.audio.format import read_wav_file, resample
from edge_runtime.config import load_config
from edge_runtime.models.store import ModelStore
from edge_runtime.runtime import Runtime
from edge_runtime.voice.service import VoiceService
from edge_runtime.voice.stack import model_paths
from edge_runtime.voice.wake import MicroWakeDetector
from edge_runtime.wyoming import WyomingServer
from tests.conftest import free_port
from tests.pipeline_fakes import make_pipeline
from tests.voice_fixtures import command_wav, real_stack, silence

pytestmark = pytest.mark.integration
RATE = 16_000


def pcm(x: np.ndarray) -> bytes:
    return (np.clip(x, -1, 1) * 32767).astype("<i2").tobytes()


@pytest.fixture
async def server(tmp_path):
    cfg = load_config(env={}).with_overrides(paths={"home": str(tmp_path)})
    p = make_pipeline(cfg=cfg)
    rt = Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p)
    port = free_port()
    srv = WyomingServer(rt, f"tcp://127.0.0.1:{port}", VoiceService(rt, stack=real_stack()))
    await srv.start()
    srv.port = port
    yield srv
    await srv.stop()


@pytest.fixture(scope="module")
def wavs(tmp_path_factory):
    d = tmp_path_factory.mktemp("wyoming")
    return {t: read_wav_file(command_wav(t, d)) for t in
            ("what time is it", "okay nabu", "turn on the kitchen lights")}


async def read_until(c, *types):
    out = []
    while True:
        ev = await c.read_event()
        assert ev is not None, f"closed before {types}: {[e.type for e in out]}"
        out.append(ev)
        if ev.type in types:
            return out


async def send_audio(c, data: bytes, *, rate=RATE, width=2, channels=1, chunk_s=0.1,
                     paced=False):
    step = int(rate * chunk_s) * width * channels
    await c.write_event(AudioStart(rate=rate, width=width, channels=channels).event())
    for i in range(0, len(data), step):
        await c.write_event(AudioChunk(rate=rate, width=width, channels=channels,
                                       audio=data[i:i + step]).event())
        if paced:
            await asyncio.sleep(chunk_s)      # a microphone: real time
    await c.write_event(AudioStop().event())


def client(port):
    return AsyncTcpClient("127.0.0.1", port, read_timeout=60)


async def test_speech_to_text_streams_pieces_in_real_time(server, wavs):
    async with client(server.port) as c:
        await c.write_event(Transcribe(language="en").event())
        await send_audio(c, pcm(wavs["turn on the kitchen lights"]), paced=True)
        events = await read_until(c, "transcript-stop")
    text = Transcript.from_event(next(e for e in events if e.type == "transcript")).text
    assert "kitchen lights" in text.lower()
    chunks = [TranscriptChunk.from_event(e).text for e in events if e.type == "transcript-chunk"]
    assert "".join(chunks).strip() == text


async def test_44k_stereo_and_8_bit_audio_are_understood(server, wavs):
    x = wavs["what time is it"]
    y = resample(x, RATE, 44_100)
    stereo = np.stack([y, y], axis=1).reshape(-1)
    u8 = np.clip(x * 127 + 128, 0, 255).astype(np.uint8).tobytes()
    for data, kw in ((pcm(stereo), {"rate": 44_100, "channels": 2}), (u8, {"width": 1})):
        async with client(server.port) as c:
            await c.write_event(Transcribe().event())
            await send_audio(c, data, **kw)
            ev = (await read_until(c, "transcript"))[-1]
        assert Transcript.from_event(ev).text.lower().startswith("what time is it"), kw


async def test_wake_word_detected_in_speech_and_not_in_other_speech(server, wavs):
    async with client(server.port) as c:
        await c.write_event(Detect(names=["okay_nabu"]).event())
        await send_audio(c, pcm(np.concatenate([silence(0.5), wavs["okay nabu"],
                                                silence(0.5)])))
        await c.write_event(Describe().event())
        events = await read_until(c, "info")
        det = [Detection.from_event(e) for e in events if e.type == "detection"]
        assert len(det) == 1 and det[0].name == "okay_nabu" and det[0].timestamp > 500
        assert "not-detected" not in [e.type for e in events]
        await c.write_event(Detect(names=["okay_nabu"]).event())
        await send_audio(c, pcm(wavs["what time is it"]))
        assert [e.type for e in await read_until(c, "not-detected")] == ["not-detected"]


def test_refractory_period_holds_back_a_repeat(wavs):
    # Piper renders differently each run (its noise is random), and whether a word is caught
    # can depend on where it falls in the model's 30 ms stride; the repeat starts at the same
    # stride phase as the first, so both copies are seen alike and only the refractory differs.
    w = wavs["okay nabu"]
    period = 160 * MicroWakeDetector("okay_nabu").stride
    gap = RATE + (-(len(w) + RATE)) % period
    x = np.concatenate([w, np.zeros(gap, np.float32), w, silence(0.5)])
    counts = {}
    for refractory in (0.5, 10.0):
        det = MicroWakeDetector("okay_nabu", refractory_s=refractory)
        counts[refractory] = len([d for i in range(0, len(x), 1600)
                                  for d in det.feed(x[i:i + 1600])])
    assert counts == {0.5: 2, 10.0: 1}


async def test_text_to_speech_sentence_by_sentence_and_streamed(server):
    async with client(server.port) as c:
        await c.write_event(Synthesize(text="Hello there. The kitchen lights are on.").event())
        events = await read_until(c, "audio-stop")
        rate = events[0].data["rate"]
        seconds = sum(AudioChunk.from_event(e).seconds for e in events
                      if e.type == "audio-chunk")
        assert events[0].type == "audio-start" and rate == 22050
        assert 1.5 < seconds < 6.0
        await c.write_event(SynthesizeStart().event())
        for piece in ("It is ", "noon. ", "Have a ", "nice day."):
            await c.write_event(SynthesizeChunk(text=piece).event())
        await c.write_event(SynthesizeStop().event())
        events = await read_until(c, "synthesize-stopped")
    streamed = sum(AudioChunk.from_event(e).seconds for e in events if e.type == "audio-chunk")
    assert 1.0 < streamed < 5.0
    assert [e.type for e in events if e.type != "audio-chunk"] == [
        "audio-start", "audio-stop", "synthesize-stopped"]


# -- the daemon as Home Assistant uses it -------------------------------------------------
@pytest.mark.e2e
def test_serve_with_wyoming_runs_the_whole_assist_flow(model_dir, tmp_path, wavs):
    port, http = free_port(), free_port()
    env = dict(os.environ, EDGE_RUNTIME_PATHS__HOME=str(tmp_path / "home"))
    log = tmp_path / "daemon.log"
    voice = model_paths(ModelStore(load_config(env={})))     # the pulled voice models
    paths = [a for key, role in (("vad.model_path", "vad"), ("asr.model_dir", "asr"),
                                 ("tts.model_path", "tts")) if role in voice
             for a in ("--set", f"{key}={voice[role]}")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_runtime.cli", "serve", "--port", str(http),
         "--wyoming", f"tcp://127.0.0.1:{port}", "--set", f"llm.model_dir={model_dir}",
         "--set", "llm.threads=1", "--set", "cloud.enabled=false",
         "--set", "scheduler.routing=local", *paths],
        env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT)
    try:
        asyncio.run(_assist(port, proc, wavs["what time is it"]))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        print(log.read_text()[-3000:])


async def _assist(port, proc, speech):
    end = time.monotonic() + 180
    while True:
        assert proc.poll() is None, "daemon exited"
        try:
            c = client(port)
            await c.connect()
            break
        except OSError:
            assert time.monotonic() < end, "Wyoming server did not start"
            await asyncio.sleep(0.3)
    try:
        await c.write_event(Describe().event())
        info = Info.from_event((await read_until(c, "info"))[-1])
        assert info.asr and info.tts and info.wake and info.handle
    finally:
        await c.disconnect()
    async with client(port) as c:                 # speech to text
        await c.write_event(Transcribe(language="en").event())
        await send_audio(c, pcm(speech))
        text = Transcript.from_event((await read_until(c, "transcript"))[-1]).text
    assert text.lower().startswith("what time is it")
    async with client(port) as c:                 # conversation: skills, cache, LLM
        await c.write_event(Transcript(text=text).event())
        handled = Handled.from_event((await read_until(c, "handled"))[-1])
        assert handled.context["route"] == "skill" and ":" in handled.text
        await c.write_event(Transcript(text="why is the sky blue").event())
        llm = Handled.from_event((await read_until(c, "handled", "not-handled"))[-1])
        assert llm.context["route"] in ("local", "cache") and len(llm.text.split()) >= 3
    async with client(port) as c:                 # text to speech
        await c.write_event(Synthesize(text=handled.text).event())
        events = await read_until(c, "audio-stop")
    assert sum(AudioChunk.from_event(e).seconds for e in events if e.type == "audio-chunk") > 0.5


@pytest.mark.e2e
def test_serve_exits_with_one_line_when_the_wyoming_port_is_taken(model_dir, tmp_path):
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = dict(os.environ, EDGE_RUNTIME_PATHS__HOME=str(tmp_path / "home"))
        r = subprocess.run(
            [sys.executable, "-m", "edge_runtime.cli", "serve", "--port", str(free_port()),
             "--wyoming", f"tcp://127.0.0.1:{port}", "--set", f"llm.model_dir={model_dir}",
             "--set", "cloud.enabled=false", "--set", "voice.enabled=false",
             "--set", "scheduler.calibrate_at_start=false", "--log-level", "ERROR"],
            env=env, capture_output=True, text=True, timeout=180)
    assert r.returncode != 0
    assert "cannot serve Wyoming on" in r.stderr and "Traceback" not in r.stderr, r.stderr


async def test_chat_gate_wakes_on_the_word_then_answers(wavs):
    """The `chat` loop's wake gate in front of a real voice session (real models)."""
    from edge_runtime.audio.playback import VirtualSpeaker
    from edge_runtime.voice.session import VoiceSession
    from edge_runtime.voice.wake import WakeGate
    stack = real_stack()
    events: list[dict] = []
    player = VirtualSpeaker(stack.tts.sample_rate)
    gate = WakeGate(MicroWakeDetector("okay_nabu"), player, emit=events.append)
    session = VoiceSession(stack, make_pipeline(), player, emit=gate.emit)
    gate.attach(session)
    mic = np.concatenate([wavs["what time is it"], silence(1.0), wavs["okay nabu"],
                          silence(0.3), wavs["what time is it"], silence(1.5)])
    try:
        for i in range(0, len(mic), 512):
            await gate.feed(mic[i:i + 512])
        await gate.finish()
    finally:
        session.close()
        gate.close()
    kinds = [e["type"] for e in events]
    assert kinds.count("wake") == 1 and kinds.index("wake") < kinds.index("transcript")
    transcripts = [e["text"] for e in events if e["type"] == "transcript"]
    assert len(transcripts) == 1 and "time" in transcripts[0].lower()   # not the first one
    assert [e["answer"] for e in events if e["type"] == "result"] == ["It is noon."]

"""The Wyoming server over real TCP on loopback, driven by the `wyoming` package's own
client; fake ASR/TTS engines and pipeline stages (the real models: integration tests)."""
from __future__ import annotations

import asyncio
import json
import logging

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript, TranscriptChunk
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.handle import Handled, NotHandled
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop
from wyoming.wake import Detect

from edge_runtime.config import load_config
from edge_runtime.errors import ConfigError
from edge_runtime.runtime import Runtime
from edge_runtime.voice.service import VoiceService
from edge_runtime.voice.stack import VoiceStack
from edge_runtime.wyoming import WyomingServer
from edge_runtime.wyoming.asr_out import after_committed, stable_prefix
from tests.conftest import free_port
from tests.pipeline_fakes import make_pipeline
from tests.voice_fixtures import EnergyVad, FakeAsr, FakeTts, silence, tone

RATE = 16_000


class RecordingAsr(FakeAsr):
    """FakeAsr that remembers how many seconds of 16 kHz audio each decode saw."""

    def __init__(self):
        super().__init__()
        self.seen: list[float] = []

    def transcribe(self, audio):
        self.seen.append(len(audio) / RATE)
        return super().transcribe(audio)


def pcm(x: np.ndarray) -> bytes:
    return (np.clip(x, -1, 1) * 32767).astype("<i2").tobytes()


@pytest.fixture
async def server(tmp_path):
    cfg = load_config(env={}).with_overrides(paths={"home": str(tmp_path)})
    p = make_pipeline(cfg=cfg)
    rt = Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p)
    stack = VoiceStack(cfg.with_overrides(asr={"partial_every_s": 0.2}), EnergyVad(),
                       RecordingAsr(), FakeTts(seconds_per_char=0.01))
    port = free_port()
    srv = WyomingServer(rt, f"tcp://127.0.0.1:{port}", VoiceService(rt, stack=stack))
    await srv.start()
    srv.port, srv.stack = port, stack
    yield srv
    await srv.stop()
    stack.close()


def client(srv) -> AsyncTcpClient:
    return AsyncTcpClient("127.0.0.1", srv.port, read_timeout=20)


async def read_until(c, *types: str) -> list[Event]:
    out = []
    while True:
        ev = await c.read_event()
        assert ev is not None, f"connection closed before {types}; got {[e.type for e in out]}"
        out.append(ev)
        if ev.type in types:
            return out


async def send_audio(c, audio: bytes, *, rate=RATE, width=2, channels=1, step=3200,
                     pause=0.0) -> None:
    await c.write_event(AudioStart(rate=rate, width=width, channels=channels).event())
    for i in range(0, len(audio), step):
        await c.write_event(AudioChunk(rate=rate, width=width, channels=channels,
                                       audio=audio[i:i + step]).event())
        if pause:
            await asyncio.sleep(pause)
    await c.write_event(AudioStop().event())


async def test_describe_lists_asr_tts_wake_and_handle(server):
    async with client(server) as c:
        await c.write_event(Describe().event())
        info = Info.from_event((await read_until(c, "info"))[-1])
    assert info.asr[0].models[0].languages == ["en"]
    assert info.asr[0].supports_transcript_streaming
    assert info.tts[0].voices[0].name == "fake-voice"
    assert info.tts[0].supports_synthesize_streaming
    assert {m.name for m in info.wake[0].models} == {"okay_nabu", "hey_jarvis",
                                                     "hey_mycroft", "alexa"}
    assert info.handle[0].models[0].languages == ["en"]


async def test_transcribe_streams_chunks_that_join_into_the_transcript(server):
    audio = pcm(np.concatenate([tone(1.5), silence(0.2)]))
    async with client(server) as c:
        await c.write_event(Transcribe(language="en").event())
        await send_audio(c, audio, pause=0.02)       # paced: partials run meanwhile
        events = await read_until(c, "transcript-stop")
    types = [e.type for e in events]
    assert types[0] == "transcript-start" and types[-2:] == ["transcript", "transcript-stop"]
    text = Transcript.from_event(events[-2]).text
    assert text == "what time is it"
    chunks = [TranscriptChunk.from_event(e).text for e in events if e.type == "transcript-chunk"]
    assert chunks and "".join(chunks).strip() == text


async def test_transcribe_with_no_audio_gives_an_empty_transcript(server):
    async with client(server) as c:
        await c.write_event(Transcribe().event())
        await c.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
        await c.write_event(AudioStop().event())
        events = await read_until(c, "transcript")
    assert Transcript.from_event(events[-1]).text == ""


async def test_other_formats_are_converted(server):
    x = tone(1.0)
    stereo_48k = np.repeat(np.interp(np.arange(48_000) / 3, np.arange(RATE), x), 2)
    async with client(server) as c:
        await c.write_event(Transcribe().event())
        await send_audio(c, pcm(stereo_48k), rate=48_000, channels=2, step=19_200)
        events = await read_until(c, "transcript")
    assert Transcript.from_event(events[-1]).text == "what time is it"
    assert server.stack.asr.seen[-1] == pytest.approx(1.0, abs=0.01)   # 1 s, 16 kHz mono


@pytest.mark.parametrize("rate,width,channels,what", [
    (4000, 2, 1, "4000 Hz"), (16000, 5, 1, "40-bit"), (16000, 2, 0, "0 channels"),
    (16000, "2", 1, "width")])
async def test_unsupported_audio_is_refused_with_what_is_supported(server, rate, width,
                                                                   channels, what):
    async with client(server) as c:
        await c.write_event(Transcribe().event())
        await c.write_event(Event("audio-start", {"rate": rate, "width": width,
                                                  "channels": channels}))
        err = Error.from_event((await read_until(c, "error"))[-1])
        assert what in err.text and "16000 Hz, 16-bit, mono" in err.text
        assert err.code == "bad_audio"
        # the connection still works
        await c.write_event(Transcribe().event())
        await send_audio(c, pcm(tone(0.5)))
        assert (await read_until(c, "transcript"))[-1].data["text"] == "what time is it"


async def test_audio_chunk_before_audio_start_is_an_error_once(server):
    async with client(server) as c:
        for _ in range(3):
            await c.write_event(AudioChunk(rate=RATE, width=2, channels=1,
                                           audio=pcm(tone(0.1))).event())
        await c.write_event(Describe().event())
        events = await read_until(c, "info")
    errors = [Error.from_event(e) for e in events if e.type == "error"]
    assert len(errors) == 1 and errors[0].code == "out_of_order"
    assert "audio-start" in errors[0].text


async def test_audio_stop_without_start_and_chunk_before_start_keep_serving(server):
    async with client(server) as c:
        await c.write_event(AudioStop().event())
        await c.write_event(SynthesizeChunk(text="x").event())
        await c.write_event(Describe().event())
        events = await read_until(c, "info")
    assert [e.data.get("code") for e in events if e.type == "error"] == ["out_of_order"] * 2


async def test_unknown_events_are_ignored(server):
    async with client(server) as c:
        await c.write_event(Event("frobnicate", {"x": 1}, payload=b"\x00" * 10))
        await c.write_event(Event("run-satellite"))
        await c.write_event(Describe().event())
        ev = await c.read_event()
    assert ev.type == "info"


async def test_malformed_events_get_an_error_and_the_connection_reads_on(server):
    async with client(server) as c:
        await c.write_event(Event("audio-start", {"width": 2}))      # no rate / channels
        await c.write_event(Event("synthesize", {}))                  # no text
        c._writer.write(b"this is not json\n")
        await c.write_event(Describe().event())
        events = await read_until(c, "info")
    errors = [e for e in events if e.type == "error"]
    assert len(errors) == 3
    assert "audio-start" in errors[0].data["text"] and "synthesize" in errors[1].data["text"]
    assert "JSON" in errors[2].data["text"]


async def test_an_oversized_payload_closes_that_connection_only(server):
    async with client(server) as c:
        header = {"type": "audio-chunk", "payload_length": 1 << 40}
        c._writer.write(json.dumps(header).encode() + b"\n")
        events = []
        while (ev := await c.read_event()) is not None:
            events.append(ev)
    assert events[-1].type == "error" and "payload_length" in events[-1].data["text"]
    async with client(server) as c:
        await c.write_event(Describe().event())
        assert (await c.read_event()).type == "info"


async def test_a_ten_minute_stream_is_bounded(server):
    minute = pcm(np.tile(tone(1.0), 60))
    async with client(server) as c:
        await c.write_event(Transcribe().event())
        await c.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
        for _ in range(10):
            for i in range(0, len(minute), 64_000):
                await c.write_event(AudioChunk(rate=RATE, width=2, channels=1,
                                               audio=minute[i:i + 64_000]).event())
        await c.write_event(AudioStop().event())
        events = await read_until(c, "transcript")
    errors = [Error.from_event(e) for e in events if e.type == "error"]
    assert len(errors) == 1 and errors[0].code == "audio_too_long"
    assert "60 s" in errors[0].text
    assert Transcript.from_event(events[-1]).text == "what time is it"


async def test_a_client_that_vanishes_mid_stream_leaves_no_error_log(server, caplog):
    caplog.set_level(logging.DEBUG)
    c = client(server)
    await c.connect()
    await c.write_event(Transcribe().event())
    await c.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
    await c.write_event(AudioChunk(rate=RATE, width=2, channels=1,
                                   audio=pcm(tone(0.5))).event())
    c._writer.write(b'{"type": "audio-chunk", "payload_length": 3200}\n' + b"\x00" * 100)
    await c.disconnect()                              # gone in the middle of a payload
    c = client(server)
    await c.connect()
    await c.write_event(Synthesize(text="A long answer. " * 200).event())
    await c.disconnect()                              # gone while the server speaks
    await asyncio.sleep(0.5)
    async with client(server) as c2:                  # the server keeps serving
        await c2.write_event(Describe().event())
        assert (await c2.read_event()).type == "info"
    loud = [r for r in caplog.records if r.levelno > logging.DEBUG
            and (r.name.startswith("edge_runtime.wyoming") or r.name == "asyncio")]
    assert not loud, [r.getMessage() for r in loud]


async def test_transcript_is_handled_by_the_pipeline(server):
    async with client(server) as c:
        await c.write_event(Transcript(text="what time is it").event())
        handled = Handled.from_event((await read_until(c, "handled"))[-1])
        await c.write_event(Transcript(text="   ").event())
        not_handled = NotHandled.from_event((await read_until(c, "not-handled"))[-1])
    assert handled.text == "It is noon."
    assert handled.context["route"] == "skill"
    assert handled.context["conversation_id"].startswith("wyoming-")
    assert "empty" in not_handled.text


async def test_conversation_id_from_the_client_is_kept(server):
    async with client(server) as c:
        await c.write_event(Transcript(text="tell me a story",
                                       context={"conversation_id": "ha-123"}).event())
        handled = Handled.from_event((await read_until(c, "handled"))[-1])
    assert handled.context == {"conversation_id": "ha-123", "route": "local",
                               "device": "cpu", "reason": handled.context["reason"]}
    assert handled.text == "Light scatters."


async def test_synthesize_streams_audio_sentence_by_sentence(server):
    tts = server.stack.tts
    async with client(server) as c:
        await c.write_event(Synthesize(text="First sentence here. And a second one!").event())
        events = await read_until(c, "audio-stop")
    assert events[0].type == "audio-start" and events[0].data["rate"] == tts.sample_rate
    chunks = [AudioChunk.from_event(e) for e in events if e.type == "audio-chunk"]
    seconds = sum(ch.seconds for ch in chunks)
    assert tts.calls == ["First sentence here.", "And a second one!"]
    assert seconds == pytest.approx(sum(len(t) for t in tts.calls) * 0.01, abs=0.01)


async def test_streaming_synthesize(server):
    tts = server.stack.tts
    async with client(server) as c:
        await c.write_event(SynthesizeStart().event())
        for piece in ("Hello the", "re. How are ", "you today", "?"):
            await c.write_event(SynthesizeChunk(text=piece).event())
        await c.write_event(Synthesize(text="Hello there. How are you today?").event())
        await c.write_event(SynthesizeStop().event())
        events = await read_until(c, "synthesize-stopped")
    types = [e.type for e in events]
    assert types[0] == "audio-start" and types[-2:] == ["audio-stop", "synthesize-stopped"]
    assert types.count("audio-start") == 1
    assert tts.calls == ["Hello there.", "How are you today?"]     # the plain one ignored


async def test_empty_synthesize_is_an_error(server):
    async with client(server) as c:
        await c.write_event(Synthesize(text="  ").event())
        err = Error.from_event((await read_until(c, "error"))[-1])
    assert "empty" in err.text and err.code == "bad_input"


async def test_detect_unknown_wake_word_and_silence(server):
    async with client(server) as c:
        await c.write_event(Detect(names=["hey_siri"]).event())
        err = Error.from_event((await read_until(c, "error"))[-1])
        assert err.code == "bad_wake_word" and "okay_nabu" in err.text
        await c.write_event(Detect(names=["okay_nabu"]).event())
        await send_audio(c, pcm(silence(1.0)))
        events = await read_until(c, "not-detected")
    assert [e.type for e in events] == ["not-detected"]


def test_stable_prefix():
    assert stable_prefix("what time", "what time is") == "what time "
    assert stable_prefix("what", "why") == ""


def test_the_final_decode_adds_only_what_follows_the_committed_words():
    sent = "Turn on the".split()
    assert after_committed(sent, "turn on the kitchen lights.".split()) == 3
    assert after_committed(sent, "Pern on the kitchen lights.".split()) == 3   # re-heard
    assert after_committed(sent, "Turn on thee kitchen lights.".split()) == 3  # last re-heard
    assert after_committed(sent, "Turn on".split()) == 2        # a shorter final adds nothing
    assert after_committed(sent, "What time is it?".split()) is None


def test_config_rejects_bad_uri_and_wake_word():
    with pytest.raises(ConfigError, match="wyoming.uri"):
        load_config(env={}, overrides={"wyoming": {"uri": "http://127.0.0.1:10700"}})
    with pytest.raises(ConfigError, match="wyoming.uri"):
        load_config(env={}, overrides={"wyoming": {"uri": "tcp://127.0.0.1"}})
    with pytest.raises(ConfigError, match="voice.wake_word"):
        load_config(env={}, overrides={"voice": {"wake_word": "hey_siri"}})
    cfg = load_config(env={}, overrides={"wyoming": {"uri": "tcp://127.0.0.1:10700"},
                                         "voice": {"wake_word": "hey_jarvis"}})
    assert cfg.wyoming.parsed() == ("tcp", "127.0.0.1", 10700)


async def test_a_port_in_use_is_a_config_error(server):
    other = WyomingServer(server.runtime, f"tcp://127.0.0.1:{server.port}", server.voice)
    with pytest.raises(ConfigError, match="cannot serve Wyoming"):
        await other.start()


async def test_only_speech_is_decoded_and_silence_gives_an_empty_transcript(server):
    asr = server.stack.asr
    async with client(server) as c:
        await c.write_event(Transcribe().event())
        await send_audio(c, pcm(silence(2.0)))
        events = await read_until(c, "transcript")
        assert Transcript.from_event(events[-1]).text == "" and asr.seen == []
        await c.write_event(Transcribe().event())
        await send_audio(c, pcm(np.concatenate([silence(0.5), tone(1.0), silence(1.5)])))
        events = await read_until(c, "transcript")
    assert Transcript.from_event(events[-1]).text == "what time is it"
    assert 1.0 <= asr.seen[-1] < 1.5         # the speech (+ pre-roll), not the 2 s of silence


async def test_every_sentence_of_a_long_text_is_spoken(server):
    tts = server.stack.tts
    text = " ".join(f"Sentence number {i} is here." for i in range(30))
    async with client(server) as c:
        await c.write_event(Synthesize(text=text).event())
        events = await read_until(c, "audio-stop")
    assert len(tts.calls) == 30
    seconds = sum(AudioChunk.from_event(e).seconds for e in events if e.type == "audio-chunk")
    assert seconds == pytest.approx(sum(len(t) for t in tts.calls) * 0.01, abs=0.05)

"""Wake word: the microWakeWord detector on non-speech, and the gate in front of a session
(a scripted detector stands in for the model; the real model on speech: integration)."""
from __future__ import annotations

import numpy as np
import pytest

from edge_runtime.audio.playback import VirtualSpeaker
from edge_runtime.clock import FakeClock
from edge_runtime.errors import BadInputError
from edge_runtime.voice.wake import (WAKE_WORDS, MicroWakeDetector, WakeDetection, WakeGate,
                                     load_wake, wake_models)
from tests.voice_fixtures import silence, tone

RATE = 16_000


class ScriptedDetector:
    """Detects the wake word in the chunks whose index is in ``at``."""

    name, phrase = "okay_nabu", "Okay Nabu"

    def __init__(self, at=()):
        self.at, self.i, self.resets = set(at), 0, 0

    def feed(self, audio):
        self.i += 1
        return [WakeDetection(self.name, self.phrase, self.i * 0.1, 0.99)] \
            if self.i - 1 in self.at else []

    def reset(self):
        self.resets += 1


class FakeSession:
    def __init__(self):
        self.fed, self.finished, self.interrupted = 0, 0, 0

    async def feed(self, chunk):
        self.fed += 1

    async def finish(self):
        self.finished += 1

    def interrupt(self):
        self.interrupted += 1


def gate_with(at=(), **kw):
    clock = FakeClock()
    events: list[dict] = []
    player = VirtualSpeaker(16_000, clock)
    gate = WakeGate(ScriptedDetector(at), player, emit=events.append, clock=clock, **kw)
    session = FakeSession()
    gate.attach(session)
    return gate, session, clock, events, player


CHUNK = np.zeros(1600, np.float32)       # 0.1 s


async def test_nothing_reaches_the_session_before_the_wake_word():
    gate, session, clock, events, _ = gate_with(at=(5,))
    for _ in range(5):
        await gate.feed(CHUNK)
        clock.advance(0.1)
    assert session.fed == 0 and gate.state == "waiting"
    await gate.feed(CHUNK)                           # chunk 5: the wake word
    assert gate.state == "listening" and events[-1]["type"] == "wake"
    await gate.feed(CHUNK)
    assert session.fed == 1                          # the audio after it goes on


async def test_the_listening_cue_plays():
    gate, _, _, _, player = gate_with(at=(0,))
    await gate.feed(CHUNK)
    heard = player.heard()
    assert len(heard) > 0.05 * 16_000 and np.abs(heard).max() > 1000


async def test_no_speech_after_the_wake_word_times_out_to_waiting():
    gate, session, clock, events, _ = gate_with(at=(0,), timeout_s=2.0, cue=False)
    await gate.feed(CHUNK)
    for _ in range(19):
        clock.advance(0.1)
        await gate.feed(CHUNK)
    assert gate.state == "listening"
    clock.advance(0.2)
    await gate.feed(CHUNK)
    assert gate.state == "waiting" and events[-1]["type"] == "wake_timeout"
    fed = session.fed
    clock.advance(0.1)
    await gate.feed(CHUNK)
    assert session.fed == fed and gate.detector.resets == 1


async def test_speech_and_the_answer_hold_the_timeout_then_back_to_waiting():
    gate, session, clock, events, _ = gate_with(at=(0,), timeout_s=1.0, cue=False)
    await gate.feed(CHUNK)
    gate.emit({"type": "speech_start"})
    for _ in range(30):                  # a long utterance: no timeout while speaking
        clock.advance(0.1)
        await gate.feed(CHUNK)
    assert gate.state == "listening"
    gate.emit({"type": "transcript", "text": "what time is it"})
    clock.advance(5.0)                   # the answer takes a while
    await gate.feed(CHUNK)
    assert gate.state == "listening"
    gate.emit({"type": "result", "answer": "noon"})
    assert gate.state == "waiting"       # no follow-up turns configured
    assert [e["type"] for e in events] == ["wake", "speech_start", "transcript", "result"]


async def test_follow_up_turn_without_the_wake_word():
    gate, session, clock, events, _ = gate_with(at=(0,), timeout_s=1.0, follow_up_s=4.0,
                                                cue=False)
    await gate.feed(CHUNK)
    gate.emit({"type": "speech_start"})
    gate.emit({"type": "transcript", "text": "set a timer"})
    gate.emit({"type": "result", "answer": "For how long?"})
    assert gate.state == "listening"
    clock.advance(3.0)
    await gate.feed(CHUNK)
    assert gate.state == "listening"     # within the follow-up window: still heard
    fed = session.fed
    clock.advance(1.5)
    await gate.feed(CHUNK)
    assert gate.state == "waiting" and session.fed == fed


async def test_the_wake_word_interrupts_an_answer_being_spoken():
    gate, session, clock, events, player = gate_with(at=(0, 3), cue=False)
    await gate.feed(CHUNK)
    gate.emit({"type": "speech_start"})
    gate.emit({"type": "transcript", "text": "tell me a story"})
    gate.emit({"type": "result", "answer": "Once upon a time"})
    assert gate.state == "waiting"
    player.play(np.full(16_000 * 5, 1000, np.int16), 16_000)   # the answer still plays
    for _ in range(3):                   # the third chunk holds the wake word
        await gate.feed(CHUNK)
    assert session.interrupted == 1 and gate.state == "listening"


def test_micro_detector_hears_no_wake_word_in_silence_or_tones():
    det = MicroWakeDetector("okay_nabu")
    x = np.concatenate([silence(1.0), tone(1.0, amp=0.3), silence(0.5)])
    found = [d for i in range(0, len(x), 1600) for d in det.feed(x[i:i + 1600])]
    assert found == []
    det.reset()
    assert det.feed(silence(0.5)) == []


def test_wake_words_and_loading():
    assert [m.name for m in wake_models()] == list(WAKE_WORDS)
    assert {m.phrase for m in wake_models()} == {"Okay Nabu", "Hey Jarvis", "Hey Mycroft",
                                                 "Alexa"}
    assert load_wake("none") is None
    assert load_wake("hey_jarvis").phrase == "Hey Jarvis"
    with pytest.raises(BadInputError, match="hey_siri"):
        load_wake("hey_siri")


def test_chat_builds_the_gate_from_the_config():
    from types import SimpleNamespace

    from edge_runtime.config import load_config
    from edge_runtime.voice.cli import _wake_gate
    player = VirtualSpeaker(16_000)
    off = SimpleNamespace(runtime=SimpleNamespace(cfg=load_config(env={})))
    assert _wake_gate(off, player) is None
    cfg = load_config(env={}, overrides={"voice": {"wake_word": "hey_jarvis",
                                                   "wake_timeout_s": 5, "follow_up_s": 3}})
    gate = _wake_gate(SimpleNamespace(runtime=SimpleNamespace(cfg=cfg)), player)
    assert gate.detector.name == "hey_jarvis" and gate.state == "waiting"
    assert (gate.timeout_s, gate.follow_up_s) == (5.0, 3.0)
    gate.close()

"""The voice loop with fake engines at the edges: turns, streamed speech, barge-in, echo.

Audio is fed chunk by chunk while a FakeClock advances by each chunk's duration, so the
virtual speaker "plays" in step with the microphone, deterministically.
"""
import asyncio

import numpy as np
import pytest

from edge_runtime.audio.playback import VirtualSpeaker
from edge_runtime.clock import FakeClock
from edge_runtime.config import Config
from edge_runtime.types import Intent, Result, Timings
from edge_runtime.voice.session import VoiceSession
from edge_runtime.voice.stack import VoiceStack
from tests.pipeline_fakes import make_pipeline
from tests.voice_fixtures import EnergyVad, FakeAsr, FakeTts, chunks, silence, tone

LONG_ANSWER = "First sentence of a long answer. " * 6


class SlowPipeline:
    """Answers every request with ``answer``, piece by piece; records cancellation."""

    def __init__(self, answer=LONG_ANSWER, delay_s=0.0):
        self.answer, self.delay_s = answer, delay_s
        self.asked, self.cancel_tokens = [], []

    async def ask(self, text, *, cancel=None, timings=None, budget_ms=None, sink=None,
                  session=None, unsure=frozenset()):
        self.asked.append(text)
        self.cancel_tokens.append(cancel)
        for word in self.answer.split(" "):
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            sink.piece(word + " ")
        return Result(text, Intent("oos", 0.1), "local", "cpu", "test", self.answer,
                      timings or Timings())


def _stack(asr=None, tts=None, *, asr_partials=True, barge_in=True):
    cfg = Config().with_overrides(vad={"end_silence_ms": 256, "pause_ms": 96},
                                  asr={"partial_every_s": 0.2, "partials": asr_partials},
                                  voice={"barge_in": barge_in})
    return VoiceStack(cfg, EnergyVad(), asr or FakeAsr(), tts or FakeTts())


async def _feed(session, clock, audio, *, echo_from=None, echo_gain=0.0):
    """Feed audio as a microphone would; optionally mix in what the speaker plays."""
    for c in chunks(audio):
        if echo_from is not None and echo_from.playing and echo_gain:
            level = echo_from.recent_peak(0.05)
            c = c + (echo_gain * level * np.sin(np.arange(len(c)) * 0.1)).astype(np.float32)
        clock.advance(len(c) / 16000)
        await session.feed(c)
        await asyncio.sleep(0)                 # let thread results reach the loop


async def _settle(session):
    """Wait (real time) until the current turn is answered and its speech rendered."""
    for _ in range(500):
        await asyncio.sleep(0.01)
        if session._task is not None and session._task.done():
            return
    raise AssertionError("the turn did not finish")


async def test_a_spoken_request_is_transcribed_answered_and_spoken():
    clock = FakeClock()
    stack = _stack()
    speaker = VirtualSpeaker(16000, clock)
    events = []
    session = VoiceSession(stack, make_pipeline(), speaker, emit=events.append, clock=clock)
    await _feed(session, clock, np.concatenate([silence(0.5), tone(1.0)]))
    for _ in range(500):                       # partials come from the ASR thread
        if any(e["type"] == "partial" for e in events):
            break
        await asyncio.sleep(0.01)
    await _feed(session, clock, silence(0.6))
    await session.finish()
    kinds = [e["type"] for e in events]
    assert kinds[0] == "speech_start"
    assert "partial" in kinds
    assert kinds.index("transcript") < kinds.index("result")
    result = next(e for e in events if e["type"] == "result")
    assert result["transcript"] == "what time is it"
    assert result["route"] == "skill"
    assert stack.tts.calls == ["It is noon."]
    assert len(speaker.heard()) > 0
    assert session.records[0]["first_audio_ms"] is not None
    stack.close()


async def test_the_final_decode_starts_at_the_pause_and_is_reused():
    clock = FakeClock()
    asr = FakeAsr()
    stack = _stack(asr=asr, asr_partials=False)
    session = VoiceSession(stack, make_pipeline(), VirtualSpeaker(16000, clock), clock=clock)
    await _feed(session, clock, np.concatenate([tone(1.0), silence(0.6)]))
    await session.finish()
    assert asr.decodes == 1                      # prefetch at the pause == the final
    stack.close()


async def test_silence_and_blips_start_no_turn():
    clock = FakeClock()
    pipe = SlowPipeline()
    stack = _stack()
    events = []
    session = VoiceSession(stack, pipe, VirtualSpeaker(16000, clock), emit=events.append,
                           clock=clock)
    await _feed(session, clock, np.concatenate([silence(1.0), tone(0.07), silence(1.0)]))
    await session.finish()
    assert pipe.asked == []
    assert "result" not in [e["type"] for e in events]
    stack.close()


async def test_speech_during_playback_stops_it_and_cancels_the_request():
    clock = FakeClock()
    pipe = SlowPipeline(delay_s=0.001)
    stack = _stack(tts=FakeTts(seconds_per_char=0.03))
    speaker = VirtualSpeaker(16000, clock)
    events = []
    session = VoiceSession(stack, pipe, speaker, emit=events.append, clock=clock)
    await _feed(session, clock, np.concatenate([tone(0.8), silence(0.5)]))
    await _settle(session)
    await _feed(session, clock, silence(1.5))   # the answer plays; the guard learns the room
    assert speaker.playing
    heard_before = len(speaker.heard())
    await _feed(session, clock, np.concatenate([tone(0.8, amp=0.6), silence(0.6)]))
    await session.finish()
    kinds = [e["type"] for e in events]
    assert "barge_in" in kinds
    barge = next(e for e in events if e["type"] == "barge_in")
    assert barge["ms"] < 150.0                 # onset -> stopped, in audio time
    assert speaker.stopped_at is not None
    assert pipe.cancel_tokens[0].cancelled
    assert len(pipe.asked) == 2                # the interruption became the next turn
    assert len(speaker.heard()) < heard_before + int(16000 * 0.3 * len(LONG_ANSWER) / 10)
    stack.close()


async def test_the_assistant_does_not_barge_in_on_its_own_echo():
    clock = FakeClock()
    pipe = SlowPipeline()
    stack = _stack(tts=FakeTts(seconds_per_char=0.03, amp=0.8))
    speaker = VirtualSpeaker(16000, clock)
    events = []
    session = VoiceSession(stack, pipe, speaker, emit=events.append, clock=clock)
    await _feed(session, clock, np.concatenate([tone(0.8), silence(0.5)]))
    await _settle(session)
    # four seconds of the answer coming back through the "room" at 0.3 of its level
    await _feed(session, clock, silence(4.0), echo_from=speaker, echo_gain=0.3)
    assert "barge_in" not in [e["type"] for e in events]
    assert len(pipe.asked) == 1
    stack.close()


@pytest.mark.parametrize("enabled", [False])
async def test_barge_in_can_be_switched_off(enabled):
    clock = FakeClock()
    pipe = SlowPipeline()
    stack = _stack(barge_in=enabled)
    speaker = VirtualSpeaker(16000, clock)
    events = []
    session = VoiceSession(stack, pipe, speaker, emit=events.append, clock=clock)
    await _feed(session, clock, np.concatenate([tone(0.8), silence(0.5)]))
    await _settle(session)
    await _feed(session, clock, np.concatenate([tone(0.8, amp=0.6), silence(0.1)]))
    assert "barge_in" not in [e["type"] for e in events]
    assert not pipe.cancel_tokens[0].cancelled
    stack.close()


async def test_a_repeated_answer_is_spoken_from_the_audio_cache():
    clock = FakeClock()
    tts = FakeTts()
    stack = _stack(tts=tts)
    speaker = VirtualSpeaker(16000, clock)
    session = VoiceSession(stack, make_pipeline(), speaker, clock=clock)
    for _ in range(2):
        await _feed(session, clock, np.concatenate([tone(0.8), silence(0.6)]))
        await _settle(session)
        await _feed(session, clock, silence(2.0))        # let the answer finish playing
    assert tts.calls == ["It is noon."]                  # rendered once, played twice
    assert len(session.records) == 2
    assert stack.audio_cache.hits == 1
    stack.close()


class BusyPipeline:
    """Refuses every request at once, as the scheduler does when nothing can start in time."""

    async def ask(self, text, **_):
        from edge_runtime.errors import OverloadedError
        raise OverloadedError("busy: neither can start within 300 ms", retry_after_s=2)


async def test_a_refused_request_is_answered_with_a_short_spoken_busy():
    from edge_runtime.voice.session import BUSY_TEXT
    clock = FakeClock()
    stack = _stack()
    speaker = VirtualSpeaker(16000, clock)
    events = []
    session = VoiceSession(stack, BusyPipeline(), speaker, emit=events.append, clock=clock)
    await _feed(session, clock, np.concatenate([silence(0.5), tone(1.0), silence(0.6)]))
    await session.finish()
    busy = next(e for e in events if e["type"] == "busy")
    assert busy["error"]["code"] == "overloaded" and busy["error"]["retry_after_s"] == 2
    assert " ".join(stack.tts.calls) == BUSY_TEXT and len(speaker.heard()) > 0
    stack.close()

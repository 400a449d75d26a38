"""Endpointing state machine, driven by scripted VAD probabilities (audio time, no clock)."""
import numpy as np
import pytest

from edge_runtime.config import Config, VadConfig
from edge_runtime.errors import ConfigError
from edge_runtime.vad import Endpointer, SpeechAudio, SpeechEnd, SpeechPause
from tests.voice_fixtures import ScriptedVad

F = 512 / 16000        # 32 ms frames


def _run(probs, cfg=None, extra_frames=0):
    vad = ScriptedVad(probs)
    ep = Endpointer(vad, cfg or VadConfig(end_silence_ms=320, pause_ms=96,
                                          start_ms=64, preroll_ms=128, min_speech_ms=96))
    # frame i carries the value i so the audio in events can be traced back to frames
    audio = np.concatenate([np.full(512, i, np.float32)
                            for i in range(len(probs) + extra_frames)])
    return ep, ep.feed(audio)


def _kinds(events):
    return [type(e).__name__ for e in events if not isinstance(e, SpeechAudio)]


def test_utterance_starts_after_start_ms_and_includes_preroll():
    probs = [0] * 10 + [1] * 10 + [0] * 12
    ep, events = _run(probs)
    assert _kinds(events) == ["SpeechStart", "SpeechPause", "SpeechEnd"]
    start = events[0]
    assert start.t_s == pytest.approx(10 * F)
    end = [e for e in events if isinstance(e, SpeechEnd)][0]
    frames = sorted(set(end.audio.astype(int).tolist()))
    assert frames[0] == 10 + 2 - 4          # 128 ms pre-roll = 4 frames before the 2nd frame
    assert end.reason == "silence"
    assert end.t_speech_end == pytest.approx(20 * F)
    assert end.t_detected == pytest.approx(30 * F)     # 10 silent frames = 320 ms


def test_pause_snapshot_equals_final_audio_and_streamed_audio():
    probs = [1] * 10 + [0] * 12
    _, events = _run(probs)
    pause = next(e for e in events if isinstance(e, SpeechPause))
    end = next(e for e in events if isinstance(e, SpeechEnd))
    np.testing.assert_array_equal(pause.audio, end.audio)
    # what was streamed before the pause is exactly the snapshot
    streamed = []
    for e in events:
        if isinstance(e, SpeechPause):
            break
        if isinstance(e, SpeechAudio):
            streamed.append(e.samples)
    np.testing.assert_array_equal(np.concatenate(streamed), pause.audio)


def test_speech_resuming_after_a_pause_is_not_an_end():
    probs = [1] * 8 + [0] * 4 + [1] * 8 + [0] * 12
    _, events = _run(probs)
    assert _kinds(events) == ["SpeechStart", "SpeechPause", "SpeechResume", "SpeechPause",
                              "SpeechEnd"]
    end = events[-1]
    assert end.t_speech_end == pytest.approx(20 * F)


def test_blip_ends_as_too_short():
    _, events = _run([0] * 3 + [1] * 2 + [0] * 12)
    assert _kinds(events) == ["SpeechStart", "SpeechEnd"]
    assert events[-1].reason == "too_short"


def test_a_single_frame_does_not_start_speech():
    _, events = _run([1, 0, 1, 0, 1, 0] * 4)
    assert _kinds(events) == []


def test_max_length_cuts_a_long_utterance():
    cfg = VadConfig(max_utterance_s=1.0, start_ms=64, end_silence_ms=300)
    _, events = _run([1] * 100, cfg)
    ends = [e for e in events if isinstance(e, SpeechEnd)]
    assert ends and ends[0].reason == "max_length"
    assert len(ends[0].audio) <= 16000 + 512


def test_hysteresis_band_counts_as_silence_only_after_a_silent_frame():
    _, events = _run([1] * 6 + [0.4] * 20)
    assert _kinds(events) == ["SpeechStart"]      # in the band, speech goes on
    _, events = _run([1] * 6 + [0.4] * 3 + [0] + [0.4] * 12)
    end = next(e for e in events if isinstance(e, SpeechEnd))
    # after a silent frame, band frames count as silence
    assert end.t_speech_end == pytest.approx(9 * F)


def test_flush_ends_an_open_utterance():
    ep, events = _run([1] * 10)
    assert _kinds(events) == ["SpeechStart"]
    assert _kinds(ep.flush()) == ["SpeechEnd"]
    assert ep.flush() == []


def test_feeding_in_odd_sizes_gives_the_same_events():
    probs = [0] * 5 + [1] * 10 + [0] * 12
    audio = np.concatenate([np.full(512, i, np.float32) for i in range(len(probs))])
    ep1 = Endpointer(ScriptedVad(probs))
    a = ep1.feed(audio)
    ep2 = Endpointer(ScriptedVad(probs))
    b = []
    for i in range(0, len(audio), 700):
        b += ep2.feed(audio[i:i + 700])
    assert _kinds(a) == _kinds(b)
    np.testing.assert_array_equal(a[-1].audio, b[-1].audio)


def test_bad_config_is_refused():
    with pytest.raises(ConfigError):
        Config(vad=VadConfig(threshold=0.3, neg_threshold=0.5)).validate()
    with pytest.raises(ConfigError):
        Config(vad=VadConfig(end_silence_ms=50, pause_ms=96)).validate()

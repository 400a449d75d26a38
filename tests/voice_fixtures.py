"""Fakes and helpers for the voice tests (stage prefix: voice)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edge_runtime.asr.base import BufferedStream, Transcript

RATE = 16_000


class ScriptedVad:
    """Returns the probabilities it is given, one per frame (then 0.0)."""

    name = "scripted"
    frame_samples = 512

    def __init__(self, probs=()):
        self.probs = list(probs)
        self.i = 0

    def prob(self, frame):
        p = self.probs[self.i] if self.i < len(self.probs) else 0.0
        self.i += 1
        return p

    def reset(self):
        pass

    def fork(self):
        return ScriptedVad(self.probs)


class EnergyVad:
    """Speech when a frame's RMS exceeds a level: a stand-in for silero in unit tests."""

    name = "energy"
    frame_samples = 512

    def __init__(self, level=0.05):
        self.level = level

    def prob(self, frame):
        return 1.0 if float(np.sqrt(np.mean(frame ** 2))) > self.level else 0.0

    def reset(self):
        pass

    def fork(self):
        return EnergyVad(self.level)


class FakeAsr:
    """Says ``text`` for any audio with at least ``min_s`` seconds; counts decodes."""

    name = "fake"

    def __init__(self, text="what time is it", min_s=0.1):
        self.text, self.min_s, self.decodes = text, min_s, 0

    def transcribe(self, audio):
        self.decodes += 1
        dur = len(audio) / RATE
        return Transcript(self.text if dur >= self.min_s else "", self.name, dur, 0.001)

    def stream(self):
        return BufferedStream(self, 0.2)


class FakeTts:
    """A 300 Hz tone, ``seconds_per_char`` long per character, one chunk per call."""

    name = "fake"
    voice = "fake-voice"
    sample_rate = 16_000

    def __init__(self, seconds_per_char=0.05, amp=0.5):
        self.spc, self.amp, self.calls = seconds_per_char, amp, []

    def synthesize(self, text):
        self.calls.append(text)
        n = int(len(text) * self.spc * self.sample_rate)
        t = np.arange(n) / self.sample_rate
        yield (self.amp * 32767 * np.sin(2 * np.pi * 300 * t)).astype(np.int16)


def tone(seconds, amp=0.3, freq=220.0):
    t = np.arange(int(seconds * RATE)) / RATE
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def silence(seconds):
    return np.zeros(int(seconds * RATE), np.float32)


def chunks(x, n=512):
    return [x[i:i + n] for i in range(0, len(x), n)]


# -- real models (integration tests) ---------------------------------------------------------
_REAL: dict = {}


def real_stack(**sections):
    """The real voice stack (silero + whisper tiny.en + Piper joe), loaded once per process:
    models from the model store when pulled, else from the installed model packages."""
    import pytest

    from edge_runtime.config import Config, load_config
    from edge_runtime.errors import EdgeError
    from edge_runtime.models.store import ModelStore
    from edge_runtime.voice.stack import VoiceStack, model_paths
    key = repr(sorted(sections.items()))
    if key not in _REAL:
        try:
            paths = model_paths(ModelStore(load_config(env={})))
            _REAL[key] = VoiceStack.load(Config().with_overrides(**sections),
                                         paths=paths)
        except EdgeError as exc:
            pytest.fail(f"voice models unavailable: {exc.one_line()} — install the extras "
                        "(tts, asr-whisper, webrtcvad-wheels) and run `edge-runtime models "
                        "pull`")
    return _REAL[key]


def _fixture_tts():
    if "fixture-tts" not in _REAL:
        from edge_runtime.config import load_config
        from edge_runtime.models.store import ModelStore
        from edge_runtime.tts.piper import PiperTts
        from edge_runtime.voice.stack import model_paths
        path = model_paths(ModelStore(load_config(env={}))).get("tts")
        _REAL["fixture-tts"] = PiperTts(path, deterministic=True)
    return _REAL["fixture-tts"]


def command_wav(text: str, out_dir) -> Path:
    """A Piper rendering of ``text`` as a 16 kHz WAV (0.3 s of silence either side), the
    same samples in every run (Piper's sampling noise off), so a test sees the audio it saw
    yesterday."""
    from edge_runtime.audio.format import resample, write_wav
    path = Path(out_dir) / (text.replace(" ", "_")[:60] + ".wav")
    if not path.is_file():
        tts = _fixture_tts()
        audio = np.concatenate(list(tts.synthesize(text))).astype(np.float32) / 32768.0
        x = resample(audio, tts.sample_rate, RATE)
        write_wav(path, np.concatenate([silence(0.3), x, silence(0.3)]), RATE)
    return path

"""[audio] [vad] [asr] [tts] [voice] config sections map onto VoiceSettings."""
from dataclasses import dataclass

from edge_runtime.voice.settings import settings_from_config
from edge_runtime.voice.stack import VoiceSettings


@dataclass(frozen=True)
class _Audio:
    input_device: str = "hw:1"
    max_seconds: float = 30.0


@dataclass(frozen=True)
class _Vad:
    backend: str = "webrtc"
    end_silence_ms: float = 400.0
    threshold: float = 0.6


@dataclass(frozen=True)
class _Asr:
    backend: str = "pocketsphinx"
    partials: bool = False


@dataclass(frozen=True)
class _Tts:
    cache_mb: int = 8


@dataclass(frozen=True)
class _Voice:
    barge_in: bool = False


@dataclass(frozen=True)
class _Cfg:
    audio: _Audio = _Audio()
    vad: _Vad = _Vad()
    asr: _Asr = _Asr()
    tts: _Tts = _Tts()
    voice: _Voice = _Voice()


def test_sections_map_onto_settings():
    s = settings_from_config(_Cfg())
    assert (s.input_device, s.max_seconds) == ("hw:1", 30.0)
    assert s.vad_backend == "webrtc"
    assert (s.endpoint.end_silence_ms, s.endpoint.threshold) == (400.0, 0.6)
    assert (s.asr_backend, s.asr_partials) == ("pocketsphinx", False)
    assert s.tts_cache_mb == 8 and s.barge_in is False


def test_a_config_without_voice_sections_gives_the_defaults():
    assert settings_from_config(object()) == VoiceSettings()

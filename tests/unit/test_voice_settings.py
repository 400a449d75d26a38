"""The voice stages read the one validated Config: [audio] [vad] [asr] [tts] [voice]."""
import pytest

from edge_runtime.config import Config, load_config
from edge_runtime.errors import ConfigError
from edge_runtime.voice.session import VoiceSession
from edge_runtime.voice.stack import VoiceStack
from tests.voice_fixtures import EnergyVad, FakeAsr, FakeTts

TOML = """
[audio]
input_device = "hw:1"
max_seconds = 30.0
[vad]
backend = "webrtc"
end_silence_ms = 400.0
threshold = 0.6
[asr]
backend = "pocketsphinx"
partials = false
[tts]
cache_mb = 8
[voice]
barge_in = false
"""


def test_sections_reach_the_voice_stack_and_its_endpointer(tmp_path):
    path = tmp_path / "edge.toml"
    path.write_text(TOML)
    cfg = load_config(path, env={})
    stack = VoiceStack(cfg, EnergyVad(), FakeAsr(), FakeTts())
    session = VoiceSession(stack, pipeline=None, player=None)
    assert (stack.cfg.audio.input_device, stack.cfg.audio.max_seconds) == ("hw:1", 30.0)
    assert stack.cfg.vad.backend == "webrtc"
    assert (session.endpointer.cfg.end_silence_ms, session.endpointer.cfg.threshold) == \
        (400.0, 0.6)
    assert (stack.cfg.asr.backend, stack.cfg.asr.partials) == ("pocketsphinx", False)
    assert stack.audio_cache.max_bytes == 8 * 1024 * 1024
    assert stack.cfg.voice.barge_in is False


def test_a_config_without_voice_sections_gives_the_defaults(tmp_path):
    path = tmp_path / "edge.toml"
    path.write_text("[llm]\nthreads = 1\n")
    assert load_config(path, env={}).vad == Config().vad


@pytest.mark.parametrize("section, key, value", [
    ("vad", "threshold", "1.5"),
    ("vad", "neg_threshold", "0.9"),        # above threshold (0.5)
    ("vad", "pause_ms", "900"),             # longer than end_silence_ms (256)
    ("vad", "max_utterance_s", "0"),
    ("asr", "beam_size", "0"),
    ("tts", "first_chunk_max_chars", "4"),
])
def test_a_bad_voice_value_fails_load_config_naming_the_key(section, key, value):
    with pytest.raises(ConfigError, match=f"{section}.{key}"):
        load_config(env={f"EDGE_RUNTIME_{section.upper()}__{key.upper()}": value})

"""`ask --wav FILE --speak OUT.wav` and `chat --text` through the voice CLI functions."""
import wave

import pytest

from edge_runtime.audio.errors import NoSpeechError
from edge_runtime.audio.format import wav_bytes
from edge_runtime.errors import BadInputError
from edge_runtime.runtime import Runtime
from edge_runtime.voice import cli as voice_cli
from edge_runtime.voice.service import VoiceService
from tests.pipeline_fakes import make_pipeline
from tests.voice_fixtures import command_wav, real_stack, silence

pytestmark = pytest.mark.integration


@pytest.fixture
def runtime():
    p = make_pipeline()
    return Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p)


@pytest.fixture(autouse=True)
def shared_stack(monkeypatch):
    """The CLI loads the stack per call; tests reuse one loaded stack instead."""
    stack = real_stack()

    async def start(self):
        self.stack = stack
    monkeypatch.setattr(VoiceService, "start", start)


async def test_ask_wav_writes_the_spoken_answer(runtime, tmp_path):
    wav = command_wav("what time is it", tmp_path)
    out = await voice_cli.ask_wav(runtime, str(wav), str(tmp_path / "answer.wav"))
    assert out["transcript"].lower().startswith("what time")
    assert out["route"] == "skill" and out["answer"] == "It is noon."
    assert set(out["timings_ms"]) >= {"asr", "nlu", "cache", "first_token", "total"}
    with wave.open(str(tmp_path / "answer.wav")) as w:
        assert w.getnframes() > 0.3 * w.getframerate()


async def test_ask_text_with_speak_writes_the_spoken_answer(runtime, tmp_path):
    out = await voice_cli.ask_text_spoken(runtime, "what time is it", str(tmp_path / "a.wav"))
    assert out["answer"] == "It is noon." and out["voice_ms"]["first_audio"] is not None
    with wave.open(str(tmp_path / "a.wav")) as w:
        assert w.getnframes() > 0.3 * w.getframerate()


async def test_ask_wav_bad_input_is_a_bad_input_error(runtime, tmp_path):
    (tmp_path / "bad.wav").write_bytes(b"RIFF....WAVEfmt ")
    with pytest.raises(BadInputError):
        await voice_cli.ask_wav(runtime, str(tmp_path / "bad.wav"), None)
    (tmp_path / "quiet.wav").write_bytes(wav_bytes(silence(2.0), 16000))
    with pytest.raises(NoSpeechError):
        await voice_cli.ask_wav(runtime, str(tmp_path / "quiet.wav"), None)
    with pytest.raises(BadInputError, match="cannot read"):
        await voice_cli.ask_wav(runtime, str(tmp_path / "missing.wav"), None)


async def test_chat_text_mode_answers_typed_lines(runtime, monkeypatch, capsys):
    lines = iter(["what time is it", "", "/quit"])
    monkeypatch.setattr(voice_cli, "_prompt", lambda: next(lines))
    assert await voice_cli.run_chat(runtime, True) == 0
    out = capsys.readouterr().out
    assert "bot> It is noon." in out and "[skill/none]" in out

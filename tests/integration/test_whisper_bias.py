"""Whisper tiny.en biased toward the home's vocabulary (``asr.bias``): the prompt steers
the decode, never shows up in the transcript, and "" restores the plain decode."""
import pytest

from edge_runtime.asr import load_asr
from edge_runtime.asr.bias import CommandVocabulary
from edge_runtime.asr.wer import word_errors
from edge_runtime.audio.format import read_wav_file
from tests.voice_fixtures import command_wav, real_stack

pytestmark = pytest.mark.integration
SAID = "turn off the patio heater"


@pytest.fixture(scope="module")
def asr():
    stack = real_stack()                   # skips without the models; its paths are ours
    return load_asr("whisper", model_dir=str(stack.asr.model_dir))


def test_the_prompt_biases_without_leaking_and_can_be_cleared(asr, tmp_path) -> None:
    audio = read_wav_file(command_wav(SAID, tmp_path))
    plain = asr.transcribe(audio).text
    vocab = CommandVocabulary.of(["Patio Heater", "Espresso Machine", "Hall Sconce"],
                                 ["Patio", "Den"])
    asr.set_prompt(vocab.prompt())
    assert asr.prompt.startswith("Patio, Den, Patio Heater")
    biased = asr.transcribe(audio).text
    assert word_errors(SAID, biased)[0] <= 1, biased
    assert 0.0 < asr.transcribe(audio).confidence <= 1.0
    assert "Never mind" not in biased and "Espresso" not in biased      # no prompt words
    asr.set_prompt("")
    assert asr.transcribe(audio).text == plain


def test_a_long_prompt_is_clipped_to_the_decoder_limit(asr, tmp_path) -> None:
    audio = read_wav_file(command_wav(SAID, tmp_path))
    asr.set_prompt(" ".join(f"Lamp{i}" for i in range(400)))
    try:
        assert len(asr._prompt) <= 223 + 1 + 2        # startofprev + words + start tokens
        assert word_errors(SAID, asr.transcribe(audio).text)[0] <= 2
    finally:
        asr.set_prompt("")

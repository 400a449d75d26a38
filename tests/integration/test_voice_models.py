"""The real voice models: silero/webrtc VAD, Whisper tiny.en, pocketsphinx, Piper joe."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from edge_runtime.asr import load_asr
from edge_runtime.asr.wer import word_errors
from edge_runtime.audio.format import read_wav_file
from edge_runtime.vad import load_vad
from tests.voice_fixtures import command_wav, real_stack, silence

pytestmark = pytest.mark.integration
CARDS = Path("/usr/share/pocketsphinx/test/data/cards")


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    return read_wav_file(command_wav("set a timer for five minutes",
                                     tmp_path_factory.mktemp("voice")))


def _speech_share(vad, audio):
    n = vad.frame_samples
    probs = [vad.prob(audio[i:i + n]) for i in range(0, len(audio) - n + 1, n)]
    return float(np.mean(np.array(probs) >= 0.5))


@pytest.mark.parametrize("backend", ["silero", "webrtc"])
def test_vad_finds_speech_and_not_silence_or_noise(backend, speech):
    vad = load_vad(backend)
    assert _speech_share(vad, speech) > 0.4
    vad.reset()
    assert _speech_share(vad, silence(2.0)) == 0.0
    if backend == "silero":      # webrtc calls loud white noise speech; silero does not
        vad.reset()
        noise = np.clip(np.random.default_rng(0).normal(0, 0.5, 32000), -1, 1)
        assert _speech_share(vad, noise.astype(np.float32)) < 0.2


def test_whisper_transcribes_a_command(speech):
    t = real_stack().asr.transcribe(speech)
    assert word_errors("set a timer for five minutes", t.text)[0] <= 1
    assert t.backend == "whisper" and t.decode_s > 0


def test_whisper_streaming_partials_then_final(speech):
    stream = real_stack().asr.stream()
    half = len(speech) // 2
    stream.accept(speech[:half])
    partial = stream.partial()
    stream.accept(speech[half:])
    final = stream.finish()
    assert partial and len(partial.split()) < len(final.text.split()) + 1
    assert word_errors("set a timer for five minutes", final.text)[0] <= 1


@pytest.mark.skipif(importlib.util.find_spec("pocketsphinx") is None or
                    not CARDS.is_dir(), reason="pocketsphinx or its test data missing")
def test_pocketsphinx_streams_real_speech():
    asr = load_asr("pocketsphinx")
    audio = read_wav_file(CARDS / "003.wav")           # "seven of clubs"
    s = asr.stream()
    partials = []
    for i in range(0, len(audio), 4000):
        s.accept(audio[i:i + 4000])
        partials.append(s.partial())
    assert any(partials[:-1])                   # words before the end of the audio
    assert word_errors("seven of clubs", s.finish().text)[0] <= 1


def test_piper_yields_one_chunk_per_sentence():
    tts = real_stack().tts
    chunks = list(tts.synthesize("It is noon. The sun is high."))
    assert len(chunks) == 2
    assert all(c.dtype == np.int16 and len(c) > tts.sample_rate * 0.3 for c in chunks)


def test_missing_models_fail_with_a_hint(tmp_path):
    from edge_runtime.errors import ModelMissingError
    from edge_runtime.tts.piper import PiperTts
    with pytest.raises(ModelMissingError) as info:
        PiperTts(tmp_path / "nope.onnx")
    assert "models pull" in info.value.hint
    with pytest.raises(ModelMissingError):
        load_asr("whisper", model_dir=str(tmp_path))

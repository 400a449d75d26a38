"""Whisper tiny.en's beam as N-best (``asr.nbest``) and the voice stack's choice among it:
the real recognizer on a real rendering, the real home understanding as the judge."""
import pytest

from edge_runtime.asr import load_asr
from edge_runtime.audio.format import read_wav_file
from edge_runtime.voice.stack import VoiceStack, unsure_words
from tests.voice_fixtures import command_wav, real_stack

pytestmark = pytest.mark.integration
SAID = "pause the music in the den"


@pytest.fixture(scope="module")
def stack():
    return real_stack()                   # skips without the models


def test_the_beam_gives_ranked_alternatives_and_nbest_1_none(stack, tmp_path) -> None:
    audio = read_wav_file(command_wav(SAID, tmp_path))
    five = load_asr("whisper", model_dir=str(stack.asr.model_dir), beam_size=5, nbest=5)
    t = five.transcribe(audio)
    assert t.text and 1 <= len(t.alternatives) <= 4
    ranked = [t.confidence, *(c for _, c in t.alternatives)]
    assert all(0.0 < c <= 1.0 for c in ranked)
    assert ranked == sorted(ranked, reverse=True)
    one = load_asr("whisper", model_dir=str(stack.asr.model_dir), beam_size=5, nbest=1)
    assert one.transcribe(audio).alternatives == ()


def test_the_stack_takes_the_hypothesis_the_understanding_acts_on(stack, tmp_path) -> None:
    audio = read_wav_file(command_wav(SAID, tmp_path))
    asr = load_asr("whisper", model_dir=str(stack.asr.model_dir), beam_size=5, nbest=5)
    cfg = stack.cfg.with_overrides(asr={"nbest_margin": 10.0})
    voice = VoiceStack(cfg, stack.vad, asr, None)
    best = asr.transcribe(audio)
    second = next(a for a, _ in best.alternatives if a.casefold() != best.text.casefold())
    voice.acts_on = lambda text, at_least: text == second         # only the runner-up is clear
    assert voice.transcribe(audio).text == second
    voice.acts_on = lambda text, at_least: True                  # the best is clear: it stands
    assert voice.transcribe(audio).text == best.text
    voice.acts_on = None                                 # no understanding: the best
    assert voice.transcribe(audio).text == best.text


def test_the_daemon_understanding_acts_on_a_clear_home_command(tmp_path) -> None:
    from edge_runtime.config import load_config
    from edge_runtime.nlu.home.serve import attach_home
    from edge_runtime.nlu.understander import Understander

    cfg = load_config(env={})
    understander = Understander.from_config(cfg.nlu)
    assert not understander.acts_on("pause the music")       # no home attached yet
    if not attach_home(understander, cfg.nlu):
        pytest.skip("home model not built (edge-runtime models build)")
    assert understander.acts_on("turn on the kitchen lights")
    assert understander.acts_on("turn on the kitchen lights", 0.9)
    assert not understander.acts_on("turn on the kitchen lights", 1.01)
    assert not understander.acts_on("tell me a joke")
    assert not understander.acts_on("schalte das Licht in der Küche ein")


def test_word_probabilities_of_the_last_command_and_the_words_heard_unsure(stack,
                                                                          tmp_path) -> None:
    audio = read_wav_file(command_wav("add milk to the shopping list", tmp_path))
    asr = load_asr("whisper", model_dir=str(stack.asr.model_dir), beam_size=5, nbest=5)
    assert asr.word_probabilities("add milk") == []          # nothing decoded yet
    t = asr.transcribe(audio)
    words = asr.word_probabilities(t.text)
    assert [w for w, _ in words] == t.text.split()
    assert all(0.0 < p <= 1.0 for _, p in words)
    # a word the audio does not hold is far less likely than the one it does
    said = dict(asr.word_probabilities("add milk to the shopping list"))
    odd = dict(asr.word_probabilities("add zebra to the shopping list"))
    assert odd["zebra"] < said["milk"] / 10
    voice = VoiceStack(stack.cfg.with_overrides(asr={"unsure_below": 0.5}), stack.vad, asr, None)
    voice.acts_on = lambda text, at_least: True
    got = voice.transcribe(audio)
    # (tiny.en hears Piper's "add milk" as "And, noke": the item is the unsure word)
    assert got.unsure == unsure_words(asr.word_probabilities(got.text), 0.5)
    assert all(w == w.lower() and w.isalnum() for w in got.unsure)
    voice.acts_on = lambda text, at_least: False             # not acted on: not checked
    assert voice.transcribe(audio).unsure == frozenset()

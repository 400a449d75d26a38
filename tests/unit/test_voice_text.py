"""Sentence chunker, WER normalization, echo guard, audio cache."""
import re

import numpy as np
import pytest

from edge_runtime.asr.wer import normalize, wer, word_errors
from edge_runtime.tts import AudioCache, SentenceChunker
from edge_runtime.voice.echo import EchoGuard


def _feed_all(chunker, pieces):
    out = []
    for p in pieces:
        out += chunker.feed(p)
    return out, chunker.flush()


def test_chunks_come_out_as_soon_as_a_sentence_ends():
    c = SentenceChunker()
    assert c.feed("It is noon") == []
    assert c.feed(".") == []                   # "3." could still become "3.5"
    assert c.feed(" The sun is high") == ["It is noon."]
    assert c.flush() == ["The sun is high"]


def test_abbreviations_and_decimals_do_not_end_sentences():
    c = SentenceChunker(first_min_chars=100, first_max_chars=200)   # no early cut
    got, rest = _feed_all(c, ["Dr. Smith measured 3.5 kg, e.g. twice. ", "Ok"])
    assert got == ["Dr. Smith measured 3.5 kg, e.g. twice."]
    assert rest == ["Ok"]


def test_first_chunk_may_end_at_a_comma_later_ones_do_not():
    c = SentenceChunker(first_min_chars=10)
    got, rest = _feed_all(c, ["Well, the capital of France, ", "as you know, is Paris. Yes"])
    assert got == ["Well, the capital of France,", "as you know, is Paris."]
    assert rest == ["Yes"]


def test_a_long_first_clause_is_cut_at_a_space_without_waiting_for_punctuation():
    c = SentenceChunker(first_min_chars=10, first_max_chars=30)
    out = []
    for word in "the sun's rays scattering off water molecules creates this".split():
        out += c.feed(word + " ")
    assert out and len(out[0]) <= 30
    assert out[0] == "the sun's rays scattering off"   # whole words only
    rest = c.flush()
    assert " ".join(out + rest).split() == \
        "the sun's rays scattering off water molecules creates this".split()


@pytest.mark.parametrize("answer", [
    "The moon is a celestial body orbiting our planet Earth. It is a breathtaking sight.",
    "Well, the capital of France, as you know, is Paris. Yes, it is.",
    "Yes. The capital of France is Paris, a city on the Seine.",
    "the sun's rays scattering off water molecules creates this shade",
])
def test_streamed_and_whole_answers_are_cut_alike(answer):
    streamed = SentenceChunker(16, 240, 40)
    a = []
    for token in re.findall(r"\s*\S+", answer):
        a += streamed.feed(token)
    whole = SentenceChunker(16, 240, 40)
    assert a + streamed.flush() == whole.feed(answer) + whole.flush()


def test_long_text_without_punctuation_is_split_at_spaces():
    c = SentenceChunker(max_chars=40)
    got, rest = _feed_all(c, ["word " * 30])
    assert all(len(x) <= 40 for x in got + rest)
    assert " ".join(got + rest).split() == ["word"] * 30


def test_punctuation_only_pieces_make_no_chunks_and_reset_forgets():
    c = SentenceChunker()
    assert c.feed("... !!! ") == []
    c.feed("half a sent")
    c.reset()
    assert c.flush() == []


def test_wer_normalizes_numbers_case_and_punctuation():
    assert normalize("Set a timer for 5 minutes.") == "set a timer for five minutes".split()
    assert normalize("It's 12:30, Mr. Smith") == "it's twelve thirty mister smith".split()
    assert word_errors("ten of clubs", "10 of clubs.") == (0, 3)
    assert word_errors("a b c d", "a x c") == (2, 4)
    assert wer([("a b", "a b"), ("c d", "c")]) == 0.25


def test_echo_guard_learns_the_room_and_tells_user_from_echo():
    g = EchoGuard(margin=2.0)
    assert g.is_barge_in(0.5, 0.0)              # nothing playing: any speech counts
    assert not g.is_barge_in(0.7, 0.8)           # before learning: assume a loud echo
    for _ in range(100):                         # assistant talking; mic hears 0.3 of it
        g.observe(0.24, 0.8, user_speaking=False)
    assert 0.25 < g.coupling < 0.35
    assert not g.is_barge_in(0.26, 0.8)          # its own voice, a bit louder than usual
    assert g.is_barge_in(0.7, 0.8)               # somebody speaking over it


def test_echo_guard_ignores_frames_during_user_speech():
    g = EchoGuard()
    before = g.coupling
    g.observe(2.0, 0.5, user_speaking=True)
    assert g.coupling == before


def test_audio_cache_is_bounded_lru():
    c = AudioCache(max_bytes=3000)
    a = np.zeros(500, np.int16)                   # 1000 bytes each
    for t in ("one", "two", "three"):
        c.put("v", t, a)
    assert c.get("v", "one") is not None          # now most recently used
    c.put("v", "four", a)
    assert c.get("v", "two") is None and c.get("v", "one") is not None
    assert c.bytes <= 3000
    assert c.get("v", "  one ") is not None       # whitespace-insensitive key
    assert c.get("other-voice", "one") is None

"""UTF-8 safe streaming and the sentence counter."""
from __future__ import annotations

from edge_runtime.llm.text_stream import (SentenceCounter, Utf8StreamDecoder, byte_level_to_bytes,
                                          bytes_to_unicode)


def test_split_multibyte_character_is_held_until_complete():
    emoji = "😀".encode()          # 4 bytes
    table = [b"Hi ", emoji[:1], emoji[1:3], emoji[3:], b"!"]
    dec = Utf8StreamDecoder(table)
    pieces = [dec.push(i) for i in range(5)]
    assert pieces == ["Hi ", "", "", "😀", "!"]
    assert all("\ufffd" not in p for p in pieces)


def test_invalid_bytes_become_replacement_not_exception():
    dec = Utf8StreamDecoder([b"\xff", b"ok"])
    assert dec.push(0) + dec.push(1) == "\ufffdok"


def test_unfinished_character_at_end_is_flushed_as_replacement():
    dec = Utf8StreamDecoder(["é".encode()[:1]])
    assert dec.push(0) == ""
    assert dec.flush() == "\ufffd"


def test_control_tokens_are_skipped():
    dec = Utf8StreamDecoder([b"<|im_end|>", b"a"], skip=frozenset({0}))
    assert dec.push(0) + dec.push(1) == "a"


def test_byte_level_table_round_trips_every_byte():
    table = bytes_to_unicode()
    assert len(set(table.values())) == 256
    assert byte_level_to_bytes("".join(table[b] for b in range(256))) == bytes(range(256))
    assert byte_level_to_bytes("Ġhello") == b" hello"


def _run(counter: SentenceCounter, pieces: list[str]) -> tuple[str, bool]:
    out = ""
    for p in pieces:
        text, stop = counter.feed(p)
        out += text
        if stop:
            return out, True
    return out, False


def test_stops_after_n_sentences_and_drops_the_rest():
    out, stop = _run(SentenceCounter(2), ["One.", " Two!", " Three?", " Four."])
    assert stop and out == "One. Two!"


def test_decimals_abbreviations_and_initials_do_not_end_sentences():
    c = SentenceCounter(1)
    out, stop = _run(c, ["Dr.", " J.", " Smith paid 3.50 for e.g.", " tea", " today.", " Next"])
    assert stop and out == "Dr. J. Smith paid 3.50 for e.g. tea today."


def test_closing_quote_after_terminator_counts():
    out, stop = _run(SentenceCounter(1), ['He said "hi."', " Then"])
    assert stop and out == 'He said "hi."'


def test_zero_limit_never_stops_and_finish_counts_trailing_sentence():
    c = SentenceCounter(0)
    out, stop = _run(c, ["Yes.", " No.", " Maybe."])
    assert not stop and out == "Yes. No. Maybe."
    assert c.finish() == 3

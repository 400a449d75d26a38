"""Generated WAV headers against the audio parser, and through ``POST /v1/audio``."""
import json
import struct

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from edge_runtime.audio.format import load_audio, parse_wav_header
from edge_runtime.errors import BadInputError
from tests.fuzz.fuzz_support import (assert_no_errors, fuzz_settings, http_exchange, request,
                                     status_of)

u16 = st.one_of(st.integers(0, 0xFFFF), st.sampled_from([0, 1, 2, 3, 8, 16, 24, 32, 64]))
u32 = st.one_of(st.integers(0, 0xFFFFFFFF),
                st.sampled_from([0, 1, 8000, 16000, 44100, 192000, 0xFFFFFFFF]))


@st.composite
def wavs(draw) -> bytes:
    """A RIFF/WAVE file with generated fmt fields, chunk sizes, chunk order and data."""
    tag = draw(st.one_of(st.sampled_from([1, 3, 0xFFFE]), u16))
    channels, bits = draw(u16), draw(st.one_of(st.sampled_from([8, 16, 24, 32, 64]), u16))
    rate = draw(u32)
    fmt_body = struct.pack("<HHIIHH", tag, channels, rate, draw(u32), draw(u16), bits)
    if draw(st.booleans()):                      # WAVE_FORMAT_EXTENSIBLE tail
        fmt_body += struct.pack("<HHIH", 22, bits, 0, draw(u16)) + bytes(14)
    fmt_body = fmt_body[:draw(st.integers(0, len(fmt_body)))]
    fmt_size = draw(st.one_of(st.just(len(fmt_body)), u32))
    data = draw(st.binary(max_size=4000))
    data_size = draw(st.one_of(st.just(len(data)), u32))
    chunks = [b"fmt " + struct.pack("<I", fmt_size) + fmt_body,
              b"data" + struct.pack("<I", data_size) + data]
    if draw(st.booleans()):
        chunks.insert(draw(st.integers(0, 2)), draw(st.sampled_from([b"LIST", b"fact", b"junk"]))
                      + struct.pack("<I", draw(u32)) + draw(st.binary(max_size=30)))
    if draw(st.booleans()):
        chunks.reverse()
    body = b"".join(chunks)
    riff = draw(st.sampled_from([b"RIFF", b"RF64", b"RIFX"]))
    wave = draw(st.sampled_from([b"WAVE", b"WAVE", b"AVI "]))
    size = draw(st.one_of(st.just(len(body) + 4), u32))
    raw = riff + struct.pack("<I", size) + wave + body
    return raw[:draw(st.integers(0, len(raw)))] if draw(st.booleans()) else raw


@fuzz_settings(200)
@given(data=wavs())
def test_the_wav_parser_reads_or_raises_a_typed_error(data):
    try:
        info = parse_wav_header(data)
    except BadInputError as exc:
        assert exc.code == "bad_audio" and exc.hint
        return
    assert 0 <= info.data_offset <= len(data)
    assert 0 <= info.data_bytes <= len(data) - info.data_offset
    try:
        x = load_audio(data, max_seconds=5.0)
    except BadInputError as exc:
        assert exc.code in ("bad_audio", "audio_too_long", "audio_too_short")
        return
    assert x.dtype == np.float32 and x.ndim == 1
    assert np.all(np.isfinite(x)) and np.all(np.abs(x) <= 1.0)


@fuzz_settings(50)
@given(data=wavs())
def test_generated_wavs_through_the_api_get_a_4xx_or_an_answer(server, caplog, data):
    reply = http_exchange(server.port, request("POST", "/v1/audio?speak=0", data))
    status = status_of(reply)
    assert status in (200, 400), reply[:300]
    body = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert body["error"]["code"] if status == 400 else body["answer"]
    assert_no_errors(caplog)

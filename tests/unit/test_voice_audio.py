"""WAV/PCM input: conversion of what can be converted, clear errors for the rest."""
import struct

import numpy as np
import pytest

from edge_runtime.audio.errors import AudioFormatError, AudioTooLongError, AudioTooShortError
from edge_runtime.audio.format import (PcmFormat, load_audio, parse_wav_header, resample,
                                       wav_bytes)
from edge_runtime.errors import BadInputError


def _wav(raw: bytes, rate=16000, ch=1, bits=16, tag=1) -> bytes:
    return struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + len(raw), b"WAVE", b"fmt ", 16,
                       tag, ch, rate, rate * ch * bits // 8, ch * bits // 8, bits, b"data",
                       len(raw)) + raw


def _tone(freq=440.0, seconds=0.5, rate=16000, amp=0.5):
    t = np.arange(int(seconds * rate)) / rate
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _peak_hz(x, rate=16000):
    spec = np.abs(np.fft.rfft(x))
    return np.argmax(spec) * rate / len(x)


def test_native_wav_round_trips():
    x = _tone()
    y = load_audio(wav_bytes(x, 16000))
    assert len(y) == len(x)
    assert np.max(np.abs(y - x)) < 1e-3


def test_stereo_44k_is_mixed_down_and_resampled():
    x = _tone(440.0, 1.0, 44100)
    stereo = np.stack([x, x], axis=1)
    raw = (stereo * 32767).astype("<i2").tobytes()
    y = load_audio(_wav(raw, rate=44100, ch=2))
    assert abs(len(y) - 16000) <= 1
    assert abs(_peak_hz(y) - 440.0) < 5.0


def test_8bit_unsigned_is_read():
    x = _tone()
    raw = np.clip(x * 127 + 128, 0, 255).astype(np.uint8).tobytes()
    y = load_audio(_wav(raw, bits=8))
    assert abs(_peak_hz(y) - 440.0) < 5.0
    assert abs(float(y.mean())) < 0.02          # unsigned offset removed


def test_24bit_and_float32_are_read():
    x = _tone()
    v = (x * (2 ** 23 - 1)).astype(np.int32)
    raw24 = b"".join(int(s).to_bytes(3, "little", signed=True) for s in v)
    assert np.max(np.abs(load_audio(_wav(raw24, bits=24)) - x)) < 1e-3
    assert np.max(np.abs(load_audio(_wav(x.astype("<f4").tobytes(), bits=32, tag=3)) - x)) \
        < 1e-6


@pytest.mark.parametrize("data, words", [
    (b"", "too short for a WAV header"),
    (b"RIFF\x00\x00\x00\x00WAVEfmt ", "no fmt chunk"),
    (b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00", "truncated inside the fmt"),
    (b"hello, this is definitely not audio at all", "not a WAV file"),
    (b"\x89PNG\r\n\x1a\n" + bytes(100), "not a WAV file"),
])
def test_malformed_input_gets_a_clear_error(data, words):
    with pytest.raises(AudioFormatError, match=words) as info:
        load_audio(data)
    assert isinstance(info.value, BadInputError)
    assert info.value.hint


def test_compressed_wav_is_refused():
    with pytest.raises(AudioFormatError, match="compressed or unknown"):
        load_audio(_wav(bytes(1000), tag=0x55))


def test_odd_rates_and_channel_counts_are_refused():
    with pytest.raises(AudioFormatError, match="sample rate"):
        parse_wav_header(_wav(bytes(100), rate=4000))
    with pytest.raises(AudioFormatError, match="channels"):
        parse_wav_header(_wav(bytes(100), ch=0))


def test_length_limits():
    ten_minutes = _wav(bytes(2 * 16000 * 600))
    with pytest.raises(AudioTooLongError, match="600.0 s"):
        load_audio(ten_minutes, max_seconds=60)
    with pytest.raises(AudioTooShortError):
        load_audio(_wav(bytes(2 * 100)))


def test_data_chunk_longer_than_file_reads_what_is_there():
    raw = (_tone(seconds=0.3) * 32767).astype("<i2").tobytes()
    wav = _wav(raw)[:-1000]                      # header says more than is present
    assert len(load_audio(wav)) == (len(raw) - 1000) // 2


def test_raw_pcm_with_explicit_format():
    x = _tone(seconds=0.5, rate=48000)
    y = load_audio((x * 32767).astype("<i2").tobytes(), fmt=PcmFormat(48000, 1, 2))
    assert abs(len(y) - 8000) <= 1


def test_resample_keeps_pitch_and_removes_aliases():
    x = _tone(1200.0, 1.0, 48000) + _tone(15000.0, 1.0, 48000)   # 15 kHz cannot survive 16k
    y = resample(x, 48000, 16000)
    assert abs(_peak_hz(y) - 1200.0) < 5.0
    spec = np.abs(np.fft.rfft(y))
    hz = len(y) / 16000
    alias = spec[int(1000 * hz) - 3:int(1000 * hz) + 4].max()   # 15 kHz folds onto 1 kHz
    assert alias < 0.05 * spec[int(1200 * hz)]

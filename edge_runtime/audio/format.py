"""WAV and raw PCM in, float32 mono 16 kHz out; WAV out.

Internally every stage works on ``numpy.float32`` mono samples in -1..1 at
``SAMPLE_RATE`` (16 kHz). Input is validated here once, with errors that say
what was wrong and what to send instead (16-bit mono 16 kHz WAV is the native
format; 8/24/32-bit integer, 32/64-bit float, stereo and other rates are converted).
"""
from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import AudioFormatError, AudioTooLongError, AudioTooShortError

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000          # the one sample rate every stage works at
MIN_RATE, MAX_RATE = 8_000, 192_000
MAX_CHANNELS = 8
_NATIVE = "send 16-bit PCM mono WAV at 16 kHz"
_FMT_PCM, _FMT_FLOAT, _FMT_EXTENSIBLE = 1, 3, 0xFFFE


@dataclass(frozen=True)
class PcmFormat:
    """How raw PCM bytes are laid out: rate in Hz, interleaved channels, bytes per sample."""

    sample_rate: int = SAMPLE_RATE
    channels: int = 1
    sample_width: int = 2
    is_float: bool = False

    def validate(self) -> PcmFormat:
        if not MIN_RATE <= self.sample_rate <= MAX_RATE:
            raise AudioFormatError(f"sample rate {self.sample_rate} Hz is outside "
                                   f"{MIN_RATE}..{MAX_RATE} Hz", hint=_NATIVE)
        if not 1 <= self.channels <= MAX_CHANNELS:
            raise AudioFormatError(f"{self.channels} channels is not supported "
                                   f"(1..{MAX_CHANNELS})", hint=_NATIVE)
        ok = {4, 8} if self.is_float else {1, 2, 3, 4}
        if self.sample_width not in ok:
            kind = "float" if self.is_float else "integer"
            raise AudioFormatError(f"{self.sample_width * 8}-bit {kind} samples are not "
                                   f"supported", hint=_NATIVE)
        return self

    @property
    def frame_bytes(self) -> int:
        return self.channels * self.sample_width


def decode_pcm(data: bytes, fmt: PcmFormat) -> np.ndarray:
    """Raw interleaved PCM -> float32 array of shape (frames, channels) in -1..1.

    A trailing partial frame is dropped. 8-bit PCM is unsigned (WAV convention).
    """
    fmt.validate()
    usable = len(data) - len(data) % fmt.frame_bytes
    buf = memoryview(data)[:usable]
    w = fmt.sample_width
    if fmt.is_float:
        x = np.frombuffer(buf, dtype="<f4" if w == 4 else "<f8").astype(np.float32)
        x = np.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0)
        x = np.clip(x, -1.0, 1.0)
    elif w == 1:
        x = (np.frombuffer(buf, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif w == 2:
        x = int16_to_float(np.frombuffer(buf, dtype="<i2"))
    elif w == 3:
        b = np.frombuffer(buf, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        v = np.where(v >= 1 << 23, v - (1 << 24), v)
        x = v.astype(np.float32) / float(1 << 23)
    else:
        x = (np.frombuffer(buf, dtype="<i4").astype(np.float64) / 2.0 ** 31).astype(np.float32)
    return x.reshape(-1, fmt.channels)


def to_mono(x: np.ndarray) -> np.ndarray:
    """(frames, channels) -> (frames,) by averaging the channels."""
    if x.ndim == 1:
        return x.astype(np.float32, copy=False)
    if x.shape[1] == 1:
        return x[:, 0].astype(np.float32, copy=False)
    return x.mean(axis=1, dtype=np.float32)


def _lowpass_taps(cutoff: float, n_taps: int = 63) -> np.ndarray:
    """Windowed-sinc low-pass; ``cutoff`` as a fraction of the sample rate (0..0.5)."""
    n = np.arange(n_taps) - (n_taps - 1) / 2
    taps = 2 * cutoff * np.sinc(2 * cutoff * n) * np.hamming(n_taps)
    return (taps / taps.sum()).astype(np.float32)


def resample(x: np.ndarray, src_rate: int, dst_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Mono float32 resampling: anti-alias low-pass (when downsampling) + linear interpolation.

    Good enough for speech recognition and VAD; not meant for music.
    """
    if src_rate == dst_rate or len(x) == 0:
        return x.astype(np.float32, copy=False)
    if dst_rate < src_rate:
        x = np.convolve(x, _lowpass_taps(0.45 * dst_rate / src_rate), mode="same")
    n_out = int(round(len(x) * dst_rate / src_rate))
    t = np.arange(n_out, dtype=np.float64) * (src_rate / dst_rate)
    return np.interp(t, np.arange(len(x), dtype=np.float64), x).astype(np.float32)


@dataclass(frozen=True)
class WavInfo:
    fmt: PcmFormat
    data_offset: int
    data_bytes: int


def parse_wav_header(data: bytes) -> WavInfo:
    """Find the ``fmt `` and ``data`` chunks of a RIFF/WAVE file; raise AudioFormatError."""
    if len(data) < 12:
        raise AudioFormatError(f"audio is {len(data)} bytes, too short for a WAV header",
                               hint=_NATIVE)
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        what = "RIFF/RF64 but not WAVE" if data[:4] in (b"RIFF", b"RF64") else "not a WAV file"
        raise AudioFormatError(f"the audio is {what} (starts with {data[:4]!r})", hint=_NATIVE)
    pos, fmt = 12, None
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        body = pos + 8
        if cid == b"fmt ":
            if size < 16 or body + 16 > len(data):
                raise AudioFormatError("WAV header is truncated inside the fmt chunk",
                                       hint=_NATIVE)
            tag, ch, rate, _, _, bits = struct.unpack_from("<HHIIHH", data, body)
            if tag == _FMT_EXTENSIBLE and size >= 40 and body + 26 <= len(data):
                tag = struct.unpack_from("<H", data, body + 24)[0]
            if tag not in (_FMT_PCM, _FMT_FLOAT):
                raise AudioFormatError(f"WAV encoding {tag:#06x} is compressed or unknown "
                                       f"(only PCM and IEEE float are read)", hint=_NATIVE)
            if bits % 8 or bits == 0:
                raise AudioFormatError(f"{bits}-bit samples are not supported", hint=_NATIVE)
            fmt = PcmFormat(rate, ch, bits // 8, tag == _FMT_FLOAT).validate()
        elif cid == b"data":
            if fmt is None:
                raise AudioFormatError("WAV data chunk comes before its fmt chunk",
                                       hint=_NATIVE)
            avail = len(data) - body
            if size > avail:       # streamed WAVs write 0 or 0xFFFFFFFF; short files lie too
                if size not in (0, 0xFFFFFFFF):
                    log.warning("WAV data chunk claims %d bytes, %d present; reading those",
                                size, avail)
                size = avail
            return WavInfo(fmt, body, size)
        pos = body + size + (size & 1)
    raise AudioFormatError("WAV has no data chunk" if fmt else
                           "WAV header is truncated (no fmt chunk)", hint=_NATIVE)


def load_audio(data: bytes | bytearray | memoryview | str | Path, *,
               fmt: PcmFormat | None = None, max_seconds: float = 60.0,
               min_seconds: float = 0.1) -> np.ndarray:
    """WAV bytes / a WAV path (or raw PCM bytes when ``fmt`` is given) -> mono 16 kHz float32.

    Raises AudioFormatError, AudioTooLongError or AudioTooShortError (all BadInputError).
    """
    if isinstance(data, (str, Path)):
        path = Path(data)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise AudioFormatError(f"cannot read {path}: {exc.strerror}",
                                   hint="check the file path") from None
    data = bytes(data)
    if fmt is None:
        info = parse_wav_header(data)
        fmt, pcm = info.fmt, memoryview(data)[info.data_offset:info.data_offset + info.data_bytes]
    else:
        pcm = memoryview(data)
    seconds = len(pcm) / (fmt.validate().frame_bytes * fmt.sample_rate)
    if seconds > max_seconds:
        raise AudioTooLongError(f"audio is {seconds:.1f} s long, more than the {max_seconds:g} s "
                                f"allowed", hint="send one utterance, or raise audio.max_seconds")
    if seconds < min_seconds:
        raise AudioTooShortError(f"audio is {seconds * 1000:.0f} ms long, less than "
                                 f"{min_seconds * 1000:.0f} ms", hint="send a whole utterance")
    x = to_mono(decode_pcm(bytes(pcm), fmt))
    return resample(x, fmt.sample_rate, SAMPLE_RATE)


# the one int16 <-> float conversion: float -1..1 -> int16 by 32767 (clipped), back by 32768
def float_to_int16(x: np.ndarray) -> np.ndarray:
    return (np.clip(x, -1.0, 1.0) * 32767.0).astype(np.int16)


def int16_to_float(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) / 32768.0


def float_to_pcm16(x: np.ndarray) -> bytes:
    """Float samples as little-endian 16-bit PCM bytes (what pocketsphinx, Vosk and
    webrtcvad take)."""
    return float_to_int16(x).astype("<i2", copy=False).tobytes()


def resample_int16(x: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """int16 samples at ``from_rate`` as int16 samples at ``to_rate``."""
    return x if from_rate == to_rate else \
        float_to_int16(resample(int16_to_float(x), from_rate, to_rate))


def wav_bytes(samples: np.ndarray, sample_rate: int) -> bytes:
    """Mono samples (int16, or float in -1..1) -> a 16-bit PCM WAV file's bytes."""
    pcm = samples if samples.dtype == np.int16 else float_to_int16(samples)
    raw = pcm.astype("<i2").tobytes()
    header = struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + len(raw), b"WAVE", b"fmt ", 16,
                         _FMT_PCM, 1, sample_rate, sample_rate * 2, 2, 16, b"data", len(raw))
    return header + raw


def write_wav(path: str | Path, samples: np.ndarray, sample_rate: int) -> None:
    Path(path).write_bytes(wav_bytes(samples, sample_rate))


def read_wav_file(path: str | Path, max_seconds: float = 600.0) -> np.ndarray:
    """Convenience for tests and benchmarks: a WAV path -> mono 16 kHz float32."""
    return load_audio(Path(path), max_seconds=max_seconds)


__all__ = ["SAMPLE_RATE", "PcmFormat", "decode_pcm", "to_mono", "resample", "load_audio",
           "parse_wav_header", "wav_bytes", "write_wav", "float_to_int16", "int16_to_float",
           "float_to_pcm16", "resample_int16",
           "read_wav_file"]

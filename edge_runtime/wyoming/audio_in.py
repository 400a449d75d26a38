"""Audio coming in over Wyoming: validated, converted to float32 mono 16 kHz, bounded.

Each ``audio-chunk`` names its own rate/width/channels; any integer PCM the runtime's
one conversion path reads (8..192 kHz, 1..8 channels, 8/16/24/32-bit) is converted, the
rest is refused with an error that names what is supported. A partial sample frame is
carried to the next chunk. ``max_s`` bounds what is kept for transcription; wake-word
streams are not buffered and so not bounded.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from wyoming.audio import AudioChunk

from ..audio.errors import AudioFormatError
from ..audio.format import SAMPLE_RATE, PcmFormat, decode_pcm, resample, to_mono

SUPPORTED = ("8000..192000 Hz, 1..8 channels, 8/16/24/32-bit integer PCM "
             "(native: 16000 Hz, 16-bit, mono)")


def chunk_format(rate, width, channels) -> PcmFormat:
    """The PcmFormat of an audio-start/-chunk, or AudioFormatError naming what is supported."""
    for key, v in (("rate", rate), ("width", width), ("channels", channels)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise AudioFormatError(f"audio {key} {v!r} is not an integer",
                                   hint=f"send {SUPPORTED}")
    try:
        return PcmFormat(rate, channels, width).validate()
    except AudioFormatError as exc:
        raise AudioFormatError(f"unsupported audio: {exc.message}",
                               hint=f"send {SUPPORTED}") from None


@dataclass
class AudioIn:
    """One audio stream (audio-start .. audio-stop)."""

    fmt: PcmFormat
    seconds: float = 0.0            # audio time received so far
    rest: bytes = b""

    def convert(self, chunk: AudioChunk) -> np.ndarray:
        fmt = chunk_format(chunk.rate, chunk.width, chunk.channels)
        if fmt != self.fmt:                   # a format change mid-stream: start afresh
            self.fmt, self.rest = fmt, b""
        data = self.rest + chunk.audio
        cut = len(data) - len(data) % fmt.frame_bytes
        self.rest = data[cut:]
        x = to_mono(decode_pcm(data[:cut], fmt)) if cut else np.zeros(0, np.float32)
        self.seconds += len(x) / fmt.sample_rate
        return resample(x, fmt.sample_rate, SAMPLE_RATE)

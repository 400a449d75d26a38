"""ASR engine interface: whole-utterance ``transcribe`` plus a streaming session with partials.

Audio is float32 mono 16 kHz in -1..1. Engines are synchronous and not thread-safe:
one worker thread drives one engine. ``stream()`` gives a session that accepts audio
as it arrives and can be asked for a partial transcript at any time; engines that only
decode whole utterances (Whisper) get ``BufferedStream``, which re-decodes the buffer at
most every ``partial_every_s`` of new audio.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..audio.format import SAMPLE_RATE
from ..errors import EdgeError

RATE = SAMPLE_RATE


class AsrError(EdgeError):
    code, stage = "asr_failed", "asr"


@dataclass(frozen=True)
class Transcript:
    text: str                      # what was said ("" when nothing was recognized)
    backend: str
    audio_s: float                 # seconds of audio decoded
    decode_s: float                # seconds the decode took
    confidence: float | None = None
    # the recognizer's other hypotheses, most likely first, each with its confidence
    # (Whisper's beam: ``asr.nbest``); ``asr.nbest.choose`` may pick one of them
    alternatives: tuple[tuple[str, float], ...] = ()
    # words of ``text`` (normalized) heard less surely than ``asr.unsure_below``: filled by
    # the voice stack for a command the understanding would act on (``VoiceStack``)
    unsure: frozenset[str] = frozenset()


class AsrStream(Protocol):
    def accept(self, audio: np.ndarray) -> None:
        """Append audio (cheap; decoding happens in ``partial``/``finish``)."""

    def partial(self) -> str:
        """The best guess for the audio so far (may re-decode; call off the event loop)."""

    def prefetch(self) -> None:
        """Speech paused: start the final decode now; ``finish`` reuses it when no audio
        was accepted since (the endpointer's pause snapshot equals its final utterance)."""

    def finish(self) -> Transcript:
        """The final transcript of everything accepted; the stream is done."""


class AsrEngine(Protocol):
    name: str

    def transcribe(self, audio: np.ndarray) -> Transcript: ...

    def stream(self) -> AsrStream: ...


class BufferedStream:
    """Streaming on top of a whole-utterance engine: partials re-decode the buffer."""

    def __init__(self, engine: AsrEngine, partial_every_s: float = 0.5,
                 max_s: float = 30.0) -> None:
        self.engine = engine
        self.partial_every = int(partial_every_s * RATE)
        self.max_samples = int(max_s * RATE)
        self._chunks: list[np.ndarray] = []
        self._n = 0
        self._decoded_at = 0
        self._last = ""
        self._prefetched: tuple[int, Transcript] | None = None

    def accept(self, audio: np.ndarray) -> None:
        if self._n + len(audio) > self.max_samples:      # keep the newest max_s seconds
            audio = audio[-max(0, self.max_samples - self._n):] if self._n < self.max_samples \
                else audio[:0]
        if len(audio):
            self._chunks.append(audio.astype(np.float32, copy=False))
            self._n += len(audio)

    def audio(self) -> np.ndarray:
        return np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.float32)

    def partial(self) -> str:
        if self._n - self._decoded_at >= self.partial_every:
            self._decoded_at = self._n
            self._last = self.engine.transcribe(self.audio()).text
        return self._last

    def prefetch(self) -> None:
        if self._prefetched is None or self._prefetched[0] != self._n:
            self._prefetched = (self._n, self.engine.transcribe(self.audio()))

    def finish(self) -> Transcript:
        if self._prefetched is not None and self._prefetched[0] == self._n:
            return self._prefetched[1]
        return self.engine.transcribe(self.audio())

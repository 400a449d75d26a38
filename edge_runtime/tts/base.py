"""TTS engine interface: text -> int16 mono audio, one chunk per sentence, as it renders."""
from __future__ import annotations

from typing import Protocol
from collections.abc import Iterator

import numpy as np

from ..errors import EdgeError


class TtsError(EdgeError):
    code, stage = "tts_failed", "tts"


class TtsEngine(Protocol):
    name: str
    voice: str                 # identifies the voice (part of the audio cache key)
    sample_rate: int           # Hz of the chunks it yields

    def synthesize(self, text: str) -> Iterator[np.ndarray]:
        """Yield int16 mono chunks (one per sentence) as soon as each is rendered.

        Synchronous and not thread-safe: one worker thread drives one engine."""

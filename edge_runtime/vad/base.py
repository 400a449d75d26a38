"""VAD engine interface: one speech probability per fixed-size frame of 16 kHz audio."""
from __future__ import annotations

from typing import Protocol

import numpy as np

from ..errors import EdgeError


class VadError(EdgeError):
    code, stage = "vad_failed", "vad"


class VadEngine(Protocol):
    """Synchronous, stateful (keeps context between frames); one instance per audio stream."""

    name: str
    frame_samples: int          # samples per frame at 16 kHz (silero: 512 = 32 ms)

    def prob(self, frame: np.ndarray) -> float:
        """Speech probability 0..1 of one frame (float32 mono, exactly ``frame_samples``)."""

    def reset(self) -> None:
        """Forget the stream's state (call between unrelated streams)."""

    def fork(self) -> VadEngine:
        """A fresh engine for another stream that shares the loaded model."""

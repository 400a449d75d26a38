"""WebRTC VAD (``webrtcvad-wheels``): a light fallback, 30 ms frames, no model file.

It answers speech / not speech; ``prob`` returns 1.0 or 0.0.
"""
from __future__ import annotations

import numpy as np

from ..audio.format import SAMPLE_RATE, float_to_pcm16
from .base import VadError

FRAME = 480          # 30 ms at 16 kHz


class WebRtcVad:
    name = "webrtc"
    frame_samples = FRAME

    def __init__(self, aggressiveness: int = 2) -> None:
        import webrtcvad
        if not 0 <= aggressiveness <= 3:
            raise VadError(f"webrtc aggressiveness must be 0..3, got {aggressiveness}")
        self.aggressiveness = aggressiveness
        self._vad = webrtcvad.Vad(aggressiveness)

    def reset(self) -> None:
        pass          # stateless between frames as far as callers can tell

    def fork(self) -> WebRtcVad:
        return WebRtcVad(self.aggressiveness)

    def prob(self, frame: np.ndarray) -> float:
        if frame.shape[-1] != FRAME:
            raise VadError(f"webrtc VAD needs {FRAME}-sample frames, got {frame.shape[-1]}")
        return 1.0 if self._vad.is_speech(float_to_pcm16(frame), SAMPLE_RATE) else 0.0

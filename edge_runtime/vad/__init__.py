"""Voice activity detection and endpointing: silero (onnxruntime) or webrtc, then an
endpointer that turns per-frame probabilities into utterances."""
from __future__ import annotations

from typing import Any

from ..optional import require_backend
from .base import VadEngine, VadError
from .endpointer import (Endpointer, SpeechAudio, SpeechEnd, SpeechPause,
                         SpeechResume, SpeechStart)

BACKENDS = {"silero": ("onnxruntime", "pip install onnxruntime && pip install --no-deps "
                                      "silero-vad"),
            "webrtc": ("webrtcvad", "pip install webrtcvad-wheels")}


def load_vad(backend: str = "silero", *, model_path: str = "", threads: int = 1,
             aggressiveness: int = 2, accel: Any = None) -> VadEngine:
    """Build the chosen engine; its module is imported only when chosen. ``accel``
    (``gpu.Accelerator``): silero runs on the device profile's path (GPU or CPU)."""
    require_backend("vad.backend", BACKENDS, backend)
    if backend == "silero":
        from .silero import SileroVad
        return SileroVad(model_path or None, threads=threads, accel=accel)
    from .webrtc import WebRtcVad
    return WebRtcVad(aggressiveness)


__all__ = ["VadEngine", "VadError", "Endpointer", "SpeechStart", "SpeechAudio",
           "SpeechPause", "SpeechResume", "SpeechEnd", "load_vad", "BACKENDS"]

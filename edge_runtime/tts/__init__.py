"""Text to speech: Piper voices, a sentence chunker fed by answer pieces, an audio cache."""
from __future__ import annotations

from ..optional import require_backend
from .base import TtsEngine, TtsError
from .cache import AudioCache
from .chunker import SentenceChunker

BACKENDS = {"piper": ("piper", "pip install 'edge-runtime[tts]'")}


def load_tts(backend: str = "piper", *, model_path: str = "", threads: int = 1,
             length_scale: float | None = None) -> TtsEngine:
    """Build the chosen engine (loads the voice: call off the event loop)."""
    require_backend("tts.backend", BACKENDS, backend)
    from .piper import PiperTts
    return PiperTts(model_path or None, threads=threads, length_scale=length_scale)


__all__ = ["TtsEngine", "TtsError", "AudioCache", "SentenceChunker", "load_tts", "BACKENDS"]

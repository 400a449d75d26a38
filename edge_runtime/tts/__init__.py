"""Text to speech: Piper voices, a sentence chunker fed by answer pieces, an audio cache."""
from __future__ import annotations

import importlib.util

from ..errors import ConfigError
from .base import TtsEngine, TtsError
from .cache import AudioCache
from .chunker import SentenceChunker

BACKENDS = {"piper": ("piper", "pip install 'edge-runtime[tts]'")}


def load_tts(backend: str = "piper", *, model_path: str = "", threads: int = 1,
             length_scale: float | None = None) -> TtsEngine:
    """Build the chosen engine (loads the voice: call off the event loop)."""
    if backend not in BACKENDS:
        raise ConfigError(f"tts.backend {backend!r} is unknown",
                          hint=f"choose one of {', '.join(BACKENDS)}")
    module, hint = BACKENDS[backend]
    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"TTS backend {backend!r} needs the {module} package", hint=hint)
    from .piper import PiperTts
    return PiperTts(model_path or None, threads=threads, length_scale=length_scale)


__all__ = ["TtsEngine", "TtsError", "AudioCache", "SentenceChunker", "load_tts", "BACKENDS"]

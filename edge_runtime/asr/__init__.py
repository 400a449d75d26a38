"""Speech recognition: one streaming interface (``base.AsrEngine``), one file per backend.

Backends are imported only when chosen; a missing one fails with an install hint.
"""
from __future__ import annotations

from ..optional import installed_backends, require_backend
from .base import AsrEngine, AsrError, AsrStream, BufferedStream, Transcript

BACKENDS = {
    "whisper": ("faster_whisper", "pip install 'edge-runtime[asr-whisper]'"),
    "pocketsphinx": ("pocketsphinx", "pip install 'edge-runtime[asr-sphinx]'"),
    "vosk": ("vosk", "pip install 'edge-runtime[asr-vosk]'"),
}


def available_backends() -> list[str]:
    return installed_backends(BACKENDS)


def load_asr(backend: str = "whisper", *, model_dir: str = "", threads: int = 2,
             beam_size: int = 1, window_s: float = 10.0, partial_every_s: float = 0.5,
             grammar: list[str] | None = None, nbest: int = 1) -> AsrEngine:
    """Build the chosen engine (loads the model: call off the event loop). ``grammar``
    (vosk only) limits recognition to those phrases; ``nbest`` (whisper): hypotheses kept
    per short command (``Transcript.alternatives``)."""
    require_backend("asr.backend", BACKENDS, backend)
    if backend == "whisper":
        from .whisper import WhisperAsr
        return WhisperAsr(model_dir or None, threads=threads, beam_size=beam_size,
                          window_s=window_s, partial_every_s=partial_every_s, nbest=nbest)
    if backend == "vosk":
        from .vosk import VoskAsr
        return VoskAsr(model_dir, grammar=grammar)
    from .sphinx import SphinxAsr
    return SphinxAsr(model_dir=model_dir)


__all__ = ["AsrEngine", "AsrError", "AsrStream", "BufferedStream", "Transcript", "load_asr",
           "available_backends", "BACKENDS"]

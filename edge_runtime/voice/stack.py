"""The voice stages loaded once and shared: VAD model, ASR engine, TTS voice, audio cache.

``VoiceSettings`` holds what will become the ``[audio]``, ``[vad]``, ``[asr]`` and
``[tts]`` config sections (taken as arguments until then). Loading takes 1-3 s:
call ``VoiceStack.load`` off the event loop. ASR and TTS each get one worker thread
(their engines are not thread-safe); VAD runs per stream on its own thread.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..config import AsrConfig as _S, AudioConfig as _A, TtsConfig as _T
from ..config import VadConfig as _V, VoiceConfig as _X
from ..vad import EndpointConfig, load_vad
from ..asr import load_asr
from ..tts import AudioCache, load_tts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VoiceSettings:
    # Defaults come from the config sections ([audio] [vad] [asr] [tts] [voice]), where
    # each key is documented; settings_from_config maps a loaded Config onto these fields.
    input_device: str = _A.input_device
    output_device: str = _A.output_device
    max_seconds: float = _A.max_seconds
    vad_backend: str = _V.backend
    vad_model_path: str = _V.model_path
    endpoint: EndpointConfig = field(default_factory=EndpointConfig)
    asr_backend: str = _S.backend
    asr_model_dir: str = _S.model_dir
    asr_grammar: bool = _S.grammar
    asr_threads: int = _S.threads
    asr_beam_size: int = _S.beam_size
    asr_window_s: float = _S.window_s
    asr_partials: bool = _S.partials
    asr_partial_every_s: float = _S.partial_every_s
    tts_backend: str = _T.backend
    tts_model_path: str = _T.model_path
    tts_threads: int = _T.threads
    tts_cache_mb: int = _T.cache_mb
    tts_first_chunk_chars: int = _T.first_chunk_chars
    tts_first_chunk_max_chars: int = _T.first_chunk_max_chars
    barge_in: bool = _X.barge_in
    echo_margin: float = _X.echo_margin


class VoiceStack:
    def __init__(self, settings: VoiceSettings, vad, asr, tts) -> None:
        self.settings = settings
        self.vad = vad
        self.asr = asr
        self.tts = tts
        self.audio_cache = AudioCache(settings.tts_cache_mb * 1024 * 1024)
        self.asr_pool = ThreadPoolExecutor(1, thread_name_prefix="asr")
        self.tts_pool = ThreadPoolExecutor(1, thread_name_prefix="tts")
        self._closed = threading.Event()

    @classmethod
    def load(cls, settings: VoiceSettings | None = None, *, with_tts: bool = True,
             paths: dict[str, str] | None = None,
             grammar: list[str] | None = None) -> "VoiceStack":
        """Load every engine (blocking). ``paths`` (from ``model_paths``) fills model paths
        left empty in ``settings``; ``grammar`` is used when ``asr_grammar`` is set."""
        s = settings or VoiceSettings()
        paths = paths or {}
        vad = load_vad(s.vad_backend, model_path=s.vad_model_path or paths.get("vad", ""))
        asr = load_asr(s.asr_backend, model_dir=s.asr_model_dir or
                       (paths.get("asr", "") if s.asr_backend == "whisper" else ""),
                       threads=s.asr_threads, beam_size=s.asr_beam_size,
                       window_s=s.asr_window_s, partial_every_s=s.asr_partial_every_s,
                       grammar=grammar if s.asr_grammar else None)
        tts = load_tts(s.tts_backend, model_path=s.tts_model_path or paths.get("tts", ""),
                       threads=s.tts_threads) if with_tts else None
        log.info("voice stack loaded: vad %s, asr %s, tts %s", vad.name, asr.name,
                 tts.voice if tts else "off")
        return cls(s, vad, asr, tts)

    async def warm_up(self) -> None:
        """One tiny decode and render so the first real turn does not pay for allocation."""
        import numpy as np
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.asr_pool, self.asr.transcribe,
                                   np.zeros(8000, np.float32))
        if self.tts is not None:
            await loop.run_in_executor(self.tts_pool, lambda: list(self.tts.synthesize("Ok.")))

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self.asr_pool.shutdown(wait=False, cancel_futures=True)
            self.tts_pool.shutdown(wait=False, cancel_futures=True)


def model_paths(store=None) -> dict[str, str]:
    """Model paths from the model store when its voice entries are pulled, else ``{}``
    (engines then fall back to the installed PyPI packages)."""
    out: dict[str, str] = {}
    if store is None:
        return out
    for role, name, fname in (("tts", "piper-joe-medium", "en_US-joe-medium.onnx"),
                              ("asr", "whisper-tiny-en", "model.bin"),
                              ("vad", "silero-vad", "silero_vad.onnx")):
        try:
            d = store.files_dir(name)
        except Exception:
            continue
        if (d / fname).is_file():
            out[role] = str(d / fname) if role != "asr" else str(d)
    return out

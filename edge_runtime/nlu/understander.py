"""Understander: text -> ``Intent`` (name, confidence, normalized slots), with abstain.

Steps: validate (``BadInputError`` for empty or too-long text) -> ``normalize_text`` (both
done once, by ``query.Query.build``: a ``Query`` is parsed as it is) ->
tokens with merged numbers -> abstain when the text has no letters or too few words the
assistant knows (other languages, noise) -> classifier -> abstain below ``oos_threshold``
-> slots for the chosen intent -> abstain when an intent's ``abstain_without`` slots are
all missing.

Classifier: with ``model_dir`` (config ``nlu.model_dir``), a fine-tuned encoder in ONNX
Runtime (``encoder.EncoderIntentModel``, threshold calibrated at training time); without
it, the v1 linear classifier over hashed n-grams and entity tags, trained at load.

For ``oos`` results, ``confidence`` is how sure the abstain is: 1 - the best skill
intent's probability (1.0 for text without letters).

A model directory trained on Home Assistant templates carries ``hass.json``
(``train.hass_model.write_model_files``): Hass intents then get Home Assistant slots
(``hass_model.HassSlots``: ``{"area": "kitchen", "brightness": 40}``, reconciled with
hassil's own template match when hassil is installed at the pinned version and
``hass_templates`` is on), plus the generic slots their intent file lists; Hass intents
that built-in skills answer under another name are renamed (``hass_model.bridge``:
HassStartTimer -> ``timer_set`` with ``duration_s``).
"""
from __future__ import annotations

import dataclasses

import hashlib
import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any
from collections.abc import Mapping

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from ..config import NluConfig
from ..errors import BadInputError
from ..query import Query
from ..types import Intent
from .base import OOS, IntentSet
from .classifier import LinearIntentClassifier, TrainSettings
from .encoder import INTENTS_FILE, EncoderIntentModel
from .entities import Extractor
from .features import feature_names, hash_features, words_of
from .hass_model import BRIDGE, HASS_FILE, HassSlots, bridge
from .loader import IntentFileError, load_intents
from .numbers import NUMBER_WORDS, tokenize
from .text import has_letters, normalize_text
from .timeparse import DURATION_UNITS, MONTHS, ORDINALS, WEEKDAYS
from .units import UNIT_WORDS

log = logging.getLogger(__name__)

_MODEL_CACHE: OrderedDict[tuple, tuple[LinearIntentClassifier, frozenset[str]]] = OrderedDict()
_MODEL_CACHE_SIZE = 4
_FEATURE_VERSION = 1       # bump when features or training change, so disk caches retrain
_NEAR_CACHE_SIZE = 4096
_CACHE_LOCK = threading.Lock()
_EXTRA_VOCAB = (NUMBER_WORDS | UNIT_WORDS | frozenset(DURATION_UNITS) | frozenset(MONTHS)
                | frozenset(WEEKDAYS) | frozenset(ORDINALS))


class Understander:
    """Parses one utterance at a time; thread-safe after construction (read-only state)."""

    def __init__(self, intents: IntentSet, lists: Mapping[str, tuple[str, ...]] | None = None, *,
                 oos_threshold: float = 0.45, max_text_chars: int = 2000,
                 min_known_ratio: float = 0.5, settings: TrainSettings = TrainSettings(),
                 cache_dir: str | Path | None = None, model_dir: str | Path | None = None,
                 threads: int = 1, hass_templates: bool = True, accel: Any = None) -> None:
        """``cache_dir``: where trained models are kept between runs (keyed by a hash of the
        examples, lists and settings); None = train in memory at every start (~1 s).
        ``model_dir``: a trained encoder model (``edge-runtime nlu train``) used instead of
        the v1 classifier, run on ``threads`` onnxruntime threads; its calibrated threshold
        replaces ``oos_threshold``. ``hass_templates``: for a Home Assistant model, also
        match hassil's templates (when installed at the pinned version; see module doc).
        ``accel`` (``gpu.Accelerator``): the encoder runs on the device profile's path."""
        self.intents = intents
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else None
        self.oos_threshold = oos_threshold
        self.max_text_chars = max_text_chars
        self.min_known_ratio = min_known_ratio
        self.extractor = Extractor(lists if lists is not None else NluConfig().lists)
        self._check_slots()
        self._encoder = EncoderIntentModel(model_dir, threads, accel=accel) \
            if model_dir else None
        self._hass = HassSlots(model_dir, hass_templates) \
            if model_dir and (Path(model_dir).expanduser() / HASS_FILE).is_file() else None
        if self._encoder is not None:
            self._classifier = None
            self._vocab = frozenset(_EXTRA_VOCAB | self.extractor.lists.words | self._encoder.words
                                    | {w for s in intents.intents.values() for e in s.examples
                                       for w in normalize_text(e).split()})
            missing = [lab for lab in self._encoder.labels
                       if lab != OOS and lab not in intents.intents
                       and BRIDGE.get(lab) not in intents.intents]
            if missing:
                log.warning("%d model intents are not in the intent file (e.g. %s): they get no "
                            "skill and no slots", len(missing), missing[0])
        else:
            self._classifier, self._vocab = self._train(settings)
        self._vocab_list = sorted(self._vocab)
        self._near: dict[str, bool] = {}     # unknown word -> near a known one (bounded memo)
        self._home: Any = None               # nlu.home.serve.HomeUnderstanding, attached later

    def attach_home(self, home: Any) -> None:
        """Answer home requests with ``home`` (``nlu.home.serve.HomeUnderstanding``) first;
        its intents join ``intents`` (built-in ones keep their names)."""
        self.intents = IntentSet({**home.specs(), **self.intents.intents}, self.intents.source)
        self._home = home

    def acts_on(self, text: str, at_least: float = 0.0) -> bool:
        """The home understanding would act on ``text``, with a confidence of at least
        ``at_least`` (False without one)."""
        return self._home is not None and self._home.acts_on(text, at_least)

    @staticmethod
    def clear_model_cache() -> None:
        """Forget trained models (the next construction trains again; for measurements)."""
        with _CACHE_LOCK:
            _MODEL_CACHE.clear()

    @classmethod
    def from_config(cls, cfg: NluConfig, cache_dir: str | Path | None = None,
                    accel: Any = None) -> Understander:
        """Load ``cfg.intents_file`` ("" = built in) and train the classifier (about 1 s), or
        load it from ``cache_dir`` (e.g. ``<paths.home>/nlu``) when trained there before.
        With ``cfg.model_dir`` set (a trained encoder), use it instead, on ``cfg.threads``
        onnxruntime threads (default 1), and its ``intents.yaml`` when ``intents_file`` is ""."""
        model_dir = cfg.model_dir or None
        intents_file: str | Path | None = cfg.intents_file or None
        if model_dir and not intents_file and \
                (Path(model_dir).expanduser() / INTENTS_FILE).is_file():
            intents_file = Path(model_dir).expanduser() / INTENTS_FILE   # the set it was trained on
        return cls(load_intents(intents_file), cfg.lists,
                   oos_threshold=cfg.oos_threshold, max_text_chars=cfg.max_text_chars,
                   cache_dir=cache_dir, model_dir=model_dir,
                   threads=max(1, cfg.threads), hass_templates=cfg.hass_templates,
                   accel=accel)

    def _check_slots(self) -> None:
        known = set(self.extractor.slot_names)
        for spec in self.intents.intents.values():
            bad = [s for s in spec.slots if s not in known]
            if bad:
                raise IntentFileError(
                    f"intent file {self.intents.source or 'built-in'}, intent {spec.name!r}: "
                    f"unknown slot {bad[0]!r}", hint=f"known slots: {', '.join(sorted(known))} "
                                                     "(list slots come from nlu.lists)")

    def _features(self, tokens: list, found: Mapping[str, Any]) -> tuple:
        return hash_features(feature_names(words_of(tokens), self.extractor.tags(found)))

    def _train(self, settings: TrainSettings) -> tuple[LinearIntentClassifier, frozenset[str]]:
        """The classifier and vocabulary: from memory, else from ``cache_dir``, else trained."""
        key = (tuple((s.name, s.examples) for s in self.intents.intents.values()),
               self.extractor.lists.key(), settings)
        digest = hashlib.sha256(repr((_FEATURE_VERSION, key)).encode("utf-8")).hexdigest()[:24]
        path = self.cache_dir / f"intents-{digest}.npz" if self.cache_dir else None
        with _CACHE_LOCK:
            result = _MODEL_CACHE.get(key)
            if result is not None:
                _MODEL_CACHE.move_to_end(key)
        if result is None:
            result = self._build(settings, path)
            with _CACHE_LOCK:
                _MODEL_CACHE[key] = result
                while len(_MODEL_CACHE) > _MODEL_CACHE_SIZE:
                    _MODEL_CACHE.popitem(last=False)
        if path is not None and not path.exists():
            try:
                result[0].save(path)
            except OSError as exc:
                log.warning("cannot cache the intent model in %s: %s", path, exc)
        return result

    def _build(self, settings: TrainSettings, path: Path | None
               ) -> tuple[LinearIntentClassifier, frozenset[str]]:
        vocab = set(_EXTRA_VOCAB | self.extractor.lists.words)
        rows = []
        for spec in self.intents.intents.values():
            for text in spec.examples:
                normalized = normalize_text(text)
                tokens = tokenize(normalized)
                vocab.update(t.text for t in tokens if not t.is_number)
                rows.append((spec.name, normalized, tokens))
        model = self._load_cached(path)
        if model is None:
            examples = [self._features(tokens, self.extractor.extract_tokens(normalized, tokens))
                        for _, normalized, tokens in rows]
            model = LinearIntentClassifier.train(examples, [r[0] for r in rows], OOS, settings)
            log.info("intent classifier trained on %d examples of %d intents", len(rows),
                     len(self.intents.intents))
            if path is not None and path.exists():
                path.unlink(missing_ok=True)          # unusable; rewritten by the caller
        return model, frozenset(vocab)

    def _is_known(self, word: str) -> bool:
        """In the vocabulary, or (4+ letters) within a small edit distance of a known word."""
        if word in self._vocab:
            return True
        if len(word) < 4:
            return False
        hit = self._near.get(word)
        if hit is None:
            hit = process.extractOne(word, self._vocab_list,
                                     scorer=Levenshtein.normalized_similarity,
                                     score_cutoff=0.75) is not None
            if len(self._near) >= _NEAR_CACHE_SIZE:
                self._near.clear()
            self._near[word] = hit
        return hit

    @staticmethod
    def _load_cached(path: Path | None) -> LinearIntentClassifier | None:
        if path is None or not path.exists():
            return None
        try:
            model = LinearIntentClassifier.load(path)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("ignoring unusable cached intent model %s: %s", path, exc)
            return None
        log.info("intent classifier loaded from %s", path)
        return model

    def _known_ratio(self, words: list[str]) -> float:
        if not words:
            return 0.0
        return sum(self._is_known(w) for w in words) / len(words)

    def classify(self, text: str) -> tuple[str, float]:
        """(intent name, confidence) for normalized ``text``: the ``IntentClassifier`` protocol."""
        tokens = tokenize(text)
        return self._classify(text, tokens, self.extractor.extract_tokens(text, tokens))

    def _classify(self, normalized: str, tokens: list,
                  found: Mapping[str, Any]) -> tuple[str, float]:
        if not has_letters(normalized):
            return OOS, 1.0
        if self._encoder is not None:
            words = [t.text for t in tokens if not t.is_number]
            if self._known_ratio(words) < self.min_known_ratio:
                return OOS, 1.0
            return self._encoder.classify(normalized)
        assert self._classifier is not None     # trained whenever there is no encoder
        probs = self._classifier.probabilities(self._features(tokens, found))
        labels = self._classifier.labels
        top = int(probs.argmax())
        skill_p = max((float(p) for lab, p in zip(labels, probs, strict=True) if lab != OOS),
                      default=0.0)
        words = [t.text for t in tokens if not t.is_number]
        if self._known_ratio(words) < self.min_known_ratio:
            return OOS, 1.0 - skill_p
        if labels[top] == OOS or float(probs[top]) < self.oos_threshold:
            return OOS, 1.0 - skill_p
        return labels[top], float(probs[top])

    def parse(self, text: str | Query) -> Intent:
        """Understand one utterance. A :class:`~edge_runtime.query.Query` was validated and
        normalized when it was built; plain text is checked here (``BadInputError`` for text
        that is not a string, empty or over-long: ``query.validate_text``) and normalized.
        The intent carries the normalized text (``Intent.text``)."""
        if not isinstance(text, Query):
            if not isinstance(text, str):
                raise BadInputError(f"text must be a string, got {type(text).__name__}")
            text = Query.build(text, max_chars=self.max_text_chars)
        raw, normalized = text.text, text.normalized
        home = self._home.parse(raw, text.unsure) \
            if self._home is not None and has_letters(normalized) else None
        if home is not None:
            return dataclasses.replace(home, text=normalized)
        tokens = tokenize(normalized)
        found = self.extractor.extract_tokens(normalized, tokens) if has_letters(normalized) else {}
        name, confidence = self._classify(normalized, tokens, found)
        hass_slots: dict[str, Any] = {}
        if self._hass is not None and has_letters(normalized):
            name, hass_slots = self._hass.parse(name, confidence, raw)
        if name == OOS:
            return Intent(OOS, confidence, {}, normalized)
        if self._hass is not None:
            name, hass_slots = bridge(name, hass_slots)
        spec = self.intents.spec(name)
        slots: dict[str, Any] = {k: v for k, v in found.items() if k in spec.slots}
        slots.update(hass_slots)
        if spec.abstain_without and not any(s in slots for s in spec.abstain_without):
            log.debug("intent %s abstains: none of %s found", name, spec.abstain_without)
            return Intent(OOS, 1.0 - confidence, {}, normalized)
        return Intent(name, confidence, slots, normalized)

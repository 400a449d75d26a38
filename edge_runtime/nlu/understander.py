"""Understander: text -> ``Intent`` (name, confidence, normalized slots), with abstain.

Steps: validate (``BadInputError`` for empty or too-long text) -> ``normalize_text`` ->
tokens with merged numbers -> abstain when the text has no letters or too few words the
assistant knows (other languages, noise) -> linear classifier over hashed n-grams and
entity tags -> abstain below ``oos_threshold`` -> slots for the chosen intent ->
abstain when an intent's ``abstain_without`` slots are all missing.

For ``oos`` results, ``confidence`` is how sure the abstain is: 1 - the best skill
intent's probability (1.0 for text without letters).
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Mapping

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from ..config import NluConfig
from ..errors import BadInputError
from ..types import Intent
from .base import OOS, IntentSet
from .classifier import LinearIntentClassifier, TrainSettings
from .entities import Extractor
from .features import feature_names, hash_features, words_of
from .loader import IntentFileError, load_intents
from .numbers import NUMBER_WORDS, tokenize
from .text import has_letters, normalize_text
from .timeparse import DURATION_UNITS, MONTHS, ORDINALS, WEEKDAYS
from .units import UNIT_WORDS

log = logging.getLogger(__name__)

_MODEL_CACHE: "OrderedDict[tuple, tuple[LinearIntentClassifier, frozenset[str]]]" = OrderedDict()
_MODEL_CACHE_SIZE = 4
_CACHE_LOCK = threading.Lock()
_EXTRA_VOCAB = (NUMBER_WORDS | UNIT_WORDS | frozenset(DURATION_UNITS) | frozenset(MONTHS)
                | frozenset(WEEKDAYS) | frozenset(ORDINALS))


class Understander:
    """Parses one utterance at a time; thread-safe after construction (read-only state)."""

    def __init__(self, intents: IntentSet, lists: Mapping[str, tuple[str, ...]] | None = None, *,
                 oos_threshold: float = 0.45, max_text_chars: int = 2000,
                 min_known_ratio: float = 0.5, settings: TrainSettings = TrainSettings()) -> None:
        self.intents = intents
        self.oos_threshold = oos_threshold
        self.max_text_chars = max_text_chars
        self.min_known_ratio = min_known_ratio
        self.extractor = Extractor(lists if lists is not None else NluConfig().lists)
        self._check_slots()
        self._classifier, self._vocab = self._train(settings)
        self._vocab_list = sorted(self._vocab)

    @classmethod
    def from_config(cls, cfg: NluConfig) -> "Understander":
        """Load ``cfg.intents_file`` ("" = built in) and train the classifier (well under 2 s)."""
        return cls(load_intents(cfg.intents_file or None), cfg.lists,
                   oos_threshold=cfg.oos_threshold, max_text_chars=cfg.max_text_chars)

    def _check_slots(self) -> None:
        known = set(self.extractor.slot_names)
        for spec in self.intents.intents.values():
            bad = [s for s in spec.slots if s not in known]
            if bad:
                raise IntentFileError(
                    f"intent file {self.intents.source or 'built-in'}, intent {spec.name!r}: "
                    f"unknown slot {bad[0]!r}", hint=f"known slots: {', '.join(sorted(known))} "
                                                     "(list slots come from nlu.lists)")

    def _features(self, normalized: str, tokens: list) -> tuple:
        tags = self.extractor.tags(normalized, tokens)
        return hash_features(feature_names(words_of(tokens), tags))

    def _train(self, settings: TrainSettings) -> tuple[LinearIntentClassifier, frozenset[str]]:
        key = (tuple((s.name, s.examples) for s in self.intents.intents.values()),
               self.extractor.lists.key(), settings)
        with _CACHE_LOCK:
            if key in _MODEL_CACHE:
                _MODEL_CACHE.move_to_end(key)
                return _MODEL_CACHE[key]
        examples, labels, vocab = [], [], set(_EXTRA_VOCAB | self.extractor.lists.words)
        for spec in self.intents.intents.values():
            for text in spec.examples:
                normalized = normalize_text(text)
                tokens = tokenize(normalized)
                vocab.update(t.text for t in tokens if not t.is_number)
                examples.append(self._features(normalized, tokens))
                labels.append(spec.name)
        model = LinearIntentClassifier.train(examples, labels, OOS, settings)
        log.info("intent classifier trained on %d examples of %d intents", len(examples),
                 len(self.intents.intents))
        result = (model, frozenset(vocab))
        with _CACHE_LOCK:
            _MODEL_CACHE[key] = result
            while len(_MODEL_CACHE) > _MODEL_CACHE_SIZE:
                _MODEL_CACHE.popitem(last=False)
        return result

    def _known_ratio(self, words: list[str]) -> float:
        if not words:
            return 0.0
        known = 0
        for w in words:
            if w in self._vocab:
                known += 1
            elif len(w) >= 4 and process.extractOne(
                    w, self._vocab_list, scorer=Levenshtein.normalized_similarity,
                    score_cutoff=0.75) is not None:
                known += 1
        return known / len(words)

    def classify(self, text: str) -> tuple[str, float]:
        """(intent name, confidence) for normalized ``text``: the ``IntentClassifier`` protocol."""
        intent = self._classify(text, tokenize(text))
        return intent[0], intent[1]

    def _classify(self, normalized: str, tokens: list) -> tuple[str, float]:
        if not has_letters(normalized):
            return OOS, 1.0
        probs = self._classifier.probabilities(self._features(normalized, tokens))
        labels = self._classifier.labels
        top = int(probs.argmax())
        skill_p = max((float(p) for lab, p in zip(labels, probs) if lab != OOS), default=0.0)
        words = [t.text for t in tokens if not t.is_number]
        if self._known_ratio(words) < self.min_known_ratio:
            return OOS, 1.0 - skill_p
        if labels[top] == OOS or float(probs[top]) < self.oos_threshold:
            return OOS, 1.0 - skill_p
        return labels[top], float(probs[top])

    def parse(self, text: str) -> Intent:
        """Understand one utterance; ``BadInputError`` for empty or over-long text."""
        if not isinstance(text, str):
            raise BadInputError(f"the request text must be a string, not {type(text).__name__}")
        if not text.strip():
            raise BadInputError("the request is empty", hint="say or type a question or a command")
        if len(text) > self.max_text_chars:
            raise BadInputError(f"the request is {len(text)} characters long; the limit is "
                                f"{self.max_text_chars} (nlu.max_text_chars)",
                                hint="shorten the request or raise nlu.max_text_chars")
        normalized = normalize_text(text)
        tokens = tokenize(normalized)
        name, confidence = self._classify(normalized, tokens)
        if name == OOS:
            return Intent(OOS, confidence, {})
        spec = self.intents.spec(name)
        slots: dict[str, Any] = self.extractor.extract_tokens(normalized, tokens, spec.slots) \
            if spec.slots else {}
        if spec.abstain_without and not any(s in slots for s in spec.abstain_without):
            log.debug("intent %s abstains: none of %s found", name, spec.abstain_without)
            return Intent(OOS, 1.0 - confidence, {})
        return Intent(name, confidence, slots)

"""Understanding: text -> Intent (name, confidence, normalized slots), with abstain.

Public API: ``Understander.from_config(cfg).parse(text)``, ``normalize_text``,
``load_intents``; the intent vocabulary lives in ``intents.yaml``.
"""
from .base import OOS, EntityExtractor, IntentClassifier, IntentSet, IntentSpec
from .loader import IntentFileError, load_intents
from .text import normalize_text
from .understander import Understander

__all__ = ["OOS", "EntityExtractor", "IntentClassifier", "IntentFileError", "IntentSet",
           "IntentSpec", "Understander", "load_intents", "normalize_text"]

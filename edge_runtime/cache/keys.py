"""Cache keys and lifetimes: which answers may be cached, and under what key.

The rule (what ``make_key`` returns None for):

1. the intent is not cacheable (``IntentSpec.cacheable`` is False), or a skill answers it
   (``IntentSpec.skill`` is set: skills are cheap and often time-dependent);
2. the request is **time-dependent**: after filler removal (rule 4) it contains one of
   ``TIME_WORDS`` or ``TIME_PHRASES`` as whole words ("today's" counts as "today");
3. the request is **personal**: after filler removal it contains one of
   ``PERSONAL_WORDS`` as a whole word ("my", "me", "mine", "i", "our", and "i'm",
   "i've", "i'd", "i'll"). "us" is not in the list: it is too often the country;
4. filler removal drops "please" anywhere, leading greetings and question openers
   (``LEADING_FILLERS``: "hey", "ok", "can you tell me", "do you know", "i'd like to
   know" ...) and trailing "thanks"/"thank you", so "can you tell me why the sky is
   blue" is neither personal nor a different question from "why is the sky blue";
5. nothing is left of the text once normalized (only punctuation/emoji/fillers);
6. the request **refers back** to something said before (``CONTEXT_WORDS``: "that", "it",
   "this", "they", "more", "again" …): "why is that" means something else in every
   conversation, and a follow-up whose conversation the daemon does not know (expired,
   another daemon) must not get another conversation's answer.

The rules read the request's normalized text (``Intent.text``, normalized once by the
understander: lower case, NFKC, punctuation and apostrophes removed), so a listed word
matches in its apostrophe-less spelling too ("im", "todays", "thats"); where that spelling
is also a word ("ill", "id", "hers") the request counts as not cacheable.

The rule is deliberately conservative: a false "not cacheable" costs one model call, a
false "cacheable" would speak yesterday's answer. Otherwise the key is built from the
intent name plus, when the intent declares slots (``IntentSpec.slots``) and some are
filled, the canonical JSON of those normalized slots (so phrasing does not matter; other
extracted entities are ignored), else the normalized text (``nlu.text.normalize_text``:
lower case, NFKC, punctuation removed, whitespace collapsed) after filler removal. The
key is ``"v1:" + sha256(...)`` in hex: fixed length and safe for every tier.
"""
from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Any
from collections.abc import Mapping

from ..config import CacheConfig
from ..nlu.base import IntentSpec
from ..nlu.text import normalize_text
from ..types import Intent

KEY_VERSION = "v1"

TIME_WORDS = frozenset({
    "now", "today", "tonight", "tomorrow", "yesterday", "latest", "current", "currently",
    "recent", "recently", "news", "headlines", "weather", "forecast", "score", "scores",
    "price", "prices", "stock", "stocks",
})
TIME_PHRASES = ("this week", "this weekend", "this month", "this year", "this morning",
                "this afternoon", "this evening", "next week", "last week", "last night")
PERSONAL_WORDS = frozenset({
    "i", "me", "my", "mine", "myself", "our", "ours", "ourselves", "i'm", "i've", "i'd", "i'll",
})
CONTEXT_WORDS = frozenset({
    "that", "this", "it", "its", "those", "these", "they", "them", "he", "she", "him", "her",
    "his", "more", "again", "else",
})
LEADING_FILLERS = (
    "hey", "hi", "hello", "ok", "okay", "so", "um", "uh",
    "can you tell me", "could you tell me", "would you tell me", "will you tell me", "tell me",
    "do you know", "i want to know", "i would like to know", "i'd like to know",
    "i was wondering", "i wonder",
)
TRAILING_FILLERS = ("please", "thanks", "thank you")

_APOSTROPHES = re.compile(r"[\u2019\u2018`\u02bc]")
_PLEASE = re.compile(r"\bplease\b")
_SEP = r"[\s,.!?;:\-]*"
_LEADING = re.compile(r"^" + _SEP + r"(?:" + "|".join(
    re.escape(f) for f in sorted(LEADING_FILLERS, key=len, reverse=True)) + r")\b" + _SEP)
_TRAILING = re.compile(_SEP + r"\b(?:" + "|".join(
    re.escape(f) for f in sorted(TRAILING_FILLERS, key=len, reverse=True)) + r")" + _SEP + r"$")


def _normalized_alternation(phrases: tuple[str, ...]) -> str:
    forms = sorted({normalize_text(f) for f in phrases}, key=len, reverse=True)
    return "|".join(re.escape(f) for f in forms)


# the same rules on normalized text (``Intent.text``): no punctuation, apostrophes dropped
_N_PLEASE = re.compile(r"(?:^| )please(?= |$)")
_N_LEADING = re.compile(r"^(?:" + _normalized_alternation(LEADING_FILLERS) + r")(?: |$)")
_N_TRAILING = re.compile(r"(?:^| )(?:" + _normalized_alternation(TRAILING_FILLERS) + r")$")
# normalized word -> the listed word it stands for: the words themselves, their
# apostrophe-less spellings ("i'm" -> "im") and their "'s" forms ("today's" -> "todays",
# "this week's"), except where that form is a word of its own ("is", "mines", "hiss")
_LISTED = sorted(TIME_WORDS | PERSONAL_WORDS | CONTEXT_WORDS)
_NOT_POSSESSIVE = frozenset({"is", "mines", "hiss", "currents"})
_WORD_OF: dict[str, str] = {
    **{w + "s": w for w in _LISTED + [p.split()[-1] for p in TIME_PHRASES]
       if "'" not in w and w + "s" not in _NOT_POSSESSIVE},
    **{normalize_text(w): w for w in _LISTED},
    **{w: w for w in _LISTED},
}


def strip_fillers(text: str) -> str:
    """``text`` in lower case (NFKC, apostrophes unified) without filler words (rule 4);
    for showing what the rule sees (``make_key`` applies it to the normalized text)."""
    s = _APOSTROPHES.sub("'", unicodedata.normalize("NFKC", text).lower())
    s = " ".join(_PLEASE.sub(" ", s).split())
    for pattern in (_LEADING, _TRAILING):
        while True:
            shorter = pattern.sub(" ", s, count=1).strip()
            if shorter == s.strip():
                break
            s = shorter
    return s.strip()


def _strip_normalized(normalized: str) -> str:
    """Rule 4 on normalized text."""
    s = " ".join(_N_PLEASE.sub(" ", normalized).split())
    for pattern in (_N_LEADING, _N_TRAILING):
        while True:
            shorter = pattern.sub(" ", s, count=1).strip()
            if shorter == s:
                break
            s = shorter
    return s


def uncacheable_reason(text: str) -> str | None:
    """Why the answer to ``text`` must not be cached (rules 2, 3 and 6), or None.

    E.g. ``"time-dependent: 'today'"`` or ``"personal: 'my'"``."""
    return _reason_for_stripped(_strip_normalized(normalize_text(text)))


def _reason_for_stripped(stripped: str) -> str | None:
    words = [_WORD_OF.get(w, w) for w in stripped.split()]
    for w in words:
        if w in TIME_WORDS:
            return f"time-dependent: {w!r}"
        if w in PERSONAL_WORDS:
            return f"personal: {w!r}"
    joined = f" {' '.join(words)} "
    for phrase in TIME_PHRASES:
        if f" {phrase} " in joined:
            return f"time-dependent: {phrase!r}"
    for w in words:
        if w in CONTEXT_WORDS:
            return f"refers back: {w!r}"
    return None


def normalize_slots(slots: Mapping[str, Any]) -> Any:
    """Slots with strings normalized (NFKC, lower case, whitespace collapsed), integral
    floats as ints and tuples as lists, ready for canonical JSON."""
    def norm(v: Any) -> Any:
        if isinstance(v, str):
            return " ".join(unicodedata.normalize("NFKC", v).lower().split())
        if isinstance(v, bool) or v is None or isinstance(v, int):
            return v
        if isinstance(v, float):
            return int(v) if v.is_integer() else v
        if isinstance(v, Mapping):
            return {str(k): norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        return norm(str(v))
    return norm(dict(slots))


def make_key(intent: Intent, spec: IntentSpec, text: str) -> str | None:
    """The cache key for this request, or None when its answer must not be cached (see the
    module docstring for the rule). The rule reads the intent's normalized text
    (``intent.text``); ``text``, the request as said, only when an intent built by hand has
    none."""
    if not spec.cacheable or spec.skill is not None:
        return None
    stripped = _strip_normalized(intent.text or normalize_text(text))
    if _reason_for_stripped(stripped) is not None:
        return None
    declared = {k: v for k, v in intent.slots.items() if k in spec.slots}
    if declared:
        material: dict[str, Any] = {"intent": intent.name, "slots": normalize_slots(declared)}
    else:
        if not stripped:
            return None
        material = {"intent": intent.name, "text": stripped}
    blob = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{KEY_VERSION}:{hashlib.sha256(blob.encode('utf-8')).hexdigest()}"


def ttl_for(spec: IntentSpec, cfg: CacheConfig) -> float:
    """Seconds to keep an answer: ``spec.cache_ttl_s``, else ``cfg.ttl_s[spec.name]``, else
    ``cfg.default_ttl_s``. A value <= 0 means "do not store" (``AnswerCache.put`` skips it)."""
    if spec.cache_ttl_s is not None:
        return float(spec.cache_ttl_s)
    if spec.name in cfg.ttl_s:
        return float(cfg.ttl_s[spec.name])
    return float(cfg.default_ttl_s)

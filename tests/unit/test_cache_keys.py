"""make_key / ttl_for: which answers are cacheable and which phrasings share a key."""
from __future__ import annotations

import pytest

from edge_runtime.cache.keys import make_key, strip_fillers, ttl_for, uncacheable_reason
from edge_runtime.config import CacheConfig
from edge_runtime.nlu.base import IntentSpec
from edge_runtime.types import Intent

OPEN = IntentSpec(name="oos", cacheable=True)


def key(text: str, intent: Intent | None = None, spec: IntentSpec = OPEN) -> str | None:
    return make_key(intent or Intent("oos", 0.2), spec, text)


@pytest.mark.parametrize("variant", [
    "why is the sky blue",
    "Why is the sky blue?",
    "  WHY   is the sky blue?!  ",
    "Hey, why is the sky blue?",
    "Please, why is the sky blue",
    "why is the sky blue please",
    "Ｗｈｙ is the sky blue？",            # full-width forms: NFKC
    "ok so why is the sky blue, thanks!",
])
def test_phrasings_of_one_question_share_a_key(variant: str) -> None:
    assert key(variant) == key("why is the sky blue")


def test_different_questions_have_different_keys() -> None:
    assert key("why is the sky blue") != key("why is the sea blue")
    assert key("what is 3.5 times 2") != key("what is 35 times 2")


def test_same_text_under_another_intent_is_another_key() -> None:
    other = IntentSpec(name="science", cacheable=True)
    assert key("why is the sky blue") != key("why is the sky blue", Intent("science", 0.9), other)


def test_key_is_versioned_sha256_hex() -> None:
    k = key("why is the sky blue")
    assert k is not None and k.startswith("v1:")
    assert len(k) == 3 + 64 and all(c in "0123456789abcdef" for c in k[3:])


@pytest.mark.parametrize("text, reason", [
    ("what time is it now", "time-dependent: 'now'"),
    ("what's today's date", "time-dependent: 'today'"),
    ("what is on tonight", "time-dependent: 'tonight'"),
    ("will it rain tomorrow", "time-dependent: 'tomorrow'"),
    ("who won yesterday", "time-dependent: 'yesterday'"),
    ("what happened this week", "time-dependent: 'this week'"),
    ("latest iphone model", "time-dependent: 'latest'"),
    ("who is the current president", "time-dependent: 'current'"),
    ("any news about mars", "time-dependent: 'news'"),
    ("how is the weather in paris", "time-dependent: 'weather'"),
    ("what was the score", "time-dependent: 'score'"),
    ("bitcoin price", "time-dependent: 'price'"),
    ("how is apple stock doing", "time-dependent: 'stock'"),
    ("what is my name", "personal: 'my'"),
    ("remind me what to buy", "personal: 'me'"),
    ("is this mine", "personal: 'mine'"),
    ("should I bring an umbrella", "personal: 'i'"),
    ("I'm hungry what should we cook", "personal: \"i'm\""),
    ("where is our car", "personal: 'our'"),
    ("why is that", "refers back: 'that'"),
    ("tell me a bit more about it", "refers back: 'more'"),
    ("and how did they build it", "refers back: 'they'"),
])
def test_time_dependent_or_personal_requests_are_not_cached(text: str, reason: str) -> None:
    assert uncacheable_reason(text) == reason
    assert key(text) is None


@pytest.mark.parametrize("text", [
    "Can you tell me why the sky is blue?",
    "Tell me how tall Mount Everest is",
    "Do you know what photosynthesis is",
    "I'd like to know what a black hole is",
    "I was wondering, how far is the moon",
])
def test_filler_openers_do_not_make_a_question_personal(text: str) -> None:
    assert uncacheable_reason(text) is None
    assert key(text) is not None


def test_filler_removal_keeps_the_question() -> None:
    assert strip_fillers("Hey, can you please tell me why the sky is blue?") == "why the sky is blue?"
    assert strip_fillers("Can you tell me about my day") == "about my day"


@pytest.mark.parametrize("text", ["known facts about bees", "snowy owls", "a nowhere town"])
def test_rule_matches_whole_words_only(text: str) -> None:
    assert uncacheable_reason(text) is None


def test_not_cacheable_intents_and_skills_get_no_key() -> None:
    assert key("why is the sky blue", spec=IntentSpec(name="oos", cacheable=False)) is None
    timer = IntentSpec(name="set_timer", skill="timer", cacheable=True)
    assert key("set a timer", Intent("set_timer", 0.9, {"seconds": 60}), timer) is None


def test_nothing_left_after_normalization_is_not_cached() -> None:
    assert key("?!") is None
    assert key("hey, please, thanks") is None


def test_slotted_intents_key_on_normalized_slots_not_phrasing() -> None:
    spec = IntentSpec(name="capital_of", cacheable=True, slots=("country",))
    a = key("what is the capital of France", Intent("capital_of", 0.9, {"country": "France"}), spec)
    b = key("France's capital?", Intent("capital_of", 0.8, {"country": " france "}), spec)
    c = key("capital of spain", Intent("capital_of", 0.9, {"country": "Spain"}), spec)
    assert a is not None and a == b
    assert c != a


def test_slot_json_is_canonical_for_order_and_number_forms() -> None:
    spec = IntentSpec(name="convert", cacheable=True, slots=("amount", "unit", "to"))
    a = key("x", Intent("convert", 1, {"amount": 5.0, "unit": "km", "to": ["Miles"]}), spec)
    b = key("y", Intent("convert", 1, {"to": ("miles",), "unit": "KM", "amount": 5}), spec)
    assert a == b


def test_ttl_precedence_spec_then_config_intent_then_default() -> None:
    cfg = CacheConfig(default_ttl_s=100.0, ttl_s={"trivia": 50.0})
    assert ttl_for(IntentSpec(name="trivia", cache_ttl_s=10.0), cfg) == 10.0
    assert ttl_for(IntentSpec(name="trivia"), cfg) == 50.0
    assert ttl_for(IntentSpec(name="other"), cfg) == 100.0
    assert ttl_for(IntentSpec(name="trivia", cache_ttl_s=0.0), cfg) == 0.0


def test_open_questions_key_on_text_even_when_entities_were_extracted() -> None:
    everest = key("how tall is mount everest in meters", Intent("oos", 0.2, {"unit": "meter"}))
    moon = key("how far is the moon in meters", Intent("oos", 0.2, {"unit": "meter"}))
    assert everest is not None and everest != moon
    assert everest == key("How tall is Mount Everest in meters?", Intent("oos", 0.2))


def test_undeclared_slots_do_not_change_a_slotted_key() -> None:
    spec = IntentSpec(name="capital_of", cacheable=True, slots=("country",))
    a = key("capital of france", Intent("capital_of", 0.9, {"country": "France"}), spec)
    b = key("the capital of france in 2 words", Intent("capital_of", 0.9, {"country": "France", "number": 2}),
            spec)
    assert a is not None and a == b

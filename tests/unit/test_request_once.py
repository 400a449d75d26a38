"""A request is validated once, normalized once and its budget resolved in one place.

``Query.build`` validates and normalizes at the pipeline's entry; the understander classifies
the query's normalized text and the intent carries it (``Intent.text``); skills and cache
keys read it from there; ``resolve_budget_ms`` is the one rule for the latency budget.
"""
from __future__ import annotations

import math

import pytest

from edge_runtime.cache.keys import make_key
from edge_runtime.clock import FakeClock
from edge_runtime.config import NluConfig, SchedulerConfig
from edge_runtime.errors import BadInputError
from edge_runtime.nlu import IntentSet, IntentSpec, Understander, normalize_text
from edge_runtime.query import Query, validate_text
from edge_runtime.scheduler import Scheduler
from edge_runtime.scheduler.budget import resolve_budget_ms
from edge_runtime.skills.conversation import GoodbyeSkill
from edge_runtime.skills.datetime_skills import DateSkill, TimeSkill
from edge_runtime.types import Intent
from tests.pipeline_fakes import FakeCloud, make_pipeline

OPEN = IntentSpec(name="oos", cacheable=True)
LIMIT = 60


@pytest.fixture(scope="module")
def nlu() -> Understander:
    return Understander.from_config(NluConfig(max_text_chars=LIMIT))


# -- validation: one function, the same answer from every entry --------------------------
@pytest.mark.parametrize("bad", ["", "  \n\t", "x" * (LIMIT + 1), "a\x00b", 42, None])
async def test_the_understander_and_the_pipeline_reject_alike(nlu, bad):
    with pytest.raises(BadInputError) as want:
        validate_text(bad, LIMIT)
    with pytest.raises(BadInputError) as by_nlu:
        nlu.parse(bad)
    p = make_pipeline()
    p.cfg = p.cfg.with_overrides(nlu={"max_text_chars": LIMIT})
    with pytest.raises(BadInputError) as by_pipeline:
        await p.ask(bad)
    assert by_nlu.value.to_dict() == want.value.to_dict() == by_pipeline.value.to_dict()


def test_validation_strips_and_names_the_limit():
    assert validate_text("  what time is it \n", LIMIT) == "what time is it"
    with pytest.raises(BadInputError) as err:
        validate_text("y" * 61, LIMIT)
    assert "61" in err.value.message and "60" in err.value.message
    assert "nlu.max_text_chars" in err.value.message


@pytest.mark.parametrize("budget", [0, -5, math.nan, math.inf, True, "150"])
async def test_a_request_budget_that_is_not_a_positive_number_is_bad_input(budget):
    with pytest.raises(BadInputError, match="budget_ms"):
        Query.build("why is the sky blue", max_chars=LIMIT, budget_ms=budget)
    p = make_pipeline(cloud=FakeCloud())
    with pytest.raises(BadInputError, match="budget_ms"):
        await p.ask("why is the sky blue", budget_ms=budget)
    assert p.s.llm.calls == 0 and p.s.cloud.calls == 0


# -- normalization: once, carried by the intent ----------------------------------------------
def test_the_query_carries_the_normalized_text():
    q = Query.build("  What's 2+2, please?  ", max_chars=LIMIT, budget_ms=80, session="s")
    assert (q.text, q.normalized, q.budget_ms, q.session) == \
        ("What's 2+2, please?", normalize_text("What's 2+2, please?"), 80.0, "s")
    assert "2+2" not in repr(q)                       # request text stays out of reprs


def test_the_intent_carries_its_normalized_text(nlu):
    intent = nlu.parse("What TIME is it, please?")
    assert intent.name == "get_time" and intent.text == "what time is it please"
    assert "text" not in intent.to_dict() and "please" not in repr(intent)


def test_a_query_is_classified_as_normalized_not_normalized_again(nlu):
    q = Query("(typed as anything)", "what time is it")
    intent = nlu.parse(q)
    assert intent.name == "get_time" and intent.text == "what time is it"


def test_skills_read_the_intents_normalized_text():
    assert GoodbyeSkill().handle(Intent("goodbye", 1.0, text="good night"), "bye") == \
        "Good night!"
    clock = FakeClock(start=1_700_000_000.0)
    tokyo = TimeSkill(clock, "UTC").handle(Intent("get_time", 1.0, text="what time is it in "
                                                  "tokyo"), "what time is it")
    assert tokyo.startswith("In Tokyo it's")
    year = DateSkill(clock, "UTC").handle(Intent("get_date", 1.0, text="what year is it"), "")
    assert year == "It's 2023."


def test_cache_keys_read_the_intents_normalized_text():
    plain = make_key(Intent("oos", 0.2), OPEN, "Why is the sky blue?")
    assert make_key(Intent("oos", 0.2, text="why is the sky blue"), OPEN, "??") == plain
    assert make_key(Intent("oos", 0.2, text="hey why is the sky blue thanks"), OPEN, "") == plain
    assert make_key(Intent("oos", 0.2, text="whats todays date"), OPEN, "") is None
    assert make_key(Intent("oos", 0.2, text="im cold what should i wear"), OPEN, "") is None


@pytest.mark.parametrize("text", ["Why is the sky blue?", "Ｗｈｙ is the sky blue？",
                                  "I'd like to know how far the moon is", "what's today's date",
                                  "how tall is Mount Everest, in meters?", "2+2", "?!"])
def test_a_key_from_the_intent_text_equals_the_key_from_the_raw_text(text):
    assert make_key(Intent("oos", 0.2, text=normalize_text(text)), OPEN, "") == \
        make_key(Intent("oos", 0.2), OPEN, text)


async def test_the_pipeline_normalizes_once_for_nlu_skills_and_keys():
    p = make_pipeline()
    seen = []
    p.s.make_key = lambda intent, spec, text: seen.append(intent.text) or None
    await p.ask("  Why is the SKY blue?! ")
    assert seen == ["why is the sky blue"]


# -- the budget: one rule --------------------------------------------------------------------
def test_budget_precedence_request_then_intent_file_then_config_intent_then_default():
    cfg = SchedulerConfig(budget_ms=150.0, intent_budgets_ms={"trivia": 400.0})
    assert resolve_budget_ms(cfg, "trivia", spec_ms=300.0, request_ms=50.0) == 50.0
    assert resolve_budget_ms(cfg, "trivia", spec_ms=300.0) == 300.0
    assert resolve_budget_ms(cfg, "trivia") == 400.0
    assert resolve_budget_ms(cfg, "other") == 150.0
    assert Scheduler(cfg).budget_s("trivia") == 0.4
    assert Scheduler(cfg).budget_s("trivia", 50.0) == 0.05


async def test_the_pipeline_plans_with_the_resolved_budget():
    p = make_pipeline(budget_ms=150, cloud=FakeCloud())
    p.s.understander.intents = IntentSet({"oos": IntentSpec("oos", cacheable=False,
                                                            budget_ms=1.0)})
    r = await p.ask("why is the sky blue")                  # the intent file's 1 ms
    assert r.route == "cloud" and "> 1 ms budget" in r.reason
    r = await p.ask("why is the sky blue", budget_ms=500)   # the request's own wins
    assert r.route == "local" and "<= 500 ms budget" in r.reason

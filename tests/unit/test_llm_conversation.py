"""ConversationStore: sliding window over turns under a token budget, summary, bounds."""
from __future__ import annotations

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.errors import ConfigError
from edge_runtime.llm.conversation import SUMMARY_PREFIX, ConversationStore, Turn
from edge_runtime.types import Message

SYSTEM = "You are a helpful voice assistant."


def words(messages) -> int:
    """A stand-in tokenizer: one token per word plus 4 per message (template overhead)."""
    return sum(len(m.content.split()) + 4 for m in messages)


def talk(store, sid, n, answer_words=5):
    for i in range(n):
        store.messages(sid, SYSTEM, f"question number {i}")
        store.add_answer(sid, " ".join(["answer"] * answer_words) + f" {i}")


def test_turns_accumulate_in_order_and_sessions_are_separate():
    store = ConversationStore(words, max_prompt_tokens=1000, clock=FakeClock())
    talk(store, "a", 2)
    talk(store, "b", 1)
    msgs = store.messages("a", SYSTEM, "and now?")
    assert [m.role for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[0].content == SYSTEM and msgs[1].content == "question number 0"
    assert msgs[-1].content == "and now?"
    assert store.turns("b") == [Turn("question number 0", "answer answer answer answer answer 0")]


def test_oldest_turns_drop_first_and_the_system_prompt_stays():
    store = ConversationStore(words, max_prompt_tokens=60, summary_turns=0, clock=FakeClock())
    talk(store, "s", 6)
    msgs = store.messages("s", SYSTEM, "last question")
    assert words(msgs) <= 60
    assert msgs[0] == Message("system", SYSTEM)
    users = [m.content for m in msgs if m.role == "user"]
    assert users[-1] == "last question" and "question number 5" in users
    assert "question number 0" not in users
    kept = [int(u.split()[-1]) for u in users[:-1]]
    assert kept == sorted(kept) and kept[-1] == 5     # a contiguous, most recent window


def test_dropped_turns_leave_a_summary_after_the_system_prompt():
    store = ConversationStore(words, max_prompt_tokens=70, summary_turns=2, clock=FakeClock())
    talk(store, "s", 6)
    system = store.messages("s", SYSTEM, "what next")[0].content
    assert system.startswith(SYSTEM + SUMMARY_PREFIX)   # stable prefix for the KV cache
    assert system.count("question number") <= 2


def test_an_oversized_question_still_gets_a_prompt():
    store = ConversationStore(words, max_prompt_tokens=20, clock=FakeClock())
    talk(store, "s", 3)
    msgs = store.messages("s", SYSTEM, "word " * 50)
    assert [m.role for m in msgs] == ["system", "user"]  # all turns dropped, question kept


def test_unanswered_question_is_replaced_not_recorded():
    store = ConversationStore(words, clock=FakeClock())
    store.messages("s", SYSTEM, "first try")   # barge-in: never answered
    store.messages("s", SYSTEM, "second try")
    store.add_answer("s", "ok")
    store.add_answer("s", "stray answer")     # no pending question: ignored
    assert store.turns("s") == [Turn("second try", "ok")]


def test_sessions_expire_and_are_bounded():
    clock = FakeClock()
    store = ConversationStore(words, max_sessions=2, ttl_s=60, max_turns=2, clock=clock)
    talk(store, "old", 3)
    assert len(store.turns("old")) == 2                # max_turns
    clock.advance(61)
    assert len(store) == 0                            # idle past the TTL
    for sid in ("a", "b", "c"):
        talk(store, sid, 1)
    assert store.turns("a") == [] and len(store) == 2   # least recently used evicted
    store.forget("b")
    assert store.turns("b") == []


def test_bad_limits_are_rejected():
    with pytest.raises(ConfigError):
        ConversationStore(words, max_prompt_tokens=0)


def test_a_seeded_session_starts_from_the_clients_turns_within_the_limits():
    store = ConversationStore(words, max_turns=2, summary_turns=1, clock=FakeClock())
    store.messages("s", "sys", "old question")
    store.seed("s", [("one", "1"), ("two", "2"), ("three", "3")])
    assert store.turns("s") == [Turn("two", "2"), Turn("three", "3")]
    msgs = store.messages("s", "sys", "four")
    assert [m.content for m in msgs[1:]] == ["two", "2", "three", "3", "four"]
    assert msgs[0].content == "sys" + SUMMARY_PREFIX + "one."
    store.add_answer("s", "4")
    store.forget("s")
    assert store.turns("s") == []

"""The load benchmark's workload generator: seeded, the documented mix, Zipf repeats,
nothing copied from the intent file, and the committed file is its output."""
from __future__ import annotations

import collections
import random

import pytest

from benchmarks.load import workload as w


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return w.generate()


def test_same_seed_same_rows_other_seed_other_rows(rows) -> None:
    assert w.generate() == rows
    assert w.generate(seed=w.DEFAULT_SEED + 1) != rows


def test_the_committed_workload_is_the_generator_output(rows) -> None:
    committed = w.WORKLOAD_FILE.read_text(encoding="utf-8")
    assert committed == w.dumps(rows), (
        "benchmarks/load/workload.jsonl is not the generator's output: regenerate it with "
        "`python -m benchmarks.load.workload --out benchmarks/load/workload.jsonl`")
    assert w.load() == rows


def test_row_shares_follow_the_mix(rows) -> None:
    n = len(rows)
    kinds = collections.Counter(r["kind"] for r in rows)
    assert n == w.DEFAULT_USERS * w.DEFAULT_PER_USER
    for kind, share in w.MIX.items():
        got = (kinds[kind] + (kinds["followup"] if kind == "session" else 0)) / n
        assert abs(got - share) < 0.03, (kind, got, share)


def test_zipf_sampler_follows_one_over_rank() -> None:
    z = w.Zipf(50, 1.0)
    rng = random.Random(3)
    counts = collections.Counter(z.sample(rng) for _ in range(40_000))
    assert 1.8 < counts[0] / counts[1] < 2.2
    assert 8.0 < counts[0] / counts[9] < 12.5
    assert set(counts) <= set(range(50))


def test_repeated_questions_are_zipf_like_and_new_ones_are_new(rows) -> None:
    groups = collections.Counter(r["group"] for r in rows if r["kind"] == "cacheable")
    ranked = [c for _, c in groups.most_common()]
    assert len(ranked) > 20
    assert ranked[0] >= 5 * ranked[len(ranked) // 2]          # a heavy head ...
    assert sum(1 for c in ranked if c <= 2) >= 3               # ... and a tail
    opens = [r["text"] for r in rows if r["kind"] == "open"]
    assert len(opens) == len(set(opens)) > 200
    skills = collections.Counter(r["text"] for r in rows if r["kind"] == "skill")
    assert skills.most_common(1)[0][1] > 20 and sum(1 for c in skills.values() if c == 1) > 10


def test_skills_span_the_builtin_skills(rows) -> None:
    intents = {r["intent"] for r in rows if r["kind"] == "skill"}
    assert {"get_time", "get_date", "timer_set", "arithmetic", "unit_convert", "device_on",
            "greeting"} <= intents and len(intents) >= 12


def test_no_row_is_an_example_of_the_intent_file(rows) -> None:
    examples = w.intent_examples()
    copied = {r["text"] for r in rows if w._norm(r["text"]) in examples}
    assert not copied


def test_variants_of_a_question_share_its_group_and_paraphrases_differ(rows) -> None:
    by_group = collections.defaultdict(set)
    for r in rows:
        if r["kind"] in ("cacheable", "paraphrase"):
            by_group[r["group"]].add(r["text"])
            assert r["cacheable"] and r["intent"] == "oos"
    base = w.CACHEABLE_QUESTIONS[0]
    assert any(t != base and base in t for t in by_group["q000"])
    assert max(len(v) for g, v in by_group.items() if g.startswith("p")) >= 3


def test_sessions_are_consecutive_turns_of_one_user(rows) -> None:
    sessions = collections.defaultdict(list)
    for r in rows:
        if r["session"]:
            sessions[r["session"]].append(r)
    assert len(sessions) > 30
    for name, turns in sessions.items():
        assert len({t["user"] for t in turns}) == 1
        assert [t["turn"] for t in turns] == list(range(len(turns)))
        assert [t["seq"] for t in turns] == list(range(turns[0]["seq"], turns[0]["seq"] + len(turns)))
        assert turns[0]["kind"] == "session" and all(t["kind"] == "followup" for t in turns[1:])
        assert not any(t["cacheable"] for t in turns[1:])


def test_uncacheable_and_audio_rows_exist(rows) -> None:
    oos = [r for r in rows if r["kind"] == "oos"]
    assert any(not r["cacheable"] for r in oos) and any(r["cacheable"] for r in oos)
    audio = [r for r in rows if r["audio"]]
    assert audio and all(r["kind"] == "audio" for r in audio)
    assert all(r["group"].startswith(("skill", "q")) for r in audio)
    assert len({r["text"] for r in audio}) <= 2 * w.AUDIO_SKILLS

"""Timer store and timer skill, driven by a FakeClock (expiry is deterministic)."""
from __future__ import annotations

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.errors import BadInputError
from edge_runtime.skills import SkillInputError, TimerLimitError, TimerStore
from edge_runtime.skills.timers import TimerSkill
from edge_runtime.types import Intent


def set_(seconds: float, name: str | None = None) -> Intent:
    slots = {"duration_s": seconds}
    if name:
        slots["timer_name"] = name
    return Intent("timer_set", 1.0, slots)


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture()
def skill(clock: FakeClock) -> TimerSkill:
    return TimerSkill(TimerStore(clock, max_timers=3))


def test_timer_expires_on_the_clock(clock: FakeClock, skill: TimerSkill) -> None:
    assert skill.handle(set_(300), "") == "Timer set for 5 minutes."
    clock.advance(299)
    assert skill.store.pop_finished() == []
    assert skill.handle(Intent("timer_status", 1.0), "") == "The timer for 5 minutes has 1 second left."
    clock.advance(0.5)
    assert skill.handle(Intent("timer_status", 1.0), "") == \
        "The timer for 5 minutes has less than a second left."
    clock.advance(0.5)
    finished = skill.store.pop_finished()
    assert [t.duration_s for t in finished] == [300]
    assert skill.store.pop_finished() == []            # announced once
    assert skill.handle(Intent("timer_status", 1.0), "") == "You have no timers running."


def test_status_lists_several_soonest_first(clock: FakeClock, skill: TimerSkill) -> None:
    skill.handle(set_(600, "pasta"), "")
    skill.handle(set_(90), "")
    clock.advance(30)
    assert skill.handle(Intent("timer_status", 1.0), "") == (
        "You have 2 timers: the timer for 1 minute and 30 seconds with 1 minute left "
        "and the pasta timer with 9 minutes and 30 seconds left.")
    assert skill.handle(Intent("timer_status", 1.0, {"timer_name": "pasta"}), "") == \
        "The pasta timer has 9 minutes and 30 seconds left."
    assert skill.store.next_deadline() == pytest.approx(clock.monotonic() + 60)


def test_cancel_by_name_duration_and_all(skill: TimerSkill) -> None:
    skill.handle(set_(480, "pasta"), "")
    skill.handle(set_(300), "")
    skill.handle(set_(60), "")
    with pytest.raises(SkillInputError, match="Which one should I cancel"):
        skill.handle(Intent("timer_cancel", 1.0), "")
    assert skill.handle(Intent("timer_cancel", 1.0, {"timer_name": "pastas"}), "") == "Cancelled the pasta timer."
    assert skill.handle(Intent("timer_cancel", 1.0, {"duration_s": 300.0}), "") == \
        "Cancelled the timer for 5 minutes."
    assert skill.handle(Intent("timer_cancel", 1.0, {"timer_name": "eggs"}), "") == \
        "You have no eggs timer running."
    assert skill.handle(Intent("timer_cancel", 1.0), "") == "Cancelled the timer for 1 minute."
    skill.handle(set_(10), "")
    skill.handle(set_(20), "")
    assert skill.handle(Intent("timer_cancel", 1.0, {"all": True}), "") == "Cancelled all 2 timers."
    assert skill.handle(Intent("timer_cancel", 1.0, {"all": True}), "") == "You have no timers running."
    assert skill.store.pop_finished() == []             # cancelled timers never "finish"


def test_max_timers_refuses_clearly(skill: TimerSkill) -> None:
    for seconds in (10, 20, 30):
        skill.handle(set_(seconds), "")
    answer = skill.handle(set_(40), "")
    assert "3 timers running" in answer and "Cancel one first" in answer
    assert len(skill.store.active()) == 3
    with pytest.raises(TimerLimitError):
        skill.store.add(50)


def test_finished_timers_free_their_slot(clock: FakeClock, skill: TimerSkill) -> None:
    for seconds in (10, 20, 30):
        skill.handle(set_(seconds), "")
    clock.advance(10)
    assert skill.handle(set_(40), "") == "Timer set for 40 seconds."


@pytest.mark.parametrize("slots, needle", [({}, "For how long"), ({"duration_s": 0.2}, "1 second to 24 hours"),
                                           ({"duration_s": 90000.0}, "1 second to 24 hours")])
def test_unusable_durations_raise_bad_input(skill: TimerSkill, slots: dict, needle: str) -> None:
    with pytest.raises(BadInputError, match=needle):
        skill.handle(Intent("timer_set", 1.0, slots), "")
    assert skill.store.active() == []


def test_store_rejects_zero_capacity(clock: FakeClock) -> None:
    with pytest.raises(ValueError):
        TimerStore(clock, max_timers=0)


def test_timer_until_a_clock_time() -> None:
    import datetime as dt
    clock = FakeClock(start=dt.datetime(2026, 3, 10, 14, 5, 30, tzinfo=dt.timezone.utc).timestamp())
    skill = TimerSkill(TimerStore(clock), timezone="UTC")
    at = {"hour": 19, "minute": 30, "ambiguous": False}
    assert skill.handle(Intent("timer_set", 1.0, {"time": at}), "") == \
        "Timer set for 7:30 PM, 5 hours, 24 minutes and 30 seconds from now."
    # "half past two" without am/pm: the sooner of 2:30 and 14:30
    at = {"hour": 2, "minute": 30, "ambiguous": True}
    assert skill.handle(Intent("timer_set", 1.0, {"time": at}), "") == \
        "Timer set for 2:30 PM, 24 minutes and 30 seconds from now."
    clock.advance(24 * 60 + 30)
    assert [t.duration_s for t in skill.store.pop_finished()] == [1470.0]

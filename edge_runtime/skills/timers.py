"""Countdown timers: a bounded in-memory store driven by the injected clock, and the skill
that sets, cancels and reports them (intents ``timer_set``, ``timer_cancel``, ``timer_status``).

Expiry is measured on ``clock.monotonic()``. Finished timers move to a bounded
"finished" list that the daemon drains with ``pop_finished()`` to announce them;
``next_deadline()`` says when the next one ends (monotonic seconds) so it can sleep until then.
"""
from __future__ import annotations

import datetime as dt
import itertools
import logging
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from rapidfuzz import fuzz

from ..clock import Clock
from ..types import Intent
from .base import SkillInputError
from .datetime_skills import now_in, resolve_zone, say_clock
from .speech import join_words, say_duration

log = logging.getLogger(__name__)

MIN_TIMER_S = 1.0
MAX_TIMER_S = 24 * 3600.0


class TimerLimitError(SkillInputError):
    """The store already holds ``max_timers`` running timers."""

    code = "timer_limit"


@dataclass(frozen=True)
class Timer:
    id: int
    duration_s: float
    started: float            # clock.monotonic() at creation
    name: str | None = None
    command: str | None = None    # said again when it rings ("in 20 minutes turn off ...")

    @property
    def ends(self) -> float:
        return self.started + self.duration_s

    def label(self) -> str:
        """How to refer to it aloud: "the pasta timer" / "the timer for 5 minutes"."""
        if self.name:
            return f"the {self.name} timer"
        return f"the timer for {say_duration(self.duration_s)}"


class TimerStore:
    """Running timers (at most ``max_timers``); thread-safe."""

    def __init__(self, clock: Clock, max_timers: int = 32) -> None:
        if max_timers < 1:
            raise ValueError("max_timers must be at least 1")
        self.clock = clock
        self.max_timers = max_timers
        self._timers: dict[int, Timer] = {}
        self._finished: deque[Timer] = deque(maxlen=max_timers)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def _expire(self) -> None:
        now = self.clock.monotonic()
        for timer in sorted(self._timers.values(), key=lambda t: t.ends):
            if timer.ends <= now:
                del self._timers[timer.id]
                self._finished.append(timer)
                log.info("timer %d finished", timer.id)

    def add(self, duration_s: float, name: str | None = None,
            command: str | None = None) -> Timer:
        """Start a timer of ``duration_s`` seconds (that runs ``command`` when it rings);
        ``TimerLimitError`` when full."""
        with self._lock:
            self._expire()
            if len(self._timers) >= self.max_timers:
                raise TimerLimitError(f"You already have {len(self._timers)} timers running, the "
                                      "most I can keep. Cancel one first.")
            timer = Timer(next(self._ids), float(duration_s), self.clock.monotonic(), name,
                          command)
            self._timers[timer.id] = timer
            return timer

    def active(self) -> list[Timer]:
        """Running timers, soonest first."""
        with self._lock:
            self._expire()
            return sorted(self._timers.values(), key=lambda t: t.ends)

    def remaining(self, timer: Timer) -> float:
        """Seconds left on ``timer`` (0 once finished)."""
        return max(0.0, timer.ends - self.clock.monotonic())

    def cancel(self, timers: list[Timer]) -> int:
        """Cancel the given timers; returns how many were still running."""
        with self._lock:
            return sum(self._timers.pop(t.id, None) is not None for t in timers)

    def find(self, name: str | None = None, duration_s: float | None = None) -> list[Timer]:
        """Running timers that match a name (fuzzy, plural-tolerant) and/or a duration."""
        out = self.active()
        if name:
            out = [t for t in out
                   if t.name and (fuzz.ratio(t.name.rstrip("s"), name.rstrip("s")) >= 80)]
        if duration_s is not None:
            out = [t for t in out if abs(t.duration_s - duration_s) < 0.5]
        return out

    def pop_finished(self) -> list[Timer]:
        """Timers that finished since the last call (oldest first), for announcing."""
        with self._lock:
            self._expire()
            out = list(self._finished)
            self._finished.clear()
            return out

    def next_deadline(self) -> float | None:
        """``clock.monotonic()`` value at which the next running timer ends, or None."""
        timers = self.active()
        return timers[0].ends if timers else None


class TimerSkill:
    """Sets, cancels and reports timers kept in a ``TimerStore``."""

    name = "timer"

    def __init__(self, store: TimerStore, timezone: str = "") -> None:
        """``timezone``: the zone for "set a timer until 7:30 pm" (IANA name, "" = local)."""
        self.store = store
        self.zone = resolve_zone(timezone)
        self._handlers: dict[str, Callable[[dict[str, Any], str], str]] = {
            "timer_set": self._set, "timer_cancel": self._cancel, "timer_status": self._status}

    def handle(self, intent: Intent, text: str) -> str:
        handler = self._handlers.get(intent.name)
        if handler is None:
            raise SkillInputError(f"The timer skill cannot handle {intent.name}.")
        return handler(intent.slots, text)

    def _until(self, when: dict[str, Any]) -> float:
        """Seconds from now to the next time the clock shows ``when`` (am or pm if ambiguous)."""
        now = now_in(self.store.clock, self.zone)
        hours = ([when["hour"]] if not when.get("ambiguous")
                 else [when["hour"] % 12, when["hour"] % 12 + 12])
        waits = []
        for hour in hours:
            target = now.replace(hour=hour, minute=when["minute"], second=0, microsecond=0)
            if target <= now:
                target += dt.timedelta(days=1)
            waits.append((target - now).total_seconds())
        return min(waits)

    def _set(self, slots: dict[str, Any], text: str) -> str:
        seconds = slots.get("duration_s")
        ends_at = ""
        if seconds is None and slots.get("time"):
            seconds = self._until(slots["time"])
            ends_at = say_clock(now_in(self.store.clock, self.zone) + dt.timedelta(seconds=seconds))
        if seconds is None:
            raise SkillInputError("For how long? Say, for example, set a timer for 5 minutes.")
        if not MIN_TIMER_S <= seconds <= MAX_TIMER_S:
            raise SkillInputError(f"I can set timers from 1 second to 24 hours, not "
                                  f"{say_duration(seconds)}.")
        try:
            timer = self.store.add(seconds, slots.get("timer_name"), slots.get("command"))
        except TimerLimitError as exc:
            return exc.message
        if timer.command:
            return f"In {say_duration(seconds)}, I will {timer.command}."
        what = f"{timer.name.capitalize()} timer" if timer.name else "Timer"
        if ends_at:
            return f"{what} set for {ends_at}, {say_duration(seconds)} from now."
        return f"{what} set for {say_duration(seconds)}."

    def _matching(self, slots: dict[str, Any]) -> tuple[list[Timer], str]:
        name, seconds = slots.get("timer_name"), slots.get("duration_s")
        if not name and seconds is None:
            return self.store.active(), ""
        what = f"{name} timer" if name or seconds is None else f"timer for {say_duration(seconds)}"
        return self.store.find(name, seconds), what

    def _cancel(self, slots: dict[str, Any], text: str) -> str:
        if slots.get("all"):
            count = self.store.cancel(self.store.active())
            return "You have no timers running." if not count else \
                f"Cancelled {'your timer' if count == 1 else f'all {count} timers'}."
        timers, what = self._matching(slots)
        if not timers:
            return f"You have no {what} running." if what else "You have no timers running."
        if len(timers) > 1 and not what:
            names = join_words([t.label() for t in timers], "and")
            raise SkillInputError(f"You have {len(timers)} timers: {names}. Which one should I "
                                  "cancel? You can also say cancel all timers.")
        self.store.cancel(timers[:1])
        return f"Cancelled {timers[0].label()}."

    def _status(self, slots: dict[str, Any], text: str) -> str:
        timers, what = self._matching(slots)
        if not timers:
            return f"You have no {what} running." if what else "You have no timers running."
        if len(timers) == 1:
            t = timers[0]
            return f"{t.label().capitalize()} has {say_duration(self.store.remaining(t))} left."
        parts = [f"{t.label()} with {say_duration(self.store.remaining(t))} left"
                 for t in timers[:5]]
        more = f", and {len(timers) - 5} more" if len(timers) > 5 else ""
        return f"You have {len(timers)} timers: {join_words(parts)}{more}."

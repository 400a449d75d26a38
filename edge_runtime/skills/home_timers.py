"""Timer requests beyond start and cancel: add or take off time, pause, resume, status.

Works on ``timers.TimerStore`` through its public methods: adjusting a timer replaces it by
one with the new remaining time (same name); a paused timer leaves the store and is kept
here with its remaining time until it is resumed. When the request could mean several
timers and names none, it asks back ("Which timer: the pasta timer or the timer for 5
minutes?"): never a change to a timer the user did not mean.
"""
from __future__ import annotations

import threading
from typing import Any

from .base import SkillInputError
from .speech import join_words, say_duration
from .timers import Timer, TimerStore


def _seconds(slots: dict[str, Any], prefix: str = "") -> float | None:
    parts = [slots.get(prefix + unit) for unit in ("hours", "minutes", "seconds")]
    if all(p is None for p in parts):
        return None
    try:
        h, m, s = (float(p or 0) for p in parts)
    except (TypeError, ValueError):
        return None
    return h * 3600 + m * 60 + s


class HomeTimers:
    def __init__(self, store: TimerStore) -> None:
        self.store = store
        self._paused: list[tuple[float, str | None]] = []     # (remaining s, name)
        self._lock = threading.Lock()

    def _one(self, slots: dict[str, Any], timers: list[Timer]) -> Timer:
        name = slots.get("name")
        start = _seconds(slots, "start_")
        matches = self.store.find(str(name) if name else None, start) if (name or start) \
            else timers
        if not matches:
            raise SkillInputError("There is no such timer running." if timers
                                  else "There is no timer running.")
        if len(matches) > 1:
            labels = [t.label() for t in matches]
            raise SkillInputError(f"Which timer: {join_words(labels, 'or')}?")
        return matches[0]

    def adjust(self, slots: dict[str, Any], sign: int) -> str:
        delta = _seconds(slots)
        if delta is None or delta <= 0:
            raise SkillInputError("By how much? Say a number of minutes or seconds.")
        timer = self._one(slots, self.store.active())
        left = self.store.remaining(timer) + sign * delta
        if left <= 0:
            raise SkillInputError(f"{timer.label().capitalize()} has only "
                                  f"{say_duration(self.store.remaining(timer))} left; "
                                  f"I can't take off {say_duration(delta)}.")
        self.store.cancel([timer])
        self.store.add(left, timer.name)
        verb = "Added" if sign > 0 else "Took"
        where = "to" if sign > 0 else "off"
        return f"{verb} {say_duration(delta)} {where} {timer.label()}; " \
               f"{say_duration(left)} left."

    def pause(self, slots: dict[str, Any]) -> str:
        timer = self._one(slots, self.store.active())
        left = self.store.remaining(timer)
        if self.store.cancel([timer]):
            with self._lock:
                self._paused.append((left, timer.name))
        return f"Paused {timer.label()} with {say_duration(left)} left."

    def unpause(self, slots: dict[str, Any]) -> str:
        with self._lock:
            paused = list(self._paused)
        if not paused:
            raise SkillInputError("No timer is paused.")
        name = slots.get("name")
        want = str(name).rstrip("s") if name else None
        pick = [p for p in paused if not want or (p[1] and p[1].rstrip("s") == want)]
        if len(pick) != 1:
            labels = [f"the {n} timer" if n else f"the timer with {say_duration(s)} left"
                      for s, n in (pick or paused)]
            raise SkillInputError(f"Which timer: {join_words(labels, 'or')}?")
        left, timer_name = pick[0]
        with self._lock:
            if pick[0] in self._paused:
                self._paused.remove(pick[0])
        self.store.add(left, timer_name)
        label = f"the {timer_name} timer" if timer_name else "the timer"
        return f"Resumed {label}; {say_duration(left)} left."

    def status(self, slots: dict[str, Any]) -> str:
        running = self.store.active()
        with self._lock:
            paused = list(self._paused)
        if not running and not paused:
            return "There is no timer running."
        parts = [f"{t.label()} has {say_duration(self.store.remaining(t))} left" for t in running]
        parts += [f"the {n + ' ' if n else ''}timer is paused with {say_duration(s)} left"
                  for s, n in paused]
        text = join_words(parts)
        return text[0].upper() + text[1:] + "."

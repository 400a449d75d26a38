"""Time and date skills. The current instant comes from the injected clock's ``time()``;
the zone is ``skills.timezone`` (IANA name, "" = the system's local zone), or a city
named in the request ("what time is it in tokyo") when it names an IANA zone city.
"""
from __future__ import annotations

import datetime as dt
import functools
import zoneinfo
from typing import Any
from collections.abc import Callable

from ..clock import Clock
from ..types import Intent
from .base import SkillConfigError, SkillInputError
from .base import words as words_of

_CITY_ALIASES = {
    "san francisco": "America/Los_Angeles", "seattle": "America/Los_Angeles",
    "boston": "America/New_York", "washington": "America/New_York", "miami": "America/New_York",
    "atlanta": "America/New_York", "dallas": "America/Chicago", "houston": "America/Chicago",
    "las vegas": "America/Los_Angeles", "beijing": "Asia/Shanghai", "mumbai": "Asia/Kolkata",
    "delhi": "Asia/Kolkata", "new delhi": "Asia/Kolkata", "manhattan": "America/New_York",
    "utc": "UTC", "gmt": "UTC",
}
_NOT_PLACES = frozenset({"here", "there", "the", "my", "this", "your", "our", "a", "right",
                         "now", "moment", "morning", "evening", "afternoon", "total"})
_FILLER = frozenset({"right", "now", "please", "currently", "today", "at", "the", "moment",
                     "exactly"})


def resolve_zone(name: str) -> dt.tzinfo | None:
    """``ZoneInfo(name)``; ``None`` for "" (the system's local zone). Bad names raise
    ``SkillConfigError`` naming ``skills.timezone``."""
    if not name:
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise SkillConfigError(f"config key skills.timezone has an unknown time zone {name!r}",
                               hint='use an IANA name such as "Europe/Berlin", or "" for local time'
                               ) from None


@functools.lru_cache(maxsize=1)
def _city_zones() -> dict[str, str]:
    zones: dict[str, str] = {}
    for zone in zoneinfo.available_timezones():
        if "/" in zone and not zone.startswith(("Etc/", "SystemV/", "US/")):
            zones.setdefault(zone.rsplit("/", 1)[1].replace("_", " ").lower(), zone)
    zones.update(_CITY_ALIASES)
    return zones


def now_in(clock: Clock, zone: dt.tzinfo | None) -> dt.datetime:
    """The clock's wall time as an aware datetime in ``zone`` (local zone when None)."""
    stamp = clock.time()
    if zone:
        return dt.datetime.fromtimestamp(stamp, zone)
    return dt.datetime.fromtimestamp(stamp).astimezone()


def say_clock(moment: dt.datetime) -> str:
    """``7:05 PM`` style."""
    return f"{moment.hour % 12 or 12}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}"


def say_date(day: dt.date, year: bool = True) -> str:
    text = f"{day.strftime('%A')}, {day.strftime('%B')} {day.day}"
    return f"{text}, {day.year}" if year else text


class TimeSkill:
    """Says the current time, locally or in a named city."""

    name = "time"

    def __init__(self, clock: Clock, timezone: str = "") -> None:
        self.clock = clock
        self.zone = resolve_zone(timezone)

    def _place(self, normalized: str) -> tuple[str, dt.tzinfo] | None:
        words = normalized.split()
        if "in" not in words:
            return None
        words = words[len(words) - words[::-1].index("in"):]
        while words and words[-1] in _FILLER:
            words.pop()
        if not words or words[0] in _NOT_PLACES or len(words) > 3:
            return None
        zones = _city_zones()
        for size in range(len(words), 0, -1):
            place = " ".join(words[:size])
            if place in zones:
                return place.title(), zoneinfo.ZoneInfo(zones[place])
        raise SkillInputError(f"I don't know the time zone of {' '.join(words)}. Ask me about a "
                              "big city, for example: what time is it in Tokyo.")

    def handle(self, intent: Intent, text: str) -> str:
        place = self._place(words_of(intent, text))
        if place is None:
            return f"It's {say_clock(now_in(self.clock, self.zone))}."
        city, zone = place
        return f"In {city} it's {say_clock(now_in(self.clock, zone))}."


def _weekday_date(today: dt.date, weekday: int, which: str) -> dt.date:
    ahead = (weekday - today.weekday()) % 7
    if which == "last":
        return today - dt.timedelta(days=(today.weekday() - weekday) % 7 or 7)
    if which == "next" and ahead == 0:
        ahead = 7
    return today + dt.timedelta(days=ahead)


class DateSkill:
    """Says today's date, or the date/weekday of a relative or named day."""

    name = "date"

    def __init__(self, clock: Clock, timezone: str = "") -> None:
        self.clock = clock
        self.zone = resolve_zone(timezone)

    def handle(self, intent: Intent, text: str) -> str:
        today = now_in(self.clock, self.zone).date()
        date: dict[str, Any] | None = intent.slots.get("date")
        words = set(words_of(intent, text).split())
        if not date:
            if "year" in words and "month" not in words:
                return f"It's {today.year}."
            if "month" in words:
                return f"It's {today.strftime('%B')} {today.year}."
            return f"Today is {say_date(today)}."
        handler: Callable[[dt.date, dict[str, Any]], str] = (
            self._relative if "relative_days" in date else
            self._weekday if "weekday" in date else self._month_day)
        return handler(today, date)

    def _relative(self, today: dt.date, date: dict[str, Any]) -> str:
        days = int(date["relative_days"])
        day = today + dt.timedelta(days=days)
        if days == 0:
            return f"Today is {say_date(day)}."
        if days == 1:
            return f"Tomorrow is {say_date(day)}."
        if days == -1:
            return f"Yesterday was {say_date(day)}."
        if days > 0:
            return f"In {days} days it will be {say_date(day)}."
        return f"{-days} days ago it was {say_date(day)}."

    def _weekday(self, today: dt.date, date: dict[str, Any]) -> str:
        which = date.get("which", "this")
        day = _weekday_date(today, int(date["weekday"]), which)
        if day == today:
            return f"Today is {say_date(day)}."
        label = {"last": "Last ", "next": "Next "}.get(which, "") + day.strftime("%A")
        return f"{label} {'was' if day < today else 'is'} {day.strftime('%B')} {day.day}."

    def _month_day(self, today: dt.date, date: dict[str, Any]) -> str:
        month, dom = int(date["month"]), int(date["day"])
        years = [int(date["year"])] if date.get("year") else range(today.year, today.year + 9)
        day = None
        for year in years:
            try:
                day = dt.date(year, month, dom)
            except ValueError:
                continue
            if date.get("year") or day >= today:
                break
            day = None
        if day is None:
            raise SkillInputError(f"{dt.date(2000, month, 1).strftime('%B')} {dom} does not exist"
                                  f"{' in ' + str(date['year']) if date.get('year') else ''}.")
        verb = "was" if day < today else "is"
        return f"{day.strftime('%B')} {day.day}, {day.year} {verb} a {day.strftime('%A')}."

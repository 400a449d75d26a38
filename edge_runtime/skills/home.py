"""Home control for the Home Assistant intents on the simulated home (``home_state``).

One skill, ``home``, answers: on/off, state and light settings (through ``devices.
DeviceSkill``, after an entity name such as "kitchen lamp" is split into area and device),
covers (open, close, position), locks, climate (get / set the target temperature), the
media player (pause, resume, next, previous, volume, mute), shopping and to-do lists,
weather (there is no weather source: it says so, never a made-up forecast) and timers
beyond start/cancel (``home_timers``). A request it cannot carry out safely is asked back
(``SkillInputError`` with a question: "Which cover: the garage door or the kitchen blinds?").
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..types import Intent
from .base import SkillInputError
from .devices import DeviceSkill
from .home_state import COVERS, PLAYLIST, SimHome
from .home_timers import HomeTimers
from .speech import join_words

NO_WEATHER = ("I have no weather source connected, so I can't tell you the weather. "
              "A weather service can be added to the home setup.")


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def _say(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


Handler = Callable[[dict[str, Any]], str]


def _announce(slots: dict[str, Any]) -> str:
    message = str(slots.get("message") or "").strip()
    if not message:
        raise SkillInputError("What should I announce?")
    return f"Announcement: {message}"


def common_handlers(timers: HomeTimers) -> dict[str, Handler]:
    """The intents every home backend answers the same way: weather (no source), "never
    mind", an announcement (said aloud here, the device's own speaker: no other speakers
    are reached) and the timer adjustments (timers live on the device, not in the home)."""
    return {
        "HassGetWeather": lambda s: NO_WEATHER,
        "HassBroadcast": _announce,
        "HassNevermind": lambda s: "Okay.",
        "HassIncreaseTimer": lambda s: timers.adjust(s, +1),
        "HassDecreaseTimer": lambda s: timers.adjust(s, -1),
        "HassPauseTimer": timers.pause, "HassUnpauseTimer": timers.unpause,
        "HassTimerStatus": timers.status,
    }


class HandlerTable:
    """A home backend's skill: each intent it answers has one handler in ``_handlers``
    (:meth:`device_handlers`, its own, and :func:`common_handlers`)."""

    _handlers: dict[str, Handler]
    _where = "in this home"             # "I can't do X <where> yet."

    def device_handlers(self) -> dict[str, Handler]:
        """Devices, covers and climate: the intents every backend answers with its own
        ``_switch``, ``_state``, ``_light``, ``_position`` and ``_*_temperature``."""
        return {
            "HassTurnOn": lambda s: self._switch(s, True),
            "HassTurnOff": lambda s: self._switch(s, False),
            "HassGetState": self._state, "HassLightSet": self._light,
            "HassSetPosition": self._position,
            "HassClimateGetTemperature": self._get_temperature,
            "HassClimateSetTemperature": self._set_temperature,
        }

    def _switch(self, slots: dict[str, Any], on: bool) -> str:
        raise NotImplementedError

    def _state(self, slots: dict[str, Any]) -> str:
        raise NotImplementedError

    def _light(self, slots: dict[str, Any]) -> str:
        raise NotImplementedError

    def _position(self, slots: dict[str, Any]) -> str:
        raise NotImplementedError

    def _get_temperature(self, slots: dict[str, Any]) -> str:
        raise NotImplementedError

    def _set_temperature(self, slots: dict[str, Any]) -> str:
        raise NotImplementedError

    @property
    def intents(self) -> frozenset[str]:
        return frozenset(self._handlers)

    def handler(self, intent: Intent) -> Handler:
        handler = self._handlers.get(intent.name)
        if handler is None:
            raise SkillInputError(f"I can't do {intent.name} {self._where} yet.")
        return handler


class HomeSkill(HandlerTable):
    name = "home"

    def __init__(self, home: SimHome, devices: DeviceSkill, timers: HomeTimers) -> None:
        self.home, self.devices, self.timers = home, devices, timers
        self._handlers = {
            **self.device_handlers(),
            "HassMediaPause": lambda s: self._media_play(False),
            "HassMediaUnpause": lambda s: self._media_play(True),
            "HassMediaNext": lambda s: self._media_skip(1),
            "HassMediaPrevious": lambda s: self._media_skip(-1),
            "HassSetVolume": self._volume, "HassSetVolumeRelative": self._volume_step,
            "HassMediaPlayerMute": lambda s: self._mute(True),
            "HassMediaPlayerUnmute": lambda s: self._mute(False),
            "HassShoppingListAddItem": lambda s: self._list_add(s, "shopping list"),
            "HassShoppingListCompleteItem": lambda s: self._list_done(s, "shopping list"),
            "HassListAddItem": lambda s: self._list_add(s, None),
            "HassListCompleteItem": lambda s: self._list_done(s, None),
            "HassListRemoveItem": lambda s: self._list_done(s, None, "Removed"),
            **common_handlers(self.timers),
        }

    def handle(self, intent: Intent, text: str) -> str:
        return self.handler(intent)(dict(intent.slots))

    # -- devices, covers, locks -------------------------------------------------------------
    def _device_slots(self, slots: dict[str, Any]) -> dict[str, Any]:
        """Slots for ``DeviceSkill``: an entity name split into area and device; a light
        domain without a name is the area's lights."""
        out = dict(slots)
        name = str(slots.get("name") or "")
        area, device = self.home.split_name(name)
        if device:
            out.update(area=area, device=device)
            out.pop("name", None)
        elif slots.get("domain") == "light" and not name:
            kind = next((d for d in self.home.devices if d in ("lights", "light")), None)
            if kind:
                out["device"] = kind
        return out

    def _cover(self, slots: dict[str, Any]) -> str | None:
        """The cover meant, None when the request is not about a cover."""
        name = str(slots.get("name") or "")
        if name in self.home.covers:
            return name
        kind = str(slots.get("device_class") or "")
        if slots.get("domain") != "cover" and not kind:
            return None
        matches = [c for c in self.home.covers
                   if not kind or kind in c or COVERS.get(c.rsplit(" ", 1)[-1]) == kind]
        area = slots.get("area")
        if area:
            matches = [c for c in matches if c.startswith(f"{area} ")] or matches
        if len(matches) == 1:
            return matches[0]
        options = sorted(matches) or sorted(self.home.covers)
        raise SkillInputError(f"Which one: the {join_words(options, 'or')}?")

    def _switch(self, slots: dict[str, Any], on: bool) -> str:
        name = str(slots.get("name") or "")
        if name in self.home.locks:
            with self.home.lock:
                before = self.home.locks[name]
                self.home.locks[name] = on
            verb = "Locked" if on else "Unlocked"
            return f"The {name} is already {'locked' if on else 'unlocked'}." if before == on \
                else f"{verb} the {name}."
        cover = self._cover(slots)
        if cover is not None:
            return self._move(cover, 100 if on else 0)
        return self.devices.handle(Intent("HassTurnOn" if on else "HassTurnOff", 1.0,
                                          self._device_slots(slots)), "")

    def _move(self, cover: str, position: int) -> str:
        with self.home.lock:
            before = self.home.covers[cover]
            self.home.covers[cover] = position
        if before == position:
            return f"The {cover} is already {'open' if position else 'closed'}." \
                if position in (0, 100) else f"The {cover} is already at {position} percent."
        if position in (0, 100):
            return f"{'Opened' if position else 'Closed'} the {cover}."
        return f"Set the {cover} to {position} percent open."

    def _position(self, slots: dict[str, Any]) -> str:
        cover = self._cover({**slots, "domain": "cover"})
        if cover is None:
            raise SkillInputError("Which cover should I move?")
        level = _num(slots.get("position"))
        if level is None or not 0 <= level <= 100:
            raise SkillInputError(f"How far should I open the {cover}? Say a percentage.")
        return self._move(cover, int(level))

    def _state(self, slots: dict[str, Any]) -> str:
        name = str(slots.get("name") or "")
        if name in self.home.locks:
            return f"The {name} is {'locked' if self.home.locks[name] else 'unlocked'}."
        cover = self._cover(slots) if slots.get("domain") == "cover" or name else None
        if cover is not None:
            pos = self.home.covers[cover]
            said = "closed" if pos == 0 else "open" if pos == 100 else f"{pos} percent open"
            return f"The {cover} is {said}."
        return self.devices.handle(Intent("HassGetState", 1.0, self._device_slots(slots)), "")

    def _light(self, slots: dict[str, Any]) -> str:
        return self.devices.handle(Intent("HassLightSet", 1.0, self._device_slots(slots)), "")

    # -- climate ----------------------------------------------------------------------------
    def _area(self, slots: dict[str, Any]) -> str:
        area = slots.get("area") or self.home.split_name(str(slots.get("name") or ""))[0]
        if area in self.home.temperature:
            return str(area)
        if len(self.home.areas) == 1:
            return self.home.areas[0]
        raise SkillInputError(f"Which room: the {join_words(list(self.home.areas), 'or')}?")

    def _get_temperature(self, slots: dict[str, Any]) -> str:
        if not slots.get("area") and not slots.get("name"):
            temps = sorted(set(self.home.temperature.values()))
            if len(temps) == 1:
                return f"The thermostats are set to {_say(temps[0])} degrees."
        area = self._area(slots)
        return f"The {area} thermostat is set to {_say(self.home.temperature[area])} degrees."

    def _set_temperature(self, slots: dict[str, Any]) -> str:
        value = _num(slots.get("temperature"))
        if value is None:
            raise SkillInputError("What temperature should I set? Say a number of degrees.")
        if not 5 <= value <= 35:
            raise SkillInputError(f"{_say(value)} degrees is outside the thermostat's range of "
                                  "5 to 35 degrees.")
        named = slots.get("area") or slots.get("name")
        areas = [self._area(slots)] if named else list(self.home.areas)
        with self.home.lock:
            for a in areas:
                self.home.temperature[a] = value
        where = f"the {areas[0]}" if len(areas) == 1 else "every room"
        return f"Set {where} to {_say(value)} degrees."

    # -- media ------------------------------------------------------------------------------
    def _media_play(self, play: bool) -> str:
        m = self.home.media
        with self.home.lock:
            before, m.playing = m.playing, play
        if before == play:
            return "The music is already playing." if play else "Nothing is playing."
        return f"Playing {PLAYLIST[m.track]}." if play else "Paused."

    def _media_skip(self, step: int) -> str:
        m = self.home.media
        with self.home.lock:
            m.track = (m.track + step) % len(PLAYLIST)
            m.playing = True
        return f"Playing {PLAYLIST[m.track]}."

    def _volume(self, slots: dict[str, Any]) -> str:
        level = _num(slots.get("volume_level"))
        if level is None or not 0 <= level <= 100:
            raise SkillInputError("What volume should I set? Say a percentage from 0 to 100.")
        with self.home.lock:
            self.home.media.volume = int(level)
        return f"Volume set to {int(level)} percent."

    def _volume_step(self, slots: dict[str, Any]) -> str:
        step = slots.get("volume_step")
        delta = {"up": 10, "down": -10}.get(str(step)) if _num(step) is None else _num(step)
        if delta is None:
            raise SkillInputError("Should I turn the volume up or down?")
        m = self.home.media
        with self.home.lock:
            m.volume = int(max(0, min(100, m.volume + delta)))
        return f"Volume {'up' if delta > 0 else 'down'} to {m.volume} percent."

    def _mute(self, mute: bool) -> str:
        with self.home.lock:
            self.home.media.muted = mute
        return "Muted." if mute else "Unmuted."

    # -- lists ------------------------------------------------------------------------------
    def _which_list(self, slots: dict[str, Any], default: str | None) -> str:
        name = str(slots.get("name") or default or "")
        if name not in self.home.lists:
            raise SkillInputError(f"Which list: the {join_words(list(self.home.lists), 'or')}?")
        return name

    def _list_add(self, slots: dict[str, Any], default: str | None) -> str:
        name = self._which_list(slots, default)
        item = str(slots.get("item") or "").strip()
        if not item:
            raise SkillInputError(f"What should I add to the {name}?")
        with self.home.lock:
            self.home.lists[name].append(item)
        return f"Added {item} to the {name}."

    def _list_done(self, slots: dict[str, Any], default: str | None,
                   verb: str = "Checked off") -> str:
        name = self._which_list(slots, default)
        item = str(slots.get("item") or "").strip()
        with self.home.lock:
            items = self.home.lists[name]
            if item not in items:
                have = join_words(items) if items else "nothing"
                raise SkillInputError(f"I can't find {item or 'that'} on the {name}; "
                                      f"it has {have}.")
            items.remove(item)
        return f"{verb} {item} on the {name}."


class ClarifySkill:
    """Asks a home request back when the understanding is not sure enough to act."""

    name = "clarify"

    def handle(self, intent: Intent, text: str) -> str:
        return str(intent.slots.get("question") or "Sorry, could you say that again?")

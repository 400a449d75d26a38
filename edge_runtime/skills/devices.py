"""Device control on simulated, in-memory device state (every configured device in every
configured area, all off at start). Intents ``device_on``, ``device_off``, ``device_status``
with slots ``area`` and ``device`` (from ``nlu.lists``), and the Home Assistant intents
``HassTurnOn``, ``HassTurnOff``, ``HassGetState`` and ``HassLightSet`` (a model trained on
Home Assistant templates, ``nlu.hass_model``) with their slots: ``name`` (an entity: "desk
lamp" is the configured device "lamp"), ``area``, ``floor``, ``device_class``, ``brightness``
(percent), ``color``, ``temperature`` (kelvin)."""
from __future__ import annotations

import threading
from typing import Any
from collections.abc import Callable

from ..types import Intent
from .base import SkillInputError
from .speech import join_words


class DeviceStore:
    """On/off state and light settings per (area, device); thread-safe."""

    def __init__(self, areas: tuple[str, ...], devices: tuple[str, ...]) -> None:
        self.areas, self.devices = tuple(areas), tuple(devices)
        self._on: dict[tuple[str, str], bool] = {(a, d): False for a in self.areas
                                                 for d in self.devices}
        self._settings: dict[tuple[str, str], dict[str, Any]] = {k: {} for k in self._on}
        self._lock = threading.Lock()

    def settings(self, area: str, device: str) -> dict[str, Any]:
        """A copy of the light settings (``brightness`` percent, ``color``, ``temperature`` K)."""
        with self._lock:
            return dict(self._settings[(area, device)])

    def adjust(self, area: str, device: str, **settings: Any) -> None:
        """Store light settings; the device is on afterwards, unless brightness is 0."""
        with self._lock:
            self._settings[(area, device)].update(settings)
            self._on[(area, device)] = settings.get("brightness", 1) != 0

    def get(self, area: str, device: str) -> bool:
        with self._lock:
            return self._on[(area, device)]

    def set(self, area: str, device: str, on: bool) -> bool:
        """Set the state; returns the previous state."""
        with self._lock:
            before = self._on[(area, device)]
            self._on[(area, device)] = on
            return before

    def devices_where(self, area: str, on: bool) -> list[str]:
        with self._lock:
            return [d for d in self.devices if self._on[(area, d)] == on]

    def areas_where(self, device: str, on: bool) -> list[str]:
        with self._lock:
            return [a for a in self.areas if self._on[(a, device)] == on]


def _verb(device: str) -> str:
    return "are" if device.endswith("s") else "is"


class DeviceSkill:
    name = "device"

    def __init__(self, store: DeviceStore) -> None:
        self.store = store
        self._handlers: dict[str, Callable[[dict[str, Any]], str]] = {
            "device_on": lambda s: self._switch(s, True),
            "device_off": lambda s: self._switch(s, False),
            "device_status": self._status,
            "HassTurnOn": lambda s: self._switch(self._from_hass(s), True),
            "HassTurnOff": lambda s: self._switch(self._from_hass(s), False),
            "HassGetState": lambda s: self._status(self._from_hass(s)),
            "HassLightSet": self._light_set}

    def handle(self, intent: Intent, text: str) -> str:
        handler = self._handlers.get(intent.name)
        if handler is None:
            raise SkillInputError(f"The device skill cannot handle {intent.name}.")
        return handler(intent.slots)

    def _device(self, slots: dict[str, Any], area: str | None) -> str:
        device = slots.get("device")
        if device not in self.store.devices:
            where = f" in the {area}" if area else ""
            raise SkillInputError(f"Which device{where}? I can control the "
                                  f"{join_words(list(self.store.devices), 'or')}.")
        return device

    def _area(self, slots: dict[str, Any], device: str) -> str:
        area = slots.get("area")
        if area not in self.store.areas:
            raise SkillInputError(f"Which room should I use for the {device}? I know the "
                                  f"{join_words(list(self.store.areas), 'and')}.")
        return area

    def _switch(self, slots: dict[str, Any], on: bool) -> str:
        device = self._device(slots, slots.get("area"))
        state = "on" if on else "off"
        if slots.get("area") is None:
            if slots.get("all"):
                changed = [a for a in self.store.areas if self.store.set(a, device, on) != on]
                return f"Turned {state} the {device} in {len(changed)} rooms." if changed else \
                    f"All the {device} {_verb(device)} already {state}."
            other = self.store.areas_where(device, not on)
            if not on and len(other) == 1:       # "turn off the lights": the only ones that are on
                slots = {**slots, "area": other[0]}
        area = self._area(slots, device)
        if self.store.set(area, device, on) == on:
            return f"The {area} {device} {_verb(device)} already {state}."
        return f"Turned {state} the {area} {device}."

    def _status(self, slots: dict[str, Any]) -> str:
        area = slots.get("area")
        if area in self.store.areas and slots.get("device") is None:
            on = self.store.devices_where(area, True)
            if not on:
                return f"Everything in the {area} is off."
            verb = "are" if len(on) > 1 else _verb(on[0])
            return f"In the {area}, the {join_words(on)} {verb} on."
        device = self._device(slots, area)
        if area in self.store.areas:
            state = "on" if self.store.get(area, device) else "off"
            return f"The {area} {device} {_verb(device)} {state}."
        areas = self.store.areas_where(device, True)
        if not areas:
            return f"No {device} {_verb(device)} on."
        if len(areas) == len(self.store.areas):
            return f"The {device} {_verb(device)} on everywhere."
        return f"The {device} {_verb(device)} on in the {join_words(areas)}."

    # -- Home Assistant slots ----------------------------------------------------------------
    def _known_device(self, value: Any) -> str | None:
        """The configured device a Home Assistant value means: itself, its singular or plural
        ("light" / "lights"), or its last word ("desk lamp" -> "lamp")."""
        if not isinstance(value, str) or not value:
            return None
        for word in (value, value.split()[-1]):
            for form in (word, word.rstrip("s"), word + "s"):
                if form in self.store.devices:
                    return form
        return None

    def _from_hass(self, slots: dict[str, Any], default: str | None = None) -> dict[str, Any]:
        """``area``/``device``/``all`` slots of the store from Home Assistant slots."""
        floor, area = slots.get("floor"), slots.get("area")
        if floor and area is None:
            raise SkillInputError(f"I don't know which rooms are {_on_floor(floor)}. Name a room, "
                                  f"for example the {self.store.areas[0]}." if self.store.areas
                                  else "I have no rooms to control.")
        device = next((d for d in (self._known_device(slots.get(k)) for k in
                                   ("device", "name", "device_class")) if d), default)
        return {**slots, "device": device}

    def _light_set(self, slots: dict[str, Any]) -> str:
        lamp = next((d for d in self.store.devices if d.rstrip("s") in ("light", "lamp")), None)
        slots = self._from_hass(slots, default=lamp)
        device = self._device(slots, slots.get("area"))
        area = self._area(slots, device)
        settings = {k: slots[k] for k in ("brightness", "color", "temperature") if k in slots}
        if not settings:
            raise SkillInputError(f"How should I set the {area} {device}? Say a brightness in "
                                  "percent or a color.")
        if "brightness" in settings:
            level = settings["brightness"]
            if not isinstance(level, (int, float)) or not 0 <= level <= 100:
                raise SkillInputError(f"Brightness goes from 0 to 100 percent, not {level}.")
        self.store.adjust(area, device, **settings)
        said = [f"{_number(settings['brightness'])} percent" if "brightness" in settings else "",
                str(settings.get("color", "")),
                f"{_number(settings['temperature'])} kelvin" if "temperature" in settings else ""]
        return f"Set the {area} {device} to {join_words([p for p in said if p])}."


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _on_floor(floor: str) -> str:
    return floor if floor in ("upstairs", "downstairs") else f"on the {floor}"

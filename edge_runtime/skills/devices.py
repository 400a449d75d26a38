"""Device control on simulated, in-memory device state (every configured device in every
configured area, all off at start). Intents ``device_on``, ``device_off``, ``device_status``
with slots ``area`` and ``device`` (from ``nlu.lists``)."""
from __future__ import annotations

import threading
from typing import Any, Callable

from ..types import Intent
from .base import SkillInputError
from .speech import join_words


class DeviceStore:
    """On/off state per (area, device); thread-safe."""

    def __init__(self, areas: tuple[str, ...], devices: tuple[str, ...]) -> None:
        self.areas, self.devices = tuple(areas), tuple(devices)
        self._on: dict[tuple[str, str], bool] = {(a, d): False for a in self.areas for d in self.devices}
        self._lock = threading.Lock()

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
            "device_on": lambda s: self._switch(s, True), "device_off": lambda s: self._switch(s, False),
            "device_status": self._status}

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
            return f"In the {area}, the {join_words(on)} {'are' if len(on) > 1 else _verb(on[0])} on." \
                if on else f"Everything in the {area} is off."
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

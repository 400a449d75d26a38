"""The simulated home beyond switches: thermostats, covers, locks, a media player, lists.

``SimHome`` names every entity of the simulated home for the understanding (``entities``:
name -> Home Assistant domain, so "kitchen lamp" or "garage door" is understood as an
entity) and keeps their state: the target temperature per area, each cover's position
(0 closed .. 100 open), each lock, one media player (playing, track, volume, muted) and
the shopping and to-do lists. On/off devices stay in ``devices.DeviceStore``. Thread-safe.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol

# device kinds of ``nlu.lists["device"]`` -> Home Assistant domain
DEVICE_DOMAINS = {"lights": "light", "light": "light", "lamp": "light", "lamps": "light",
                  "fan": "fan", "heater": "switch", "tv": "media_player",
                  "speaker": "media_player", "thermostat": "climate"}
COVERS = {"garage door": "garage", "blinds": "blind", "curtains": "curtain"}
LOCKS = ("front door", "back door")
LISTS = ("shopping list", "to do list")
PLAYLIST = ("Morning Light", "Blue Harbour", "Slow River", "Paper Planes", "Night Drive")


class HomeBackend(Protocol):
    """What the understanding reads from a home: ``SimHome`` or, with ``home.backend =
    "home_assistant"``, ``ha_client.HAHome`` (areas and entities read from Home Assistant)."""

    areas: tuple[str, ...]

    def entities(self) -> dict[str, str]: ...


@dataclass
class MediaState:
    playing: bool = False
    track: int = 0
    volume: int = 50
    muted: bool = False


@dataclass
class SimHome:
    areas: tuple[str, ...]
    devices: tuple[str, ...]
    temperature: dict[str, float] = field(default_factory=dict)     # area -> target °C
    covers: dict[str, int] = field(default_factory=dict)            # cover name -> position
    locks: dict[str, bool] = field(default_factory=dict)            # lock name -> locked
    lists: dict[str, list[str]] = field(default_factory=dict)
    media: MediaState = field(default_factory=MediaState)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.temperature = {a: 20.0 for a in self.areas}
        self.covers = {"garage door": 0, **{f"{a} blinds": 0 for a in self.areas}}
        self.locks = {name: True for name in LOCKS}
        self.lists = {name: [] for name in LISTS}

    def entities(self) -> dict[str, str]:
        """Entity name -> domain, for the understanding's lists."""
        out = {f"{a} {d}": DEVICE_DOMAINS.get(d, "switch")
               for a in self.areas for d in self.devices}
        out.update({name: "cover" for name in self.covers})
        out.update({name: "lock" for name in self.locks})
        out.update({name: "todo" for name in self.lists})
        out["media player"] = "media_player"
        return out

    def split_name(self, name: str) -> tuple[str | None, str | None]:
        """(area, device) of a device entity name ("kitchen lamp"), else (None, None)."""
        for a in sorted(self.areas, key=len, reverse=True):
            if name.startswith(a + " ") and name[len(a) + 1:] in self.devices:
                return a, name[len(a) + 1:]
        return None, None

"""A model directory trained on Home Assistant templates, as the daemon uses it.

At build time ``train.hass_model`` samples the templates into training and held-out rows
(``edge-runtime nlu hass-prepare``) and adds two files to an encoder directory trained on
them (``edge-runtime nlu hass-export``):

- ``hass.json``: the template pins (home-assistant-intents and hassil versions, language),
  the slot lists the sentences were sampled with, and the ``SlotFiller`` tables, so the
  daemon fills Home Assistant slots without hassil or the templates installed;
- ``intents.yaml``: the intent file (``loader`` schema): which skill answers each Hass
  intent (``train.hass_model.HASS_SKILLS``), with training sentences as examples, plus the
  built-in intents that some Hass intents are answered as (``BRIDGE``: timers, time, date,
  stop).

``HassSlots`` (loaded by ``Understander`` when ``hass.json`` is there) turns a classified
sentence into Home Assistant slots, typed (numbers as int/float), reconciled with hassil's own
template match (``combine``) when hassil and the pinned templates are installed. ``bridge``
renames a Hass intent the built-in skills know under another name and adds the slots those
skills read ("HassStartTimer" {"minutes": 5} -> "timer_set" {"duration_s": 300.0, ...}).
"""
from __future__ import annotations

import importlib.metadata
import json
import logging
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from .base import OOS
from .hass import AREAS, FLOORS, NAMES, SlotFiller

log = logging.getLogger(__name__)

HASS_FILE = "hass.json"
HASS_FORMAT = 1
PACKAGES = ("home-assistant-intents", "hassil")
# Hass intent -> the built-in intent whose skill answers it (slots added by ``bridge``)
BRIDGE = {"HassStartTimer": "timer_set", "HassCancelTimer": "timer_cancel",
          "HassCancelAllTimers": "timer_cancel", "HassTimerStatus": "timer_status",
          "HassGetCurrentTime": "get_time", "HassGetCurrentDate": "get_date",
          "HassNevermind": "stop"}


class HassModelError(ConfigError):
    """The Home Assistant files of a model directory are missing or unusable."""


Parse = tuple[str, tuple[tuple[str, str], ...]]


def combine(ours: Parse, confidence: float, templates: Parse, trust: float = 0.95) -> Parse:
    """One parse from ours (model + ``SlotFiller``) and hassil's template match.

    No template match: ours. Same intent: hassil's slots, unless ours found more (a
    misheard number that breaks the template's slot: "70 one second timer"). Different
    intents: ours only when the model is at least ``trust`` sure, else the template's
    (a template match is strong evidence on clean text; recognition errors that make a
    different template match are rarer than the model's near-misses on unusual wording)."""
    if templates[0] == OOS:
        return ours
    if templates[0] == ours[0]:
        return ours if len(ours[1]) > len(templates[1]) else templates
    return ours if confidence >= trust else templates


def installed_pins() -> dict[str, str | None]:
    """Installed versions of the template packages (None = not installed)."""
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _typed(value: str) -> Any:
    """Slot text as hassil gives it: numbers as int/float, other values unchanged."""
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if number.is_integer() else number


class HassSlots:
    """Home Assistant slots for the daemon, from a model directory's ``hass.json``."""

    def __init__(self, model_dir: str | Path, templates_first: bool = True) -> None:
        """``templates_first``: also match hassil's templates and reconcile (``combine``)
        when hassil and the pinned template version are installed; else the filler alone."""
        path = Path(model_dir).expanduser() / HASS_FILE
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
            if meta.get("format") != HASS_FORMAT:
                raise ValueError(f"format {meta.get('format')!r} is not {HASS_FORMAT}")
            self.filler = SlotFiller.from_dict(meta["slots"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise HassModelError(f"Home Assistant slot file {path} is unusable: {exc}",
                                 hint="write it again: python -m benchmarks.nlu_hass export "
                                      "--work DIR --model MODEL_DIR") from None
        self.pins = dict(meta.get("templates") or {})
        self.lists = dict(meta.get("lists") or {})
        self.language = str(meta.get("language", "en"))
        self.templates = self._templates() if templates_first else None

    def _templates(self):
        have = installed_pins()
        if have != self.pins:
            log.info("hassil template matching off: the model was built with %s, installed: %s",
                     self.pins, have)
            return None
        from .hass import HassData
        return HassData(self.language, areas=tuple(self.lists.get("area", AREAS)),
                        floors=tuple(self.lists.get("floor", FLOORS)),
                        names=dict(self.lists.get("name", NAMES)))

    @property
    def intents(self) -> frozenset[str]:
        return self.filler.intents

    def parse(self, name: str, confidence: float, text: str) -> tuple[str, dict[str, Any]]:
        """(intent, typed slots) for ``text`` that the model classified as ``name``; the
        intent may change when hassil's templates are on and disagree (``combine``)."""
        ours = (name, self.filler.fill(name, text) if name in self.intents else ())
        if self.templates is not None:
            name, slots = combine(ours, confidence, self.templates.hassil_parse(text))
        else:
            slots = ours[1]
        return name, {k: _typed(v) for k, v in slots}


def _seconds(slots: Mapping[str, Any], prefix: str = "") -> float | None:
    parts = [slots.get(prefix + unit) for unit in ("hours", "minutes", "seconds")]
    if all(p is None for p in parts):
        return None
    h, m, s = (float(p or 0) for p in parts)
    return h * 3600 + m * 60 + s


def bridge(name: str, slots: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The built-in intent and slots a Hass intent is answered as (``BRIDGE``); other intents
    unchanged. Timers get ``duration_s`` (to set, or of the timer meant: "cancel the 5 minute
    timer"), "cancel all timers" gets ``all``; the Home Assistant slots stay."""
    target = BRIDGE.get(name)
    if target is None:
        return name, dict(slots)
    out = dict(slots)
    seconds = _seconds(slots, "" if name == "HassStartTimer" else "start_")
    if seconds is not None:
        out["duration_s"] = seconds
    if name == "HassCancelAllTimers":
        out["all"] = True
    return target, out

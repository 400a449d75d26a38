"""A model directory trained on Home Assistant templates, as the daemon uses it.

``prepare_dataset`` samples the templates into training and held-out rows
(``edge-runtime nlu hass prepare``); ``export_model`` / ``write_model_files(model_dir,
filler, examples, lists)`` add two files to an encoder directory trained on them
(``edge-runtime nlu hass export``):

- ``hass.json``: the template pins (home-assistant-intents and hassil versions, language),
  the slot lists the sentences were sampled with, and the ``SlotFiller`` tables, so the
  daemon fills Home Assistant slots without hassil or the templates installed;
- ``intents.yaml``: the intent file (``loader`` schema): which skill answers each Hass
  intent (``HASS_SKILLS``), with training sentences as examples, plus the built-in intents
  that some Hass intents are answered as (``BRIDGE``: timers, time, date, stop).

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
from typing import Any, Mapping

import yaml

from ..errors import ConfigError
from .datasets import Example, write_jsonl
from .hass import AREAS, FLOORS, NAMES, HassData, SlotFiller
from .loader import BUILTIN_INTENTS, MIN_EXAMPLES
from .text import normalize_text

log = logging.getLogger(__name__)

HASS_FILE = "hass.json"
HASS_FORMAT = 1
PACKAGES = ("home-assistant-intents", "hassil")
# Hass intent -> the built-in intent whose skill answers it (slots added by ``bridge``)
BRIDGE = {"HassStartTimer": "timer_set", "HassCancelTimer": "timer_cancel",
          "HassCancelAllTimers": "timer_cancel", "HassTimerStatus": "timer_status",
          "HassGetCurrentTime": "get_time", "HassGetCurrentDate": "get_date",
          "HassNevermind": "stop"}
# Hass intent -> skill for the others with a skill (the rest go to the LLM, never cached)
HASS_SKILLS = {"HassTurnOn": "device", "HassTurnOff": "device", "HassGetState": "device",
               "HassLightSet": "device"}
_EXTRACTOR_SLOTS = {"device": ["device", "all"]}    # generic slots a skill also reads
_EXAMPLES = 5


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
    if templates[0] == "oos":
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


def _intent_file(examples: Mapping[str, list[str]]) -> dict:
    builtin = yaml.safe_load(BUILTIN_INTENTS.read_text(encoding="utf-8"))["intents"]
    intents: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for target in sorted(set(BRIDGE.values())):
        intents[target] = builtin[target]
        owner.update({normalize_text(e): target for e in builtin[target]["examples"]})
    for name in sorted(examples):
        if name in BRIDGE or name == "oos":
            continue
        chosen = []
        for text in examples[name]:
            key = normalize_text(text)
            if key and owner.setdefault(key, name) == name and key not in chosen:
                chosen.append(key)
            if len(chosen) == _EXAMPLES:
                break
        if len(chosen) < MIN_EXAMPLES:        # the LLM answers it, with its slots
            log.warning("%s left out of the intent file: %d distinct examples", name, len(chosen))
            continue
        skill = HASS_SKILLS.get(name)
        intents[name] = {"skill": skill, "description": f"Home Assistant intent {name}",
                         "cacheable": False, "examples": chosen}
        if skill in _EXTRACTOR_SLOTS:
            intents[name]["slots"] = _EXTRACTOR_SLOTS[skill]
    return {"version": 1, "intents": intents}


def write_model_files(model_dir: str | Path, filler: SlotFiller, examples: Mapping[str, list[str]],
                      lists: Mapping[str, Any] | None = None, language: str = "en") -> list[Path]:
    """Write ``hass.json`` and ``intents.yaml`` into ``model_dir``; returns their paths.
    ``examples``: training sentences by intent (the first few unambiguous ones become the
    intent file's examples); ``lists``: the ``area``/``floor``/``name`` lists sampled with."""
    out = Path(model_dir).expanduser()
    lists = dict(lists or {"area": list(AREAS), "floor": list(FLOORS), "name": dict(NAMES)})
    meta = {"format": HASS_FORMAT, "language": language, "templates": installed_pins(),
            "lists": lists, "slots": filler.to_dict()}
    hass_path, intents_path = out / HASS_FILE, out / "intents.yaml"
    hass_path.write_text(json.dumps(meta), encoding="utf-8")
    header = ("# Home Assistant intents of this model (written by edge_runtime.nlu.hass_model);\n"
              "# schema: edge_runtime/nlu/intents.yaml. Edit skills, caching and budgets here.\n")
    intents_path.write_text(header + yaml.safe_dump(_intent_file(examples), sort_keys=False,
                                                    width=100), encoding="utf-8")
    return [hass_path, intents_path]


def prepare_dataset(out: str | Path, per_template: int = 8, test_per_template: int = 2,
                    oos: list[Example] | None = None) -> dict:
    """Write ``train.jsonl`` (``per_template`` sentences of every usable English template,
    seed 1, plus the ``oos`` rows) and ``test.jsonl`` (seed 2, sentences of the training
    set removed), both with slot values, into ``out``; returns the counts."""
    hass = HassData()
    train = hass.sample(per_template, seed=1)
    seen = {normalize_text(r.text) for r in train}
    test = [r for r in hass.sample(test_per_template, seed=2) if normalize_text(r.text) not in seen]
    oos = list(oos or [])
    path = Path(out).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    write_jsonl(train + oos, path / "train.jsonl")
    write_jsonl(test, path / "test.jsonl")
    return {"train": len(train), "oos": len(oos), "test": len(test),
            "intents": len({r.intent for r in train}), "templates": installed_pins(),
            "out": str(path)}


def export_model(train: list[Example], model_dir: str | Path) -> list[Path]:
    """``write_model_files`` for a model trained on ``train`` (rows of ``prepare_dataset``)."""
    path = Path(model_dir).expanduser()
    if not (path / "meta.json").is_file():
        raise HassModelError(f"{path} is not a trained model directory (no meta.json)",
                             hint="train it first: edge-runtime nlu train --data DIR/train.jsonl "
                                  "--out MODEL_DIR")
    rows = [r for r in train if r.intent != "oos"]
    examples: dict[str, list[str]] = {}
    for row in rows:
        examples.setdefault(row.intent, []).append(row.text)
    return write_model_files(path, SlotFiller(HassData(), rows), examples)


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

"""Build time: the Home Assistant files of a model directory (``nlu.hass_model`` reads them).

``prepare_dataset`` samples the templates into training and held-out rows
(``edge-runtime nlu hass-prepare``); ``export_model`` / ``write_model_files(model_dir,
filler, examples, lists)`` add ``hass.json`` and ``intents.yaml`` to an encoder directory
trained on them (``edge-runtime nlu hass-export``).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from collections.abc import Mapping
from typing import Any

import yaml

from ..base import OOS
from ..hass import AREAS, FLOORS, NAMES
from ..hass_model import BRIDGE, HASS_FILE, HASS_FORMAT, HassModelError, installed_pins
from ..loader import BUILTIN_INTENTS, MIN_EXAMPLES
from ..text import normalize_text
from .datasets import Example, write_jsonl
from .hass import HassData, SlotFiller

log = logging.getLogger(__name__)

# Hass intent -> skill for the others with a skill (the rest go to the LLM, never cached)
HASS_SKILLS = {"HassTurnOn": "device", "HassTurnOff": "device", "HassGetState": "device",
               "HassLightSet": "device"}
_EXTRACTOR_SLOTS = {"device": ["device", "all"]}    # generic slots a skill also reads
_EXAMPLES = 5


def _intent_file(examples: Mapping[str, list[str]]) -> dict:
    builtin = yaml.safe_load(BUILTIN_INTENTS.read_text(encoding="utf-8"))["intents"]
    intents: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for target in sorted(set(BRIDGE.values())):
        intents[target] = builtin[target]
        owner.update({normalize_text(e): target for e in builtin[target]["examples"]})
    for name in sorted(examples):
        if name in BRIDGE or name == OOS:
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
    rows = [r for r in train if r.intent != OOS]
    examples: dict[str, list[str]] = {}
    for row in rows:
        examples.setdefault(row.intent, []).append(row.text)
    return write_model_files(path, SlotFiller(HassData(), rows), examples)

"""Labelled sentences for training and evaluation: JSONL or an intent YAML file.

JSONL: one ``{"text": ..., "intent": ...}`` object a line, ``intent == "oos"`` for out of
scope (CLINC150's format). YAML: an intent definition file (see ``intents.yaml``); every
example becomes one row. ``DataFileError`` names the file, the line and the fix.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError
from ..loader import load_intents


class DataFileError(ConfigError):
    """A training or evaluation data file is missing or malformed."""


@dataclass(frozen=True)
class Example:
    text: str
    intent: str
    slots: tuple[tuple[str, str], ...] = ()    # expected (slot, value) pairs, when known


def read_jsonl(path: str | Path) -> list[Example]:
    path = Path(path)
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataFileError(f"data file {path} does not exist",
                            hint="pass an existing --data FILE") from None
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            text, intent = obj["text"], obj["intent"]
        except (ValueError, KeyError, TypeError):
            raise DataFileError(f"data file {path}, line {no}: not a JSON object with 'text' and "
                                "'intent'",
                                hint='write one {"text": ..., "intent": ...} a line') from None
        if not isinstance(text, str) or not isinstance(intent, str) or not intent:
            raise DataFileError(f"data file {path}, line {no}: 'text' and 'intent' must be strings")
        slots = obj.get("slots") or {}
        pairs = tuple(sorted((str(k), str(v)) for k, v in slots.items()))
        rows.append(Example(text, intent, pairs))
    if not rows:
        raise DataFileError(f"data file {path} has no rows")
    return rows


def read_examples(path: str | Path) -> list[Example]:
    """Rows of a ``.jsonl`` file, or the examples of an intent ``.yaml``/``.yml`` file."""
    p = Path(path).expanduser()
    if p.suffix in (".yaml", ".yml"):
        intents = load_intents(p)
        return [Example(text, spec.name) for spec in intents.intents.values()
                for text in spec.examples]
    return read_jsonl(p)


def split_holdout(rows: list[Example], share: float, seed: int = 0
                  ) -> tuple[list[Example], list[Example]]:
    """(train, held out): ``share`` of each intent's rows held out (at least one when it has 3+)."""
    by_intent: dict[str, list[Example]] = {}
    for row in rows:
        by_intent.setdefault(row.intent, []).append(row)
    rnd = random.Random(seed)
    train, held = [], []
    for name in sorted(by_intent):
        group = by_intent[name][:]
        rnd.shuffle(group)
        cut = int(round(len(group) * share)) if len(group) >= 3 else 0
        cut = max(cut, 1) if len(group) >= 3 and share > 0 else cut
        held += group[:cut]
        train += group[cut:]
    return train, held


def write_jsonl(rows: list[Example], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            obj: dict[str, object] = {"text": r.text, "intent": r.intent}
            if r.slots:
                obj["slots"] = dict(r.slots)
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")

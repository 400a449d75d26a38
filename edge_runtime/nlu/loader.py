"""Load and validate an intent definition file (YAML) into an ``IntentSet``.

See the header of ``intents.yaml`` (the built-in set) for the schema. Every problem
raises ``IntentFileError`` naming the file, the intent and the key.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from .base import OOS, IntentSet, IntentSpec
from .text import normalize_text

log = logging.getLogger(__name__)

BUILTIN_INTENTS = Path(__file__).with_name("intents.yaml")
MIN_EXAMPLES = 3
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_INTENT_NAME = re.compile(r"^(?:[a-z][a-z0-9_]{0,63}|Hass[A-Z][A-Za-z0-9]{0,59})$")   # + HassTurnOn
_TOP_KEYS = ("version", "intents")
_INTENT_KEYS = ("skill", "description", "cacheable", "cache_ttl_s", "budget_ms", "slots",
                "abstain_without", "examples")


class IntentFileError(ConfigError):
    """The intent definition file is missing, not YAML, or breaks the schema."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate mapping keys (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _fail(where: str, what: str, hint: str | None = None) -> IntentFileError:
    return IntentFileError(f"intent file {where}: {what}",
                           hint=hint or "fix the file (see the schema at the top of the built-in "
                                        "edge_runtime/nlu/intents.yaml)")


def _str_list(where: str, key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        bad = value if not isinstance(value, list) else \
            next(v for v in value if not (isinstance(v, str) and v.strip()))
        raise _fail(where, f"{key} must be a list of non-empty strings; found {bad!r}",
                    hint='quote values YAML reads as non-strings, e.g. - "yes", - "no", - "on"')
    return tuple(v.strip() for v in value)


def _number(where: str, key: str, value: Any, positive: bool) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
            or (positive and value == 0):
        raise _fail(where, f"{key} must be a {'positive' if positive else 'non-negative'} "
                           f"number or null; found {value!r}")
    return float(value)


def _spec(src: str, name: Any, body: Any) -> IntentSpec:
    where = f"{src}, intent {name!r}"
    if not isinstance(name, str) or not _INTENT_NAME.match(name):
        raise _fail(where, "intent names must be lower_snake_case (a-z, 0-9, _), starting with a "
                           "letter, or Home Assistant names (HassTurnOn)")
    if not isinstance(body, dict):
        raise _fail(where, f"must be a mapping of keys ({', '.join(_INTENT_KEYS)})")
    unknown = [k for k in body if k not in _INTENT_KEYS]
    if unknown:
        raise _fail(where, f"unknown key {unknown[0]!r}",
                    hint=f"known keys: {', '.join(_INTENT_KEYS)}")
    skill = body.get("skill")
    if skill is not None and (not isinstance(skill, str) or not _NAME.match(skill)):
        raise _fail(where, f"skill must be a lower_snake_case skill name or null; found {skill!r}")
    if name == OOS and skill is not None:
        raise _fail(where, "the oos intent is answered by the LLM and cannot name a skill")
    cacheable = body.get("cacheable", name == OOS)
    if not isinstance(cacheable, bool):
        raise _fail(where, f"cacheable must be true or false; found {cacheable!r}")
    examples = _str_list(where, "examples", body.get("examples"))
    usable = {normalize_text(e) for e in examples} - {""}
    if len(usable) < MIN_EXAMPLES:
        raise _fail(where, f"needs at least {MIN_EXAMPLES} distinct examples, has {len(usable)}")
    slots = _str_list(where, "slots", body.get("slots"))
    abstain = _str_list(where, "abstain_without", body.get("abstain_without"))
    missing = [s for s in abstain if s not in slots]
    if missing:
        raise _fail(where, f"abstain_without names {missing[0]!r}, which is not in slots")
    description = body.get("description", "")
    if not isinstance(description, str):
        raise _fail(where, f"description must be text; found {description!r}")
    return IntentSpec(name=name, examples=examples, skill=skill, cacheable=cacheable,
                      cache_ttl_s=_number(where, "cache_ttl_s", body.get("cache_ttl_s"), False),
                      budget_ms=_number(where, "budget_ms", body.get("budget_ms"), True),
                      slots=slots, description=description, abstain_without=abstain)


def parse_intents(text: str, source: str = "<string>") -> dict[str, IntentSpec]:
    """Validate YAML text and return its intents by name (no built-in additions)."""
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise _fail(source, f"is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise _fail(source, "must be a mapping with an 'intents' key")
    unknown = [k for k in data if k not in _TOP_KEYS]
    if unknown:
        raise _fail(source, f"unknown top-level key {unknown[0]!r}",
                    hint=f"known: {', '.join(_TOP_KEYS)}")
    if data.get("version", 1) != 1:
        raise _fail(source, f"version {data.get('version')!r} is not supported",
                    hint="use version: 1")
    intents = data.get("intents")
    if not isinstance(intents, dict) or not intents:
        raise _fail(source, "'intents' must be a non-empty mapping of intent name -> definition")
    specs = {name: _spec(source, name, body) for name, body in intents.items()}
    owner: dict[str, str] = {}
    for spec in specs.values():
        for example in spec.examples:
            key = normalize_text(example)
            if owner.get(key, spec.name) != spec.name:
                raise _fail(f"{source}, intent {spec.name!r}",
                            f"example {example!r} is also an example of {owner[key]!r}",
                            hint="an example may belong to one intent only")
            owner[key] = spec.name
    return specs


def load_intents(path: str | Path | None = None) -> IntentSet:
    """Load an intent file; ``None`` or ``""`` = the built-in set.

    A user file without an ``oos`` intent gets the built-in out-of-scope examples, so
    the classifier can still abstain.
    """
    file = Path(path).expanduser() if path else BUILTIN_INTENTS
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _fail(str(file), "does not exist",
                    hint="set nlu.intents_file to an existing YAML file, or to \"\" for the "
                         "built-in set") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(str(file), f"cannot be read: {exc}") from None
    specs = parse_intents(text, str(file))
    if OOS not in specs:
        builtin = parse_intents(BUILTIN_INTENTS.read_text(encoding="utf-8"), str(BUILTIN_INTENTS))
        taken = {normalize_text(e) for s in specs.values() for e in s.examples}
        oos = builtin[OOS]
        specs[OOS] = IntentSpec(name=OOS, description=oos.description, cacheable=True,
                                examples=tuple(e for e in oos.examples
                                               if normalize_text(e) not in taken))
    if len(specs) < 2:
        raise _fail(str(file), "defines no intent besides oos")
    log.info("loaded %d intents from %s", len(specs), file)
    return IntentSet(intents=specs, source="" if not path else str(file))

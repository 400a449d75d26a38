"""The loading machinery behind :mod:`edge_runtime.config`: value coercion, applying
section tables to the dataclasses, environment and ``--set`` parsing, TOML writing.

Generic over any config dataclass whose fields are section dataclasses, so it needs no
import of :mod:`edge_runtime.config` (the section classes stay there).
"""
from __future__ import annotations

import collections.abc
import dataclasses
import json
import typing
from typing import Any, TypeVar
from collections.abc import Mapping

from .errors import ConfigError

ENV_PREFIX = "EDGE_RUNTIME_"
HINT = "fix it in the TOML file, env or --set"

C = TypeVar("C")


def check(ok: bool, key: str, what: str) -> None:
    """Raise a ConfigError naming ``key`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"config key {key} {what}", hint=HINT)


def coerce(key: str, value: Any, typ: Any) -> Any:
    """Convert ``value`` (from TOML, env or CLI) to ``typ``, or raise a ConfigError that
    names ``key``."""
    origin = typing.get_origin(typ)
    try:
        if typ is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on"):
                return True
            if isinstance(value, str) and value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if typ is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if typ is float:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if typ is str:
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise ValueError
            return str(value)
        if origin is tuple:
            (item,) = {a for a in typing.get_args(typ) if a is not Ellipsis}
            if isinstance(value, str):
                value = json.loads(value) if value.strip().startswith("[") else \
                    [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, (list, tuple)):
                raise ValueError
            return tuple(coerce(key, v, item) for v in value)
        if origin in (collections.abc.Mapping, dict):
            kt, vt = typing.get_args(typ)
            if isinstance(value, str):
                value = json.loads(value)
            if not isinstance(value, Mapping):
                raise ValueError
            return {coerce(key, k, kt): coerce(f"{key}.{k}", v, vt) for k, v in value.items()}
    except ConfigError:
        raise
    except (ValueError, TypeError, json.JSONDecodeError):
        pass
    else:
        raise ConfigError(f"config key {key} has an unsupported type", hint="report this as a bug")
    raise ConfigError(f"config key {key} has a bad value {value!r}; expected {_type_name(typ)}",
                      hint=HINT)


def _type_name(typ: Any) -> str:
    return getattr(typ, "__name__", None) or str(typ).replace("typing.", "")


def apply_values(base: C, values: Mapping[str, Mapping[str, Any]], origin: str) -> C:
    """``base`` with ``{section: {key: raw value}}`` coerced and applied; unknown sections
    and keys fail with the known ones listed."""
    sections = typing.get_type_hints(type(base))
    new_sections: dict[str, Any] = {}
    for sec_name, sec_values in values.items():
        if sec_name not in sections:
            raise ConfigError(f"unknown config section [{sec_name}] in {origin}",
                              hint=f"known sections: {', '.join(sections)}")
        if not isinstance(sec_values, Mapping):
            raise ConfigError(f"config section [{sec_name}] in {origin} must be a table")
        hints = typing.get_type_hints(sections[sec_name])
        current = new_sections.get(sec_name, getattr(base, sec_name))
        changes = {}
        for key, raw in sec_values.items():
            if key not in hints:
                raise ConfigError(f"unknown config key {sec_name}.{key} in {origin}",
                                  hint=f"known keys of [{sec_name}]: {', '.join(hints)}")
            changes[key] = coerce(f"{sec_name}.{key}", raw, hints[key])
        new_sections[sec_name] = dataclasses.replace(current, **changes)
    return dataclasses.replace(base, **new_sections)  # type: ignore[type-var]


def env_values(env: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """``EDGE_RUNTIME_<SECTION>__<KEY>`` variables as nested section values."""
    out: dict[str, dict[str, str]] = {}
    for name, value in env.items():
        if not name.startswith(ENV_PREFIX) or name == ENV_PREFIX + "CONFIG":
            continue
        rest = name[len(ENV_PREFIX):]
        if "__" not in rest:
            raise ConfigError(f"environment variable {name} is not of the form "
                              f"{ENV_PREFIX}<SECTION>__<KEY>")
        sec, key = rest.split("__", 1)
        out.setdefault(sec.lower(), {})[key.lower()] = value
    return out


def parse_overrides(items: list[str]) -> dict[str, dict[str, str]]:
    """Turn ``["scheduler.budget_ms=1", ...]`` into nested section values."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise ConfigError(f"--set {item!r} is not of the form section.key=value")
        dotted, value = item.split("=", 1)
        sec, key = dotted.strip().split(".", 1)
        out.setdefault(sec, {})[key] = value
    return out


def config_to_dict(cfg: Any) -> dict[str, Any]:
    def conv(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, tuple):
            return [conv(x) for x in v]
        return v
    return {f.name: {k: conv(v) for k, v in dataclasses.asdict(getattr(cfg, f.name)).items()}
            for f in dataclasses.fields(cfg)}


def config_to_toml(cfg: Any) -> str:
    """Render the effective config as TOML (what `edge-runtime config show` prints)."""
    lines: list[str] = []
    for sec, values in config_to_dict(cfg).items():
        lines.append(f"[{sec}]")
        tables = []
        for k, v in values.items():
            if isinstance(v, dict):
                tables.append((k, v))
            else:
                lines.append(f"{k} = {_toml_value(v)}")
        for k, v in tables:
            inner = ", ".join(f"{json.dumps(str(kk))} = {_toml_value(vv)}" for kk, vv in v.items())
            lines.append(f"{k} = {{ {inner} }}")
        lines.append("")
    return "\n".join(lines)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(v)

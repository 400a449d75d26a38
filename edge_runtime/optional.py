"""Optional backends: probed with importlib, imported only when chosen, with an install hint."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from collections.abc import Mapping

from .errors import ConfigError


def require_backend(key: str, backends: Mapping[str, tuple[str, str]], backend: str) -> None:
    """Check that config ``key`` names a known backend whose package is installed.

    ``backends`` maps a backend name to (module it needs, install hint)."""
    if backend not in backends:
        raise ConfigError(f"{key} {backend!r} is unknown",
                          hint=f"choose one of {', '.join(backends)}")
    module, hint = backends[backend]
    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"{key} {backend!r} needs the {module} package", hint=hint)


def installed_backends(backends: Mapping[str, tuple[str, str]]) -> list[str]:
    return [b for b, (mod, _) in backends.items() if importlib.util.find_spec(mod) is not None]


def model_file(store_name: str, filename: str, package: str, inner: str) -> Path | None:
    """A model file pulled into the store (`models pull`), else the one inside an installed
    PyPI package (``package``/``inner``/``filename``), else None."""
    from .models.store import pulled_path
    if (p := pulled_path(store_name, filename)) is not None:
        return p
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    p = Path(spec.submodule_search_locations[0]) / inner / filename
    return p if p.is_file() else None

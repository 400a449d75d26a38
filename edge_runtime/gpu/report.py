"""Where each model runs and why: one line per decision, a metric per fallback, health.

A model's walk down its provider order ends in one log line: nothing when the first
path serves; otherwise a WARNING naming the path it settled on and each skipped path's
reason (a missing package, an engine that would not build, a disagreement with the CPU).
A run-time failure that moves a model to the next path is one more line. Every fallback
counts in ``edge_gpu_fallbacks_total{model, path, reason}``.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from ..errors import EdgeError
from .errors import reason_code

log = logging.getLogger(__name__)


def one_line(exc: BaseException) -> str:
    return exc.one_line() if isinstance(exc, EdgeError) else f"{type(exc).__name__}: {exc}"


@dataclass
class ModelStatus:
    model: str
    wanted: tuple[str, ...]
    path: str = "cpu"
    build_s: float | None = None
    engine: str | None = None
    agreement: dict | None = None
    fallbacks: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"path": self.path, "wanted": self.wanted[0] if self.wanted else "cpu",
                "order": list(self.wanted), "build_s": self.build_s, "engine": self.engine,
                "agreement": self.agreement, "fallbacks": list(self.fallbacks)}


class AccelReport:
    def __init__(self, metrics: Any = None) -> None:
        self._metrics = metrics
        self._lock = threading.Lock()
        self.models: dict[str, ModelStatus] = {}
        self._pending: dict[str, list[str]] = {}

    def begin(self, model: str, order: tuple[str, ...]) -> None:
        with self._lock:
            self.models[model] = ModelStatus(model, order)
            self._pending[model] = []

    def failed(self, model: str, path: str, exc: BaseException, *, at_run: bool = False) -> None:
        reason = reason_code(exc)
        with self._lock:
            st = self.models.setdefault(model, ModelStatus(model, (path, "cpu")))
            st.fallbacks.append({"path": path, "reason": reason, "message": one_line(exc),
                                 "at": "run" if at_run else "start"})
            self._pending.setdefault(model, []).append(f"{path}: {one_line(exc)}")
        if self._metrics is not None:
            self._metrics.observe_gpu_fallback(model, path, reason)

    def settled(self, model: str, path: str, *, build_s: float | None = None,
                engine: str | None = None, agreement: dict | None = None,
                at_run: bool = False) -> None:
        with self._lock:
            st = self.models.setdefault(model, ModelStatus(model, (path,)))
            st.path, st.build_s, st.engine, st.agreement = path, build_s, engine, agreement
            why = self._pending.pop(model, [])
        if self._metrics is not None:
            self._metrics.set_gpu_path(model, path)
        if why:
            log.warning("%s %s %s (wanted %s): %s", model,
                        "moved at run time to" if at_run else "runs on", path,
                        st.wanted[0] if st.wanted else path, "; ".join(why))
        elif path != "cpu":
            log.info("%s runs on %s%s", model, path,
                     f" ({agreement['detail']})" if agreement else "")

    def health(self) -> dict:
        with self._lock:
            models = {m: s.to_dict() for m, s in self.models.items()}
        degraded = any(s["path"] != s["wanted"] for s in models.values())
        return {"status": "fallback" if degraded else "ok", "models": models,
                "fallbacks_total": sum(len(s["fallbacks"]) for s in models.values())}

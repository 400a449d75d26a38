"""Per-model choice of where an ONNX model runs: ``tensorrt-native`` ▸ onnxruntime TensorRT
▸ CUDA ▸ CPU, in the order the device profile (or ``gpu.<model>_providers``) gives.

:meth:`Accelerator.open` always builds the CPU onnxruntime session first (the reference
and the last resort; a file that does not load on the CPU raises ModelLoadError as before),
then walks the order: each path is opened (a native engine is loaded from the engine cache
or built), checked against the CPU outputs (:mod:`.agreement`) and used only if it agrees.
Any failure (a missing package, no GPU, a build that fails or runs out of memory, a bad
engine file, a disagreement) moves to the next path: it never raises into the caller. The
returned :class:`FallbackSession` has the onnxruntime call shape; a run that fails moves it
on in the same order, once. With an order of just ``cpu`` the plain CPU session is returned.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..clock import SYSTEM_CLOCK, Clock
from ..onnx_session import build_session
from .agreement import check_agreement
from .builder import load_or_build
from .cuda import CudaMemory, load_cuda
from .engine_cache import EngineCache
from .errors import (
    AgreementError,
    GpuUnavailableError,
    ShapeOutOfProfileError,
    SlowerThanCpuError,
)
from .report import AccelReport
from .runner import TrtSession
from .shapes import ModelSpec
from .speed import call_times_ms
from .trt_api import TrtApi, load_tensorrt

log = logging.getLogger(__name__)

PATHS = ("tensorrt-native", "tensorrt", "cuda", "cpu")
EP_NAMES = {"tensorrt": "TensorrtExecutionProvider", "cuda": "CUDAExecutionProvider"}


def _ort_available() -> list[str]:
    import onnxruntime as ort
    return list(ort.get_available_providers())


@dataclass
class Backends:
    """What the accelerated paths load; tests pass fakes with the same interfaces."""

    tensorrt: Callable[[], TrtApi] = load_tensorrt
    cuda: Callable[[int], CudaMemory] = load_cuda
    ort_providers: Callable[[], list[str]] = _ort_available
    ort_session: Callable[..., Any] = build_session


@dataclass(frozen=True)
class AccelSettings:
    engine_dir: Path
    orders: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # model -> order
    default_order: tuple[str, ...] = ("cpu",)
    fp16: bool = True
    workspace_mb: int = 256
    device_index: int = 0
    max_abs_error: Mapping[str, float] = field(default_factory=dict)   # model -> tolerance
    validation_file: str = ""                  # the encoder's intent-agreement texts
    validation_max_lines: int = 500
    min_label_agreement: float = 0.99
    max_slowdown: float = 0.0                  # a path slower than the CPU x this: next
                                               # path (0 = off; the config's default is 1)

    def tolerance(self, model: str, default: float) -> float:
        return float(self.max_abs_error.get(model, default))


SpecFactory = Callable[[Any, AccelSettings], ModelSpec]


def normalized(order: Sequence[str]) -> tuple[str, ...]:
    """Known paths in the given order, without repeats, always ending with ``cpu``."""
    out = [p for i, p in enumerate(order) if p in PATHS and p != "cpu" and p not in order[:i]]
    return (*out, "cpu")


class Accelerator:
    def __init__(self, settings: AccelSettings, *, metrics: Any = None,
                 backends: Backends | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.settings = settings
        self.report = AccelReport(metrics)
        self.clock = clock
        self._b = backends or Backends()
        self._lock = threading.Lock()
        self._loaded: dict[str, Any] = {}          # "tensorrt" / "cuda" -> object or error

    @classmethod
    def from_config(cls, cfg: Any, *, metrics: Any = None, backends: Backends | None = None,
                    clock: Clock = SYSTEM_CLOCK) -> Accelerator:
        from ..device import get_profile
        g = cfg.gpu
        profile = get_profile(cfg.device.profile)
        engine_dir = Path(g.engine_dir).expanduser() if g.engine_dir else \
            cfg.paths.resolved_home() / "engines"
        orders = {m: tuple(o) for m, o in (("vad", g.vad_providers), ("nlu", g.nlu_providers))
                  if o}
        return cls(AccelSettings(
            engine_dir, orders, tuple(profile.model_providers), g.fp16, g.workspace_mb,
            g.device_index, {"vad": g.vad_max_abs_error, "nlu": g.nlu_max_abs_error},
            g.nlu_validation_file, g.validation_max_lines, g.min_intent_agreement,
            g.max_slowdown), metrics=metrics, backends=backends, clock=clock)

    def order(self, model: str) -> tuple[str, ...]:
        return normalized(self.settings.orders.get(model, self.settings.default_order))

    def health(self) -> dict:
        return self.report.health()

    def open(self, model: str, onnx_path: str | Path, spec_factory: SpecFactory, *,
             threads: int = 1, stage: str = "models", what: str = "ONNX model") -> Any:
        """A session for ``onnx_path`` on the first path of ``model``'s order that works and
        agrees with the CPU; ``spec_factory(cpu_session, settings)`` gives the shapes and
        the agreement inputs (called only when a GPU path is tried)."""
        path = Path(onnx_path)
        cpu = self._b.ort_session(path, threads=threads, stage=stage, what=what)
        order = self.order(model)
        self.report.begin(model, order)
        if order == ("cpu",):
            self.report.settled(model, "cpu")
            return cpu
        try:
            spec = spec_factory(cpu, self.settings)
        except Exception as exc:   # a bad validation file must not stop the model loading
            self.report.failed(model, order[0], exc)
            self.report.settled(model, "cpu")
            return cpu
        return FallbackSession(_Walk(self, model, path, spec, cpu, order, threads, stage, what))

    # -- one path -----------------------------------------------------------------------
    def _load(self, what: str, loader: Callable[[], Any]) -> Any:
        with self._lock:
            if what not in self._loaded:
                try:
                    self._loaded[what] = loader()
                except Exception as exc:    # remembered: one import attempt per process
                    self._loaded[what] = exc
            got = self._loaded[what]
        if isinstance(got, Exception):
            raise got
        return got

    def open_path(self, name: str, w: _Walk) -> tuple[Any, float, str | None]:
        """(session, build seconds, engine file) for path ``name``; raises on failure."""
        s = self.settings
        if name == "tensorrt-native":
            api = self._load("tensorrt", self._b.tensorrt)
            cuda = self._load("cuda", lambda: self._b.cuda(s.device_index))
            built = load_or_build(api, cuda, w.path, w.spec, EngineCache(s.engine_dir),
                                  fp16=s.fp16, workspace_bytes=s.workspace_mb << 20,
                                  clock=self.clock)
            return TrtSession(built.engine, cuda, w.cpu, w.spec.profile), built.build_s, \
                str(built.path)
        from ..llm.providers import ORT_GPU_HINT, dropped_hint, provider_list
        ep = EP_NAMES[name]
        if ep not in self._b.ort_providers():
            raise GpuUnavailableError(f"this onnxruntime has no {ep}", hint=ORT_GPU_HINT)
        profiles = w.spec.profile.ort_trt_options() if name == "tensorrt" else None
        t0 = self.clock.monotonic()
        sess = self._b.ort_session(
            w.path, threads=w.threads, stage=w.stage, what=w.what,
            providers=provider_list(name, s.engine_dir / "ort" / w.model, profiles))
        got = list(sess.get_providers())
        if not got or got[0] != ep:
            raise GpuUnavailableError(f"onnxruntime dropped {ep} at load (got {got})",
                                      hint=dropped_hint(name))
        return sess, self.clock.monotonic() - t0, None


@dataclass
class _Walk:
    accel: Accelerator
    model: str
    path: Path
    spec: ModelSpec
    cpu: Any
    order: tuple[str, ...]
    threads: int
    stage: str
    what: str

    def advance(self, start: int, *, at_run: bool = False) -> tuple[int, Any]:
        report = self.accel.report
        for i in range(start, len(self.order)):
            name = self.order[i]
            if name == "cpu":
                break
            try:
                sess, build_s, engine = self.accel.open_path(name, self)
                agreement = check_agreement(sess, self.cpu, self.spec)
                if not agreement.ok:
                    raise AgreementError(f"{name} outputs differ from the CPU's: "
                                         f"{agreement.detail}",
                                         hint="the next path serves; see doctor --gpu")
                speed = self._speed(name, sess)
            except Exception as exc:   # any failure of an accelerated path: next path
                report.failed(self.model, name, exc, at_run=at_run)
                continue
            report.settled(self.model, name, build_s=round(build_s, 3), engine=engine,
                           agreement={**agreement.to_dict(), **speed}, at_run=at_run)
            return i, sess
        report.settled(self.model, "cpu", at_run=at_run)
        return len(self.order) - 1, self.cpu

    def _speed(self, name: str, sess: Any) -> dict:
        """The path's and the CPU's median call (ms) when ``max_slowdown`` is set; raises
        SlowerThanCpuError when the path's exceeds the CPU's times it."""
        limit = self.accel.settings.max_slowdown
        if limit <= 0:
            return {}
        path_ms, cpu_ms = call_times_ms(sess, self.cpu, self.spec, self.accel.clock)
        if path_ms > cpu_ms * limit:
            raise SlowerThanCpuError(
                f"{name} takes {path_ms:.2f} ms a call, the CPU {cpu_ms:.2f} ms "
                f"(gpu.max_slowdown {limit:g})",
                hint="the next path serves; gpu.max_slowdown = 0 keeps a slower GPU path")
        return {"call_ms": round(path_ms, 3), "cpu_call_ms": round(cpu_ms, 3)}


class FallbackSession:
    """The onnxruntime call shape over the chosen path. A failed run moves to the next
    path of the order (logged once, counted) and is answered there; an input outside the
    engine's profile is answered by the CPU session without leaving the engine."""

    def __init__(self, walk: _Walk) -> None:
        self._walk = walk
        self._lock = threading.Lock()
        self._index, self._current = walk.advance(0)

    @property
    def path(self) -> str:
        return self._walk.order[self._index]

    def get_inputs(self) -> Any:
        return self._walk.cpu.get_inputs()

    def get_outputs(self) -> Any:
        return self._walk.cpu.get_outputs()

    def get_providers(self) -> list[str]:
        return list(self._current.get_providers())

    def run(self, output_names: Sequence[str] | None, feeds: Mapping[str, Any],
            run_options: Any = None) -> list:
        cpu = self._walk.cpu
        while True:
            current, index = self._current, self._index
            if current is cpu:
                return cpu.run(output_names, feeds)
            try:
                return current.run(output_names, feeds)
            except ShapeOutOfProfileError:
                return cpu.run(output_names, feeds)
            except Exception as exc:   # the GPU went away, a driver error: next path
                with self._lock:
                    if self._current is current:
                        self._walk.accel.report.failed(self._walk.model, self.path, exc,
                                                       at_run=True)
                        self._index, self._current = self._walk.advance(index + 1,
                                                                        at_run=True)

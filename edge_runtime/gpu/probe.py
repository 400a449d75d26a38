"""The two `edge-runtime doctor` lines about the GPU (quick: nothing is built here).

``probe``: what the device profile asks of the small models and what this machine has
(TensorRT, the CUDA binding, onnxruntime's GPU providers); a profile asking for a path the
machine cannot give fails with one line naming the install. ``daemon``: where a running
daemon's models actually run, from its ``/healthz`` ``gpu`` object (a fallback fails with
its reason).
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from ..errors import EdgeError
from .accel import EP_NAMES, Accelerator, Backends
from .errors import GpuError, GpuUnavailableError

MODELS = ("vad", "nlu")


def probe(cfg: Any, backends: Backends | None = None) -> str:
    b = backends or Backends()
    acc = Accelerator.from_config(cfg, backends=b)
    orders = {m: acc.order(m) for m in MODELS}
    wanted = {p for o in orders.values() for p in o if p != "cpu"}
    if not wanted:
        return f"not used: profile {cfg.device.profile} runs vad and nlu on the cpu"
    have: list[str] = []
    missing: dict[str, GpuError] = {}
    if "tensorrt-native" in wanted:
        try:
            have.append(f"tensorrt {b.tensorrt().version}")
        except GpuError as exc:
            missing["tensorrt"] = exc
        try:
            cuda = b.cuda(cfg.gpu.device_index)
            have.append(f"{cuda.name} on {cuda.device_name()}")
        except GpuError as exc:
            missing["cuda"] = exc
    eps = set(b.ort_providers())
    have += [f"onnxruntime {n}" for n in ("tensorrt", "cuda") if EP_NAMES[n] in eps]
    for n in ("tensorrt", "cuda"):
        if n in wanted and EP_NAMES[n] not in eps:
            missing[f"onnxruntime {n}"] = GpuUnavailableError(
                f"this onnxruntime has no {EP_NAMES[n]}", hint="pip install onnxruntime-gpu")
    usable = {n for n in ("tensorrt", "cuda") if EP_NAMES[n] in eps}
    if "tensorrt" not in missing and "cuda" not in missing:
        usable.add("tensorrt-native")
    order = " > ".join(orders["vad"])
    if not usable & wanted:
        first = next(iter(missing.values()))
        raise GpuUnavailableError(f"profile {cfg.device.profile} wants {order} but "
                                  f"{first.message}; vad and nlu serve on the cpu",
                                  hint=first.hint)
    gaps = f"; missing: {', '.join(missing)}" if missing else ""
    return f"{order}: {', '.join(have)}{gaps}"


def daemon(cfg: Any, timeout_s: float = 1.0) -> str:
    host = "127.0.0.1" if cfg.server.host in ("0.0.0.0", "::", "") else cfg.server.host
    url = f"http://{host}:{cfg.server.port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            gpu = json.loads(resp.read()).get("gpu") or {}
    except (urllib.error.URLError, OSError, ValueError):
        return f"no daemon answers {url}"
    models = gpu.get("models") or {}
    if not models:
        return f"daemon: {gpu.get('status', 'off')}"
    parts, fallbacks = [], []
    for m, st in models.items():
        parts.append(f"{m} on {st['path']}")
        if st["path"] != st["wanted"]:
            why = st["fallbacks"][-1]["message"] if st.get("fallbacks") else "fell back"
            fallbacks.append(f"{m} wanted {st['wanted']}: {why}")
    if fallbacks:
        raise EdgeError(f"daemon: {', '.join(parts)} ({'; '.join(fallbacks)})", stage="gpu",
                        hint="edge-runtime doctor --gpu shows each path")
    return f"daemon: {', '.join(parts)}"

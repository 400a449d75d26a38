"""`edge-runtime doctor --gpu` (and ``scripts/gpu-check.sh``): the GPU check users run.

On an NVIDIA machine it builds (or loads) every engine through the same code the daemon
uses, checks each path's outputs against the CPU, times the calls the daemon makes, runs
the LLM on the CUDA and TensorRT providers (``check_llm``), and prints one table: model,
path, build s, latency p50, agreement; then the LLM graph's per-node placement. A step
that would start after ``budget_s`` is reported as skipped, so the whole check ends in
time. Without a GPU it prints one line and returns :data:`NO_GPU` (77, "skipped").
"""
from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import EdgeError
from .accel import PATHS, Accelerator, Backends

NO_GPU = 77
GPU_MARKERS = ("/dev/nvidia0", "/dev/nvgpu", "/etc/nv_tegra_release")


@dataclass
class Row:
    model: str
    path: str
    build_s: float | None = None
    p50_ms: float | None = None
    agreement: str = ""


def gpu_absent(markers: Sequence[str] = GPU_MARKERS) -> str | None:
    """Why there is no NVIDIA GPU to check here, or None when one is visible."""
    if any(Path(m).exists() for m in markers):
        return None
    return f"no NVIDIA GPU here (none of {', '.join(markers)})"


def p50_ms(fn: Callable[[], Any], runs: int, clock: Clock) -> float:
    fn()                                            # warm-up
    times = []
    for _ in range(runs):
        t = clock.monotonic()
        fn()
        times.append((clock.monotonic() - t) * 1e3)
    return statistics.median(times)


def _row_from_report(acc: Accelerator, model: str, path: str) -> Row:
    st = acc.report.models.get(model)
    if st is None:
        return Row(model, path, agreement="not opened")
    if st.path != path:
        why = next((f["message"] for f in st.fallbacks if f["path"] == path), "fell back")
        return Row(model, path, agreement=f"FAIL {why}")
    agr = st.agreement or {}
    text = "reference" if path == "cpu" else (
        f"ok max|err| {agr.get('max_abs_error', 0):.1e}" + (
            f", intents {agr['label_agreement'] * 100:.1f} %"
            if agr.get("label_agreement") is not None else ""))
    return Row(model, path, st.build_s, agreement=text)


def small_model_rows(cfg: Any, *, backends: Backends | None = None,
                     clock: Clock = SYSTEM_CLOCK, runs: int = 50) -> list[Row]:
    """One row per path for Silero VAD and (with ``nlu.model_dir``) the NLU encoder."""
    from ..vad.silero import SileroVad, default_model_path
    rows: list[Row] = []
    vad_path = Path(cfg.vad.model_path) if cfg.vad.model_path else default_model_path()
    for path in PATHS:
        # every path timed side by side: no path passed over for being slower than the CPU
        acc = Accelerator(replace(Accelerator.from_config(cfg, clock=clock).settings,
                                  orders={"vad": (path,), "nlu": (path,)}, max_slowdown=0.0),
                          backends=backends, clock=clock)
        if vad_path is None:
            rows.append(Row("vad", path, agreement="silero model missing (models pull)"))
        else:
            rows.append(_time(acc, "vad", path, lambda a: _vad_call(SileroVad(vad_path, accel=a)),
                              runs, clock))
        if cfg.nlu.model_dir:
            from ..nlu.encoder import EncoderIntentModel
            rows.append(_time(acc, "nlu", path, lambda a: _nlu_call(
                EncoderIntentModel(cfg.nlu.model_dir, accel=a)), runs, clock))
    rows.sort(key=lambda r: r.model != "vad")         # stable: paths stay in order
    return rows


def _vad_call(vad: Any) -> Callable[[], Any]:
    frame = (0.3 * np.sin(np.arange(vad.frame_samples) / 5.0)).astype(np.float32)
    return lambda: vad.prob(frame)


def _nlu_call(model: Any) -> Callable[[], Any]:
    return lambda: model.logits("what time is it in the kitchen")


def _time(acc: Accelerator, model: str, path: str, make: Callable[[Accelerator], Any],
          runs: int, clock: Clock) -> Row:
    try:
        call = make(acc)
    except EdgeError as exc:
        return Row(model, path, agreement=f"FAIL {exc.one_line()}")
    row = _row_from_report(acc, model, path)
    if not row.agreement.startswith("FAIL"):
        row.p50_ms = p50_ms(call, runs, clock)
    return row


def render(rows: Sequence[Row]) -> str:
    head = ("model", "path", "build s", "p50 ms", "agreement")
    cells = [head] + [(r.model, r.path, "-" if r.build_s is None else f"{r.build_s:.1f}",
                       "-" if r.p50_ms is None else f"{r.p50_ms:.2f}", r.agreement)
                      for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    return "\n".join("  ".join(c[i].ljust(widths[i]) for i in range(4)) + "  " + c[4]
                     for c in cells)


def run_gpu_check(cfg: Any, *, out: Callable[[str], None] = print, budget_s: float = 270.0,
                  backends: Backends | None = None, clock: Clock = SYSTEM_CLOCK,
                  markers: Sequence[str] = GPU_MARKERS) -> int:
    """Print the table (and LLM placement); 0 when every available path agrees, 1 when one
    failed, :data:`NO_GPU` without a GPU."""
    absent = gpu_absent(markers)
    if absent is not None:
        out(f"gpu-check: {absent}; nothing to check (the CPU path is the one in use)")
        return NO_GPU
    start = clock.monotonic()
    rows = small_model_rows(cfg, backends=backends, clock=clock)
    from .check_llm import llm_rows
    llm, placement = llm_rows(cfg, deadline=start + budget_s, clock=clock)
    rows += llm
    out(render(rows))
    for line in placement:
        out(line)
    out(f"gpu-check: {clock.monotonic() - start:.0f} s")
    return 1 if any(r.agreement.startswith("FAIL") for r in rows) else 0

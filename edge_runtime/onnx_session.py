"""The one place that builds onnxruntime sessions (LLM, VAD, TTS, NLU encoder, tools).

Every session gets the same explicit settings: ``threads`` intra-op threads, one inter-op
thread, sequential execution, full graph optimisation, warnings-only logging, and **no
busy-waiting** between ops (``session.intra_op.allow_spinning = 0``; on a 2-core box shared
by ASR, TTS and the LLM, onnxruntime's unbounded spinning made LLM decoding 1.5-2x slower:
26-33 vs 16-19 ms/token at load average 4.6), except the LLM's bounded busy-wait where each of
its threads has a core (:func:`resolve_spin`). A file that onnxruntime cannot load
raises :class:`~edge_runtime.errors.ModelLoadError` naming the file and the stage.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import ModelLoadError

CPU = ("CPUExecutionProvider",)
# session config entries that stop idle intra-op threads spinning on a core
NO_SPIN = {"session.intra_op.allow_spinning": "0"}


# what ``llm.spin_us = -1`` (auto) busy-waits when each of the LLM's threads has a core
AUTO_SPIN_US = 200


def resolve_spin(configured: int, threads: int, cores: int | None = None) -> int:
    """The LLM session's busy-wait in microseconds for ``llm.spin_us`` = ``configured``: as
    set when >= 0; for -1 (auto) :data:`AUTO_SPIN_US` when the LLM has more than one thread
    and no more threads than the process may run on cores (``cores``: its CPU affinity),
    else 0 (a lone thread has no worker to wake; more threads than cores would spin against
    each other). Measured on a 2-core box, SmolLM2-135M at 2 threads: spinning decodes 1.5x
    faster alone and 15 % slower while the Piper voice speaks without a pause beside it
    (``benchmarks.llm_contention``), but in the product's own flow the decoding runs alone
    most of the time: a spoken answer's first audio came 12 % sooner and its last 1 %
    (``benchmarks.llm_spoken``), and under 10 and 50 users the mean answer time fell
    14-33 % (``benchmarks load --no-pin --llm-threads 2``)."""
    if configured >= 0:
        return configured
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            (os.cpu_count() or 1)
    return AUTO_SPIN_US if 1 < threads <= cores else 0


def spin_entries(spin_us: int = 0) -> dict[str, str]:
    """Session config entries for the intra-op threads' wait: ``spin_us`` <= 0 never spins
    (NO_SPIN); a positive value busy-waits up to that many microseconds for the next op
    before sleeping (bounded: onnxruntime's unbounded spin kept a core busy for ~42 ms of
    every 50 ms idle after a decode step, measured here)."""
    if spin_us <= 0:
        return dict(NO_SPIN)
    return {"session.intra_op.allow_spinning": "1",
            "session.intra_op.spin_duration_us": str(int(spin_us))}


def session_options(threads: int = 1, spin_us: int = 0) -> Any:
    """``onnxruntime.SessionOptions`` with this project's settings (see the module doc;
    ``spin_us``: :func:`spin_entries`)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = max(1, int(threads))
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    for key, value in spin_entries(spin_us).items():
        so.add_session_config_entry(key, value)
    return so


def build_session(path: str | Path, *, threads: int = 1,
                  providers: Sequence[Any] = CPU, stage: str = "models",
                  what: str = "ONNX model", hint: str | None = None,
                  spin_us: int = 0, custom_ops: Path | None = None) -> Any:
    """An ``onnxruntime.InferenceSession`` for ``path`` on ``providers`` (names, or
    ``(name, options)`` pairs, in onnxruntime's order of preference). Raises
    ModelLoadError (``stage``) when onnxruntime is missing or the file does not load.
    ``spin_us``: see :func:`spin_entries` (only the LLM sets it: ``llm.spin_us``).
    ``custom_ops``: a custom-op library to register first (the LLM's step ops,
    :mod:`edge_runtime.llm.step_ops`)."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise ModelLoadError(f"{what} needs onnxruntime", stage=stage,
                             hint="pip install onnxruntime") from None
    try:
        so = session_options(threads, spin_us)
        if custom_ops is not None:
            so.register_custom_ops_library(str(custom_ops))
        return ort.InferenceSession(str(path), so, providers=list(providers))
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph/NoSuchFile types
        raise ModelLoadError(f"{what} {path} does not load: {exc}", stage=stage,
                             hint=hint) from None

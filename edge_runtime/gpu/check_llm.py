"""The LLM part of the GPU check: the model on the CPU, CUDA and TensorRT providers, its
greedy answer compared with the CPU's, and where each graph node ran.

Placement comes from onnxruntime's session profiling (``SessionOptions.enable_profiling``;
each ``Node`` event of the JSON trace names its ``provider`` and ``op_name``): one prefill
of the real KV-cache graph on a profiled session, so "cuda" cannot be reported while the
attention runs on the CPU (the fp32 graph's GroupQueryAttention has no CUDA kernel; the
fp16 variant, `models build NAME --precision fp16`, is what the GPU rows run when built).
"""
from __future__ import annotations

import json
import statistics
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..clock import Clock
from ..errors import EdgeError
from .check import Row

PROMPT = "Name three colours of the rainbow."
TOKENS = 24
MAX_TOP1_DROP = 0.05    # a GPU path this far below the CPU's top-1 is broken, not rounded
CONTEXT = 512           # the check's engines' context (and TensorRT profiles)


def placement_from_events(events: Iterable[dict]) -> tuple[Counter, Counter]:
    """(nodes per provider, op types of the nodes on the CPU) from a profiling trace; a
    node run several times counts once."""
    seen: dict[str, tuple[str, str]] = {}
    for e in events:
        args = e.get("args") or {}
        if e.get("cat") == "Node" and "provider" in args:
            seen[e.get("name", "")] = (args["provider"], args.get("op_name", "?"))
    per_provider = Counter(p for p, _ in seen.values())
    cpu_ops = Counter(op for p, op in seen.values() if p == "CPUExecutionProvider")
    return per_provider, cpu_ops


def profile_placement(model_dir: Path, name: str, threads: int = 1) -> str:
    """One line: how many nodes of the LLM graph ran on each provider with ``name`` first,
    and which op types stayed on the CPU."""
    import onnxruntime as ort

    from ..llm.providers import OpenedSession, provider_list, trt_profiles
    from ..llm.runner import PREFILL_CHUNK, KvRunner
    from ..onnx_session import session_options
    cfg = json.loads((model_dir / "model_config.json").read_text(encoding="utf-8"))
    max_len = min(256, int(cfg["context_length"]))
    with tempfile.TemporaryDirectory() as tmp:
        so = session_options(threads)
        so.enable_profiling = True
        so.profile_file_prefix = str(Path(tmp) / "placement")
        sess = ort.InferenceSession(
            str(model_dir / cfg["model_file"]), so,
            providers=provider_list(name, model_dir / "trt_cache",
                                    trt_profiles(cfg, max_len, 1, PREFILL_CHUNK)))
        runner = KvRunner(OpenedSession(sess, name, list(sess.get_providers()), []), cfg,
                          max_len)
        runner.feed([int(cfg.get("bos_token_id", 0))] * 4)
        trace = Path(sess.end_profiling())
        events = json.loads(trace.read_text(encoding="utf-8"))
    per_provider, cpu_ops = placement_from_events(events)
    nodes = ", ".join(f"{n} on {p.replace('ExecutionProvider', '')}"
                      for p, n in per_provider.most_common())
    on_cpu = ", ".join(f"{op} x{n}" for op, n in cpu_ops.most_common())
    return f"llm placement with {name}: {nodes}" + (f"; on the CPU: {on_cpu}" if on_cpu else "")


def _greedy(engine: Any) -> tuple[str, float]:
    from ..types import GenerationParams, Message
    params = GenerationParams(max_new_tokens=TOKENS, temperature=0.0, stop_at_sentence=0)
    text = "".join(engine.generate([Message("user", PROMPT)], params))
    return text, float(engine.last_stats.get("decode_tok_s") or 0.0)


def _reference(source: Path | None, model_dir: Path) -> tuple[list[int], Any] | None:
    """The check text's ids and the fp32 GGUF reference's logits for them (teacher
    forced), or None without the GGUF (a model given only as ``llm.model_dir``)."""
    if source is None:
        return None
    from ..models.gguf2onnx.gguf_weights import read_gguf
    from ..models.gguf2onnx.reference import DEFAULT_TEXT, reference_logits, text_ids
    model = read_gguf(source)
    ids = text_ids(model, model_dir, DEFAULT_TEXT)
    return ids, reference_logits(model, ids)


def _top1(reference: tuple[list[int], Any] | None, run_dir: Path, name: str,
          threads: int) -> tuple[float, float | None] | None:
    """Top-1 agreement of the build in ``run_dir`` on provider ``name`` with the fp32
    reference over the same 161-token passage as `models check`: through the engine's
    runner (on TensorRT with the engine's own shape profiles, so its cached engine serves),
    and through the batched runner, two rows of different lengths a step (not on TensorRT:
    its profiles would build another engine, minutes on a Jetson)."""
    if reference is None:
        return None
    from ..models.gguf2onnx.reference import (
        batched_top1,
        compare_logits,
        onnx_logits,
        open_built,
    )
    ids, ref = reference
    opened = open_built(run_dir, name, threads, CONTEXT)     # one session for both passes
    got = onnx_logits(run_dir, ids, threads=threads, provider=name, max_len=CONTEXT,
                      opened=opened)
    single = float(compare_logits(ref, got, ids)["top1_agreement"])
    if name == "tensorrt":
        return single, None
    return single, batched_top1(run_dir, ids, ref.argmax(-1), threads=threads, provider=name,
                                opened=opened)


def _agreement(top1: tuple[float, float | None] | None, cpu_top1: float | None, text: str,
               reference: str | None) -> str:
    """The row's agreement cell: top-1 against the fp32 reference, alone and batched (FAIL
    when a GPU path is more than :data:`MAX_TOP1_DROP` below the CPU's), then the greedy
    text against the CPU's."""
    parts = []
    if top1 is not None:
        batched = "not run" if top1[1] is None else f"{top1[1] * 100:.1f} %"
        parts.append(f"top-1 {top1[0] * 100:.1f} % (batched {batched})")
    if reference is None:
        parts.append("reference")
    else:
        pairs = zip(text, reference, strict=False)
        same = next((i for i, (a, b) in enumerate(pairs) if a != b),
                    min(len(text), len(reference)))
        parts.append("same greedy text" if text == reference else
                     f"greedy text differs after {same} of {len(reference)} chars")
    cell = ", ".join(parts)
    worst = None if top1 is None else min(t for t in top1 if t is not None)
    if worst is not None and cpu_top1 is not None and worst < cpu_top1 - MAX_TOP1_DROP:
        return f"FAIL {cell} (the cpu: {cpu_top1 * 100:.1f} %)"
    return cell if reference is None else f"ok {cell}"


def llm_rows(cfg: Any, *, deadline: float, clock: Clock,
             source: Path | None = None) -> tuple[list[Row], list[str]]:
    """The LLM's rows: each provider's decode p50, its top-1 agreement with the fp32 GGUF
    reference (``source``; by default the store's GGUF of ``llm.model``) and its greedy
    text against the CPU's; and the lines below the table."""
    from ..llm import OnnxLlmEngine
    from ..models.store import ModelStore
    store = ModelStore(cfg)
    try:
        model_dir = store.llm_dir() if cfg.llm.model_dir else store.require_built(cfg.llm.model)
    except EdgeError as exc:
        return [Row("llm", "-", agreement=f"FAIL {exc.one_line()}")], []
    rows, lines = [], []
    if source is None and not cfg.llm.model_dir:
        try:
            source = store.require_source(cfg.llm.model)
        except EdgeError as exc:       # the rows stand without top-1
            lines.append(f"llm: top-1 not measured ({exc.one_line()})")
    # the GPU providers run the fp16 variant when it is built (`models build NAME
    # --precision fp16`): their GroupQueryAttention is fp16-only
    fp16_dir = None if cfg.llm.model_dir else store.built_dir(cfg.llm.model, "fp16")
    if fp16_dir is not None and not (fp16_dir / "model.onnx").is_file():
        fp16_dir = None
    reference = _reference(source, model_dir)
    greedy_ref: str | None = None
    cpu_top1: float | None = None
    for name in ("cpu", "cuda", "tensorrt"):
        if clock.monotonic() > deadline:
            rows.append(Row("llm", name, agreement="skipped (time budget)"))
            continue
        t0 = clock.monotonic()
        run_dir = fp16_dir if fp16_dir is not None and name != "cpu" else model_dir
        try:
            engine = OnnxLlmEngine(run_dir, providers=[name], threads=cfg.llm.threads,
                                   context_tokens=CONTEXT)
        except EdgeError as exc:
            rows.append(Row("llm", name, agreement=f"FAIL {exc.one_line()}"))
            continue
        build_s = clock.monotonic() - t0
        if engine.device != name:
            rows.append(Row("llm", name, agreement=f"FAIL {name} unavailable (ran on "
                                                   f"{engine.device})"))
            continue
        runs = [_greedy(engine) for _ in range(3)]
        text = runs[0][0]
        p50 = statistics.median(1e3 / r[1] for r in runs if r[1] > 0) if any(
            r[1] > 0 for r in runs) else None
        try:
            top1 = _top1(reference, run_dir, name, cfg.llm.threads)
        except EdgeError as exc:
            rows.append(Row("llm", name, round(build_s, 1), p50,
                            f"FAIL top-1 not measured: {exc.one_line()}"))
            continue
        rows.append(Row("llm", name, round(build_s, 1), p50,
                        _agreement(top1, cpu_top1, text, greedy_ref)))
        if greedy_ref is None:
            greedy_ref, cpu_top1 = text, None if top1 is None else top1[0]
        if name != "cpu":
            try:
                lines.append(profile_placement(run_dir, name, cfg.llm.threads))
            except Exception as exc:   # placement is a report; the table stands without it
                lines.append(f"llm placement with {name}: not measured ({exc})")
    lines.append("llm: p50 ms is per decoded token (greedy, 24 tokens, median of 3)"
                 + ("; top-1: teacher-forced agreement with the fp32 GGUF reference on "
                    "`models check`'s passage (batched: two rows of different lengths "
                    "in each step, as with llm.max_batch > 1)" if reference is not None
                    else ""))
    if fp16_dir is not None:
        lines.append(f"llm: cuda and tensorrt ran the fp16 variant ({fp16_dir}); the cpu "
                     "reference is the fp32 build")
    else:
        lines.append(f"llm: no fp16 variant built (`edge-runtime models build {cfg.llm.model} "
                     "--precision fp16`; the CUDA GroupQueryAttention kernel needs one); "
                     "placement above shows what stayed on the CPU")
    return rows, lines

"""edge-runtime's own kernels for a decode step (an onnxruntime custom-op library).

``models build`` compiles ``step_ops.c`` for this machine (:mod:`.compile`, with
onnxruntime's C API header from :mod:`.headers`), writes ``model.step_ops.onnx`` beside a
``fold_steps`` model's ``model.onnx`` (:mod:`.rewrite`: its one-row branches use the ops),
checks that the two agree on a short greedy run, and records the variant in
``model_config.json`` (``"step_ops"``). The engine opens the variant when the library for
the current source is there and the CPU runs the model (``llm.step_ops``, default on);
otherwise, or when the variant does not load, the plain graph.
"""
from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

from .compile import build_library, find_library, library_path
from .headers import StepOpsUnavailable

__all__ = ["StepOpsUnavailable", "build_library", "find_library", "library_path", "prepare",
           "variant_of"]

log = logging.getLogger(__name__)

CHECK_PROMPT = list(range(100, 132))   # token ids; any will do, the two graphs are compared
CHECK_STEPS = 24
CHECK_AGREE = 0.9   # greedy steps whose top token must match (int8 activations round apart)


def _config(model_dir: Path) -> dict:
    return json.loads((Path(model_dir) / "model_config.json").read_text())


def variant_of(model_dir: Path, cfg: dict, library: Path | None = None) -> Path | None:
    """The step-ops graph a built model records and holds, or None; with ``library``, only
    one made for that build of the ops (a graph made for an older source may use an op as
    that source defined it: ``models build`` makes it again)."""
    rec = cfg.get("step_ops")
    if not isinstance(rec, dict) or not rec.get("model_file"):
        return None
    if library is not None and rec.get("library") != Path(library).name:
        return None
    path = Path(model_dir) / str(rec["model_file"])
    return path if path.is_file() else None


def prepare(model_dir: Path, home: Path, *, fetch: bool = True) -> Counter:
    """Give the model in ``model_dir`` its step-ops variant; returns the ops it uses (empty:
    the model has no one-row branch, e.g. an fp16 build or one without ``fold_steps``).
    Raises StepOpsUnavailable (with the reason and the fix) when the library cannot be built
    here or the variant disagrees with the plain graph; the plain graph is left untouched."""
    from .rewrite import VARIANT_FILE, write_variant   # onnx: the `build` extra

    model_dir = Path(model_dir)
    cfg = _config(model_dir)
    if cfg.get("precision", "fp32") != "fp32" or not cfg.get("fold_steps"):
        return Counter()
    lib = build_library(home, fetch=fetch)
    plain = model_dir / cfg["model_file"]
    done = variant_of(model_dir, cfg, lib)
    if done is not None and done.stat().st_mtime >= plain.stat().st_mtime:
        return Counter(cfg["step_ops"].get("ops", {}))
    cfg.pop("step_ops", None)
    counts = write_variant(model_dir, cfg)
    if not counts:
        return counts
    try:
        agree = _agreement(model_dir, cfg, model_dir / VARIANT_FILE, lib)
    except Exception as exc:   # onnxruntime raises its own types
        (model_dir / VARIANT_FILE).unlink(missing_ok=True)
        raise StepOpsUnavailable(f"the step-ops graph does not run: {exc}",
                                 hint="set llm.step_ops = false and report it") from None
    if agree < CHECK_AGREE:
        (model_dir / VARIANT_FILE).unlink(missing_ok=True)
        raise StepOpsUnavailable(
            f"the step-ops graph picked the plain graph's token in {agree:.0%} of "
            f"{CHECK_STEPS} greedy steps (need {CHECK_AGREE:.0%})",
            hint="set llm.step_ops = false and report it")
    cfg["step_ops"] = {"model_file": VARIANT_FILE, "library": lib.name, "ops": dict(counts),
                       "check_top1": round(agree, 4)}
    tmp = model_dir / "model_config.json.tmp"
    tmp.write_text(json.dumps(cfg, indent=2))
    tmp.replace(model_dir / "model_config.json")
    log.info("decode-step kernels for %s: %s (greedy agreement %.0f%%)", model_dir,
             dict(counts), 100 * agree)
    return counts


def _agreement(model_dir: Path, cfg: dict, variant: Path, lib: Path) -> float:
    """Fraction of CHECK_STEPS greedy steps (the plain graph's tokens fed to both) whose top
    token the variant picks too."""
    import numpy as np

    from ...onnx_session import build_session
    from ..providers import OpenedSession
    from ..runner import KvRunner

    runners = []
    for path, ops in ((model_dir / cfg["model_file"], None), (variant, lib)):
        sess = build_session(path, threads=1, stage="llm", what="LLM", custom_ops=ops)
        runners.append(KvRunner(OpenedSession(sess, "cpu", ["CPUExecutionProvider"], []), cfg,
                                len(CHECK_PROMPT) + CHECK_STEPS + 1))
    plain, ours = runners
    tok = int(np.argmax(plain.feed(CHECK_PROMPT)))
    ours.feed(CHECK_PROMPT)
    same = 0
    for _ in range(CHECK_STEPS):
        want = int(np.argmax(plain.feed([tok])))
        got = ours.feed([tok])
        same += bool(np.isfinite(got).all()) and int(np.argmax(got)) == want
        tok = want
    return same / CHECK_STEPS

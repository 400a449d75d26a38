"""Before an accelerated session serves, its outputs must match the CPU session's.

Fixed inputs: every output's max abs error against onnxruntime on the CPU must stay within
the model's tolerance. Validation inputs (the encoder, with ``gpu.nlu_validation_file``):
the argmax of the label output (the intent) must agree on at least
``min_label_agreement`` of them.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .shapes import ModelSpec


@dataclass(frozen=True)
class Agreement:
    ok: bool
    max_abs_error: float
    tolerance: float
    label_agreement: float | None      # None without validation inputs
    checked: int                       # fixed + validation inputs compared
    detail: str                        # one line: what was compared, what failed

    def to_dict(self) -> dict:
        d = asdict(self)
        if not math.isfinite(self.max_abs_error):
            d["max_abs_error"] = None
        return d

    def short(self) -> str:
        text = f"max |err| {self.max_abs_error:.2e} (<= {self.tolerance:g})"
        if self.label_agreement is not None:
            text += f", labels {self.label_agreement * 100:.1f} %"
        return text


def check_agreement(candidate: Any, reference: Any, spec: ModelSpec) -> Agreement:
    names = [o.name for o in reference.get_outputs()]
    worst, where = 0.0, ""
    for i, feed in enumerate(spec.fixed_feeds):
        got = candidate.run(names, dict(feed))
        want = reference.run(names, dict(feed))
        for name, g, w in zip(names, got, want, strict=False):
            g, w = np.asarray(g), np.asarray(w)
            if g.shape != w.shape:
                return Agreement(False, math.inf, spec.max_abs_error, None, i + 1,
                                 f"output {name} has shape {g.shape}, the CPU's {w.shape}")
            err = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) \
                if g.size else 0.0
            if not math.isfinite(err):
                err = math.inf
            if err > worst:
                worst, where = err, f"{name} on fixed input {i}"
    label = None
    if spec.label_feeds:
        k = names.index(spec.label_output)
        same = 0
        for feed in spec.label_feeds:
            g = candidate.run([names[k]], dict(feed))[0]
            w = reference.run([names[k]], dict(feed))[0]
            same += int(np.argmax(g) == np.argmax(w))
        label = same / len(spec.label_feeds)
    checked = len(spec.fixed_feeds) + len(spec.label_feeds)
    problems = []
    if worst > spec.max_abs_error:
        problems.append(f"max abs error {worst:.3g} > {spec.max_abs_error:g} ({where})")
    if label is not None and label < spec.min_label_agreement:
        problems.append(f"{spec.label_output} argmax agrees on {label * 100:.1f} % of "
                        f"{len(spec.label_feeds)} validation inputs "
                        f"(< {spec.min_label_agreement * 100:g} %)")
    detail = "; ".join(problems) or f"{checked} inputs agree"
    return Agreement(not problems, worst, spec.max_abs_error, label, checked, detail)

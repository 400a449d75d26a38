"""What a model needs to become an engine: bounded input shapes and the agreement inputs.

A :class:`ModelSpec` is written next to the model it describes (``vad/silero.py``,
``nlu/encoder.py``): one optimisation profile (min / opt / max shape per input; fixed
inputs have min = opt = max), the fixed inputs whose outputs must agree with the CPU
session, and, for a classifier, validation inputs whose argmax must agree.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

Shape = tuple[int, ...]
Feed = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class ShapeProfile:
    """``shapes[name] = (min, opt, max)``; inputs not named (scalars) have fixed shapes."""

    shapes: Mapping[str, tuple[Shape, Shape, Shape]]

    def __post_init__(self) -> None:
        for name, (lo, opt, hi) in self.shapes.items():
            ok = len(lo) == len(opt) == len(hi) and all(
                0 < a <= b <= c for a, b, c in zip(lo, opt, hi, strict=True))
            if not ok:
                raise ValueError(f"profile of {name}: need 0 < min <= opt <= max, got "
                                 f"{lo} {opt} {hi}")

    def max_shape(self, name: str, default: Shape) -> Shape:
        return self.shapes[name][2] if name in self.shapes else default

    def admits(self, name: str, shape: Shape) -> bool:
        if name not in self.shapes:
            return True
        lo, _, hi = self.shapes[name]
        return len(shape) == len(lo) and all(
            a <= s <= c for a, s, c in zip(lo, shape, hi, strict=True))

    def ort_trt_options(self) -> dict[str, str]:
        """The same profile as onnxruntime TensorRT provider options."""
        out = {}
        for i, level in enumerate(("min", "opt", "max")):
            out[f"trt_profile_{level}_shapes"] = ",".join(
                f"{n}:{'x'.join(str(d) for d in s[i])}" for n, s in self.shapes.items())
        return out

    def digest_text(self) -> str:
        return ";".join(f"{n}={s}" for n, s in sorted(self.shapes.items()))


@dataclass(frozen=True)
class ModelSpec:
    name: str                                    # "vad" | "nlu": config and metric label
    profile: ShapeProfile
    fixed_feeds: tuple[Feed, ...]                # outputs compared by max abs error
    max_abs_error: float
    label_feeds: tuple[Feed, ...] = ()           # validation inputs: argmax must agree
    label_output: str = ""                       # the output whose argmax is the label
    min_label_agreement: float = 0.99
    int8: bool = False                           # no calibration path yet: always off
    notes: tuple[str, ...] = field(default=())

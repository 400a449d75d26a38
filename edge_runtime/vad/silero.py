"""Silero VAD v5 on onnxruntime alone (no torch): 512-sample frames at 16 kHz.

The model takes ``input[B, 64 + 512]`` (64 samples of context from the previous frame
prepended), ``state[2, B, 128]`` and ``sr`` (int64) and returns ``output[B, 1]`` (speech
probability) and ``stateN``. About 0.1 ms per 32 ms frame on one core.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from ..audio.format import SAMPLE_RATE
from ..errors import ModelMissingError
from ..onnx_session import build_session
from .base import VadError

log = logging.getLogger(__name__)

FRAME, CONTEXT, RATE = 512, 64, SAMPLE_RATE


def default_model_path() -> Path | None:
    """The pulled model (`models pull`), else the one in an installed ``silero-vad`` package."""
    from ..optional import model_file
    return model_file("silero-vad", "silero_vad.onnx", "silero_vad", "data")


def gpu_spec(cpu: Any, settings: Any) -> Any:
    """The engine's shapes (all fixed: one 576-sample window, a [2, 1, 128] state, the
    scalar rate) and 16 fixed frames (tones and noise, states carried by the CPU session)
    whose probability and state must agree with the CPU within ``gpu.vad_max_abs_error``."""
    from ..gpu.shapes import ModelSpec, ShapeProfile
    rng = np.random.default_rng(0)
    t = np.arange(FRAME, dtype=np.float64) / RATE
    state = np.zeros((2, 1, 128), np.float32)
    context = np.zeros((1, CONTEXT), np.float32)
    sr = np.array(RATE, dtype=np.int64)
    feeds = []
    for i in range(16):
        tone = 0.3 * np.sin(2 * np.pi * (180 + 37 * i) * t) * (i % 3 != 0)
        frame = (tone + 0.02 * rng.standard_normal(FRAME)).astype(np.float32).reshape(1, FRAME)
        x = np.concatenate([context, frame], axis=1)
        feed = {"input": x, "state": state, "sr": sr}
        feeds.append(feed)
        state = cpu.run(None, feed)[1]
        context = x[:, -CONTEXT:]
    fixed = ((1, FRAME + CONTEXT),) * 3
    return ModelSpec("vad", ShapeProfile({"input": fixed, "state": ((2, 1, 128),) * 3}),
                     tuple(feeds), settings.tolerance("vad", 0.02))


class _Model:
    """The loaded session, shared by every stream's engine (run is thread-safe). With an
    ``accel`` (``gpu.Accelerator``) the session runs where the device profile says."""

    def __init__(self, path: Path, threads: int = 1, accel: Any = None) -> None:
        if accel is None:
            self.session = build_session(path, threads=threads, stage="vad",
                                         what="silero VAD model")
        else:
            self.session = accel.open("vad", path, gpu_spec, threads=threads, stage="vad",
                                      what="silero VAD model")
        self.sr = np.array(RATE, dtype=np.int64)


class SileroVad:
    name = "silero"
    frame_samples = FRAME

    def __init__(self, model_path: str | Path | None = None, *, threads: int = 1,
                 accel: Any = None, _model: _Model | None = None) -> None:
        if _model is None:
            path = Path(model_path) if model_path else default_model_path()
            if path is None or not path.is_file():
                where = path or "silero-vad is not installed"
                raise ModelMissingError(f"silero VAD model not found ({where})", stage="vad",
                                        hint="pip install --no-deps silero-vad, or set "
                                             "vad.model_path; or use vad.backend = 'webrtc'")
            _model = _Model(path, threads, accel)
        self._model = _model
        self.reset()

    def reset(self) -> None:
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._context = np.zeros((1, CONTEXT), dtype=np.float32)

    def fork(self) -> SileroVad:
        return SileroVad(_model=self._model)

    def prob(self, frame: np.ndarray) -> float:
        if frame.shape[-1] != FRAME:
            raise VadError(f"silero VAD needs {FRAME}-sample frames, got {frame.shape[-1]}")
        x = np.concatenate([self._context, frame.reshape(1, FRAME).astype(np.float32)], axis=1)
        out, self._state = self._model.session.run(
            None, {"input": x, "state": self._state, "sr": self._model.sr})
        self._context = x[:, -CONTEXT:]
        return float(out[0, 0])

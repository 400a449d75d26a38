"""The embedded backend: the device's own ONNX Runtime LLM engine, run on the gateway host."""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Iterator, Sequence

from edge_runtime.errors import ModelLoadError
from edge_runtime.types import CancelToken, GenerationParams, Message

log = logging.getLogger(__name__)


class EmbeddedBackend:
    """Wraps ``edge_runtime.llm.load_engine``; one generation at a time per loaded session.

    ``model_dir``: the built ONNX model directory; ``threads``: intra-op CPU threads;
    ``providers``: onnxruntime provider preference (the engine falls back in order).
    """

    def __init__(self, model_dir: str | Path, *, threads: int = 2, model_name: str = "",
                 providers: tuple[str, ...] = ("cuda", "cpu")) -> None:
        model_dir = Path(model_dir).expanduser()
        if not model_dir.is_dir():
            raise ModelLoadError(f"model directory {model_dir} does not exist",
                                 hint="build it with `edge-runtime models pull && edge-runtime "
                                      "models build`, or pass --model-dir")
        try:
            from edge_runtime.llm import load_engine  # lazy: onnxruntime is heavy to import
        except ImportError as exc:
            raise ModelLoadError(f"the embedded backend needs edge_runtime.llm.load_engine: {exc}",
                                 hint="install edge-runtime completely, or use --backend openai"
                                 ) from exc
        kwargs = {"providers": providers, "threads": threads}
        if model_name:
            kwargs["model_name"] = model_name
        self._engine = load_engine(model_dir, **kwargs)
        self.model_name = model_name or getattr(self._engine, "model_name", "")
        self._lock = threading.Lock()
        log.info("embedded backend: model %s from %s on %s", self.model_name, model_dir,
                 getattr(self._engine, "device", "?"))

    @property
    def device(self) -> str:
        return str(getattr(self._engine, "device", "cpu"))

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        return int(self._engine.prompt_tokens(messages))

    def generate(self, messages: Sequence[Message], params: GenerationParams,
                 cancel: CancelToken) -> Iterator[str]:
        with self._lock:   # a session decodes one sequence at a time
            yield from self._engine.generate(messages, params, cancel)

    def close(self) -> None:
        close = getattr(self._engine, "close", None)
        if callable(close):
            close()

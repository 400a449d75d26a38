"""The embedded backend: the device's own ONNX Runtime LLM engine, run on the gateway host."""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Iterator, Sequence

from edge_runtime.errors import ModelLoadError
from edge_runtime.types import CancelToken, GenerationParams, Message

log = logging.getLogger(__name__)
# engine stop reasons -> wire finish_reason
_FINISH = {"max_new_tokens": "length", "context_full": "length", "cancelled": "cancelled",
           "end_of_turn": "stop", "sentences": "stop"}


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
        self._local = threading.local()          # usage of the last generate, per worker thread
        log.info("embedded backend: model %s from %s on %s", self.model_name, model_dir,
                 getattr(self._engine, "device", "?"))

    @property
    def device(self) -> str:
        return str(getattr(self._engine, "device", "cpu"))

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        return int(self._engine.prompt_tokens(messages))

    def generate(self, messages: Sequence[Message], params: GenerationParams,
                 cancel: CancelToken) -> Iterator[str]:
        self._local.usage = None
        with self._lock:   # a session decodes one sequence at a time
            yield from self._engine.generate(messages, params, cancel)
            stats = dict(getattr(self._engine, "last_stats", None) or {})
        if stats:
            reason = _FINISH.get(str(stats.get("stop_reason")), "stop")
            self._local.usage = (int(stats.get("prompt_tokens") or 0),
                                 int(stats.get("new_tokens") or 0), reason)

    def last_usage(self) -> tuple[int, int, str] | None:
        """(prompt_tokens, completion_tokens, finish_reason) of this thread's last generate."""
        return getattr(self._local, "usage", None)

    def close(self) -> None:
        close = getattr(self._engine, "close", None)
        if callable(close):
            close()

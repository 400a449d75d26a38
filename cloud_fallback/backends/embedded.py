"""The embedded backend: the device's own ONNX Runtime LLM engine, run on the gateway host.

With ``max_batch`` > 1 the engine is a thread-safe :class:`~edge_runtime.llm.BatchingEngine`:
concurrent requests (one per gateway worker) decode together in batched steps, so the
gateway should run ``capacity`` (= ``max_batch``) workers. With ``max_batch`` 1 a lock
keeps the single session to one generation at a time.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import Any
from collections.abc import Iterator, Sequence

from edge_runtime.errors import ConfigError, ModelLoadError
from edge_runtime.types import CancelToken, GenerationParams, Message

log = logging.getLogger(__name__)
# engine stop reasons -> wire finish_reason
_FINISH = {"max_new_tokens": "length", "context_full": "length", "cancelled": "cancelled",
           "end_of_turn": "stop", "sentences": "stop"}


class EmbeddedBackend:
    """Wraps ``edge_runtime.llm.load_engine`` (see the module doc).

    ``model_dir``: the built ONNX model directory; ``threads``: intra-op CPU threads;
    ``providers``: onnxruntime provider preference (the engine falls back in order);
    ``max_batch``: concurrent generations batched together (1..16; 1 = one at a time).
    ``capacity`` is ``max_batch``.
    """

    def __init__(self, model_dir: str | Path, *, threads: int = 2, model_name: str = "",
                 providers: tuple[str, ...] = ("cuda", "cpu"), max_batch: int = 1) -> None:
        if not 1 <= max_batch <= 16:
            raise ConfigError(f"--max-batch must be in 1..16, got {max_batch}",
                              hint="pass --max-batch between 1 and 16")
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
        kwargs: dict[str, Any] = {"providers": providers, "threads": threads}
        if model_name:
            kwargs["model_name"] = model_name
        if max_batch > 1:
            kwargs["max_batch"] = max_batch
        self._engine = load_engine(model_dir, **kwargs)
        self.model_name = model_name or getattr(self._engine, "model_name", "")
        self.capacity = max_batch
        # the batching engine is thread-safe (its last_stats is per thread); a plain session
        # decodes one sequence at a time
        self._lock: contextlib.AbstractContextManager[object] = (
            contextlib.nullcontext() if max_batch > 1 else threading.Lock())
        self._local = threading.local()          # usage of the last generate, per worker thread
        log.info("embedded backend: model %s from %s on %s, max batch %d", self.model_name,
                 model_dir, getattr(self._engine, "device", "?"), max_batch)

    @property
    def device(self) -> str:
        return str(getattr(self._engine, "device", "cpu"))

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        return int(self._engine.prompt_tokens(messages))

    def generate(self, messages: Sequence[Message], params: GenerationParams,
                 cancel: CancelToken) -> Iterator[str]:
        self._local.usage = None
        with self._lock:
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

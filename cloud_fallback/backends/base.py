"""The gateway's backend interface: one synchronous streaming call, run in a worker thread."""
from __future__ import annotations

from typing import Protocol
from collections.abc import Iterator, Sequence

from edge_runtime.errors import EdgeError
from edge_runtime.types import CancelToken, GenerationParams, Message


class BackendError(EdgeError):
    """The backend could not produce an answer (the message says why and what to check)."""

    code, stage, retryable = "backend_error", "cloud_backend", True


class Backend(Protocol):
    model_name: str          # the name a Request's ``model`` must match ("" = accept any)

    def generate(self, messages: Sequence[Message], params: GenerationParams,
                 cancel: CancelToken) -> Iterator[str]:
        """Yield text pieces as they are produced; stop early when ``cancel.cancelled``.
        Raise :class:`BackendError` (or any exception) on failure. Runs in a worker thread."""

    # Optional: ``prompt_tokens(messages) -> int`` and ``last_usage() -> (prompt_tokens,
    # completion_tokens, finish_reason) | None`` (for the generate just finished in this
    # thread); without them the gateway reports pieces streamed as completion tokens.
    # ``capacity: int``: how many ``generate`` calls it runs concurrently at full speed
    # (``edge-cloud serve --workers 0`` starts that many workers; absent = 1).

    def close(self) -> None:
        """Release models/connections (called once at gateway shutdown)."""

"""A model-free backend for development and link tests: streams back the last user message.

Deterministic and dependency-free, so the gateway, the wire protocol and the device's
client can be exercised (including a gateway killed mid-stream) without a model.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

from edge_runtime.types import CancelToken, GenerationParams, Message


class EchoBackend:
    """Yields the words of the last user message, one piece per word.

    ``delay_s``: seconds to wait before each piece (simulates decode speed);
    ``repeat``: how many times the message is echoed (makes long streams);
    ``capacity``: concurrent generations it advertises (it has no limit of its own).
    """

    def __init__(self, *, delay_s: float = 0.0, repeat: int = 1, model_name: str = "echo",
                 capacity: int = 8) -> None:
        self.model_name = model_name
        self.capacity = max(1, capacity)
        self._delay_s = max(0.0, delay_s)
        self._repeat = max(1, repeat)
        self._sleeper = threading.Event()   # never set: an interruptible, cancel-aware sleep

    def generate(self, messages: Sequence[Message], params: GenerationParams,
                 cancel: CancelToken) -> Iterator[str]:
        text = next((m.content for m in reversed(messages) if m.role == "user"), "")
        words = text.split() * self._repeat
        for i, word in enumerate(words[: params.max_new_tokens]):
            if cancel.cancelled:
                return
            if self._delay_s:
                self._sleeper.wait(self._delay_s)
            yield word if i == 0 else " " + word

    def close(self) -> None:
        return None

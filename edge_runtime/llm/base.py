"""Local LLM: a synchronous streaming engine on onnxruntime."""
from __future__ import annotations

from typing import Protocol
from collections.abc import Iterator, Sequence

from ..types import CancelToken, GenerationParams, Message
from .prompt import Prompt


class LlmEngine(Protocol):
    model_name: str

    @property
    def device(self) -> str:
        """"tensorrt", "cuda" or "cpu": the provider actually running the model."""

    @property
    def providers(self) -> list[str]:
        """The onnxruntime providers in use, as the session reports them."""

    def prepare(self, messages: Sequence[Message]) -> Prompt:
        """The chat-templated, tokenized prompt, once per request: its ``tokens`` are what
        the scheduler predicts with, and ``generate(prompt)`` decodes from its ids."""

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        """Number of tokens the chat-templated prompt takes (``prepare(messages).tokens``)."""

    def generate(self, messages: Sequence[Message], params: GenerationParams,
                 cancel: CancelToken | None = None) -> Iterator[str]:
        """Yield text pieces as they are decoded (from a prepared prompt, or messages it
        prepares); stops on end of turn, sentence cap, token cap or ``cancel`` (checked
        once per token). Runs in the caller's thread."""

    # -- load, for the scheduler (see edge_runtime.llm.batching) ---------------------------
    @property
    def capacity(self) -> int:
        """Sessions that can decode together (1 without micro-batching)."""

    @property
    def batch_target(self) -> int:
        """How many of them may run now (the batch controller's target; 1 without)."""

    @property
    def active(self) -> int:
        """Sessions generating now."""

    @property
    def queued(self) -> int:
        """Requests waiting for a session + prompts waiting to be prefilled."""

    def step_time_s(self, batch: int) -> float:
        """Measured seconds per decode step with ``batch`` sessions decoding together."""

    def prefill_time_s(self, tokens: int) -> float:
        """Measured seconds to prefill ``tokens`` new (uncached) prompt tokens."""

    def close(self) -> None:
        """Stop taking requests and free what the engine owns (threads); idempotent."""

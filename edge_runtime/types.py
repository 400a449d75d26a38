"""The small vocabulary of values that flow between stages."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

Route = Literal["skill", "cache", "local", "cloud"]
Device = Literal["cpu", "cuda", "tensorrt", "cloud", "none"]


@dataclass(frozen=True)
class Intent:
    """What the user wants: an intent name, a confidence in 0..1 and normalized slots.

    ``name == "oos"`` means out of scope (an open question for the LLM). ``text`` is the
    request's normalized text (``Query.normalized``: the understander sets it), which skills
    and the answer-cache key read instead of normalizing again; "" for an intent built by
    hand. It is not part of ``to_dict`` (the answer object has the transcript) nor of the repr.
    """

    name: str
    confidence: float
    slots: dict[str, Any] = field(default_factory=dict)
    text: str = field(default="", repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "confidence": round(float(self.confidence), 4),
                "slots": self.slots}


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class GenerationParams:
    """Sampling settings for one request (local or cloud). These defaults are the only
    definition: the config's ``[llm]`` section takes its sampling defaults from here."""

    max_new_tokens: int = 64           # spoken answers are short
    temperature: float = 0.2
    top_p: float = 0.9
    top_k: int = 40
    repetition_penalty: float = 1.15
    seed: int = 0
    stop_at_sentence: int = 2          # stop after this many sentences (0 = off)


class CancelToken:
    """Set by barge-in or a caller that went away; generators check it once per token."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


@dataclass
class Timings:
    asr: float | None = None
    nlu: float | None = None
    cache: float | None = None
    first_token: float | None = None
    total: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {k: (None if v is None else round(v * 1000.0, 2)) for k, v in vars(self).items()}


@dataclass
class Result:
    """The answer object of DESIGN.md's contract (`ask --json`, `POST /v1/ask`)."""

    transcript: str
    intent: Intent
    route: Route
    device: Device
    reason: str
    answer: str
    timings: Timings = field(default_factory=Timings)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {"transcript": self.transcript, "intent": self.intent.to_dict(),
               "route": self.route, "device": self.device, "reason": self.reason,
               "answer": self.answer, "timings_ms": self.timings.to_dict()}
        out.update(self.extra)
        return out

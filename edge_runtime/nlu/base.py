"""Understanding: text -> Intent (name, confidence, normalized slots), with abstain."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


OOS = "oos"   # the out-of-scope intent: an open question, answered by the LLM


@dataclass(frozen=True)
class IntentSpec:
    """One intent as users define it (YAML): examples, who handles it, how it is cached."""

    name: str
    examples: tuple[str, ...] = ()
    skill: str | None = None          # skill name that answers it; None = LLM (local/cloud)
    cacheable: bool = False           # whole answers may be cached (never time-dependent/personal)
    cache_ttl_s: float | None = None  # None = cache.default_ttl_s
    budget_ms: float | None = None    # per-intent latency budget; None = scheduler.budget_ms
    slots: tuple[str, ...] = ()       # slot names the entity extractor should fill
    description: str = ""
    abstain_without: tuple[str, ...] = ()  # none of these slots found -> answer as ``oos``


@dataclass(frozen=True)
class IntentSet:
    intents: dict[str, IntentSpec] = field(default_factory=dict)
    source: str = ""                  # the file it was loaded from ("" = built in)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.intents)

    def spec(self, name: str) -> IntentSpec:
        """The spec for ``name``; unknown names and ``oos`` get the open-question spec."""
        return self.intents.get(name) or IntentSpec(name=OOS, cacheable=True)


class IntentClassifier(Protocol):
    def classify(self, text: str) -> tuple[str, float]:
        """Return (intent name, confidence 0..1) for normalized text; ``oos`` to abstain."""


class EntityExtractor(Protocol):
    def extract(self, text: str) -> dict:
        """Return normalized slots found in ``text`` (numbers, durations, times, lists …)."""

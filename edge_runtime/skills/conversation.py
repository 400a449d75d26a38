"""Conversational skills: greeting, goodbye, thanks, help and stop. Deterministic answers;
the greeting follows the time of day of the injected clock."""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from ..clock import Clock
from ..types import Intent
from .base import words as words_of
from .datetime_skills import now_in, resolve_zone
from .speech import join_words


class GreetingSkill:
    name = "greeting"

    def __init__(self, clock: Clock, timezone: str = "") -> None:
        self.clock = clock
        self.zone: dt.tzinfo | None = resolve_zone(timezone)

    def handle(self, intent: Intent, text: str) -> str:
        words = words_of(intent, text)
        if any(p in words for p in ("how are you", "how is it going", "hows it going", "how ya",
                                    "how have you been", "how are things", "how do you do")):
            return "I'm doing well, thanks for asking. How can I help?"
        hour = now_in(self.clock, self.zone).hour
        part = "morning" if 5 <= hour < 12 else "afternoon" if 12 <= hour < 18 else "evening"
        return f"Good {part}! How can I help?"


class GoodbyeSkill:
    name = "goodbye"

    def handle(self, intent: Intent, text: str) -> str:
        words = words_of(intent, text)
        if "night" in words or "bed" in words or "sleep" in words:
            return "Good night!"
        return "Goodbye! Talk to you soon."


class ThanksSkill:
    name = "thanks"

    def handle(self, intent: Intent, text: str) -> str:
        return "You're welcome!"


class StopSkill:
    name = "stop"

    def handle(self, intent: Intent, text: str) -> str:
        return "Okay."


class HelpSkill:
    """Lists what the registered skills can do (``capabilities`` returns their summaries)."""

    name = "help"

    def __init__(self, capabilities: Callable[[], list[str]]) -> None:
        self.capabilities = capabilities

    def handle(self, intent: Intent, text: str) -> str:
        things = self.capabilities()
        if not things:
            return "Ask me anything and I'll do my best to answer."
        return f"I can {join_words(things)}. For anything else, just ask me a question."

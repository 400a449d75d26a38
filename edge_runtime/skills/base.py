"""Skills: deterministic experts that answer an intent without any model."""
from __future__ import annotations

from typing import Protocol

from ..types import Intent


class Skill(Protocol):
    name: str

    def handle(self, intent: Intent, text: str) -> str:
        """Answer the request in one short spoken sentence.

        Raise ``BadInputError`` (with a message a user can act on) when the slots
        cannot be used, e.g. "I could not find a number to set the timer for".
        """

"""Skills: deterministic experts that answer an intent without any model."""
from __future__ import annotations

from typing import Protocol

from ..errors import BadInputError, ConfigError
from ..nlu.text import normalize_text
from ..types import Intent


class Skill(Protocol):
    name: str

    def handle(self, intent: Intent, text: str) -> str:
        """Answer the request in one short spoken sentence. ``text`` is the request as said;
        a skill that reads the words uses :func:`words` (the intent's normalized text).

        Raise ``BadInputError`` (with a message a user can act on) when the slots
        cannot be used, e.g. "I could not find a number to set the timer for".
        """


class SkillInputError(BadInputError):
    """The slots of a request cannot be used. ``message`` is a complete spoken sentence
    that tells the user what to say instead, so a voice front end can speak it as is."""

    stage = "skills"


class SkillConfigError(ConfigError):
    """A skills setting (e.g. ``skills.timezone``) is unusable."""


def words(intent: Intent, text: str) -> str:
    """The request's normalized text: the one the understander computed (``intent.text``),
    or, for an intent built by hand without it, ``normalize_text(text)``."""
    return intent.text or normalize_text(text)

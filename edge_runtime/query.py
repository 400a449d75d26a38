"""One request as the pipeline sees it: validated once, normalized once, at the entry.

    query = Query.build(text, max_chars=cfg.nlu.max_text_chars, budget_ms=..., session=...)

``Query.text`` is the request as said or typed (stripped): the transcript of the answer and
what the LLM is asked. ``Query.normalized`` is ``nlu.text.normalize_text(text)``, computed
here and nowhere else on the request path: the understander classifies it, the
:class:`~edge_runtime.types.Intent` carries it (``Intent.text``), skills and the answer-cache
key read it from the intent. ``budget_ms`` is the request's own latency budget (None: the
configured one); :func:`edge_runtime.scheduler.budget.resolve_budget_ms` turns it and the
intent into the budget the scheduler plans with, once the intent is known.

:func:`validate_text` is the one check of request text (every entry calls it, directly or
through ``Query.build``): the edges (HTTP, voice, CLI) add only what is theirs to check,
such as body size or JSON shape.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import BadInputError
from .scheduler.budget import check_budget_ms


def validate_text(text: Any, max_chars: int) -> str:
    """The request text, stripped; ``BadInputError`` for what no stage can use (not text,
    not UTF-8, NUL bytes, empty, longer than ``max_chars`` = ``nlu.max_text_chars``), with a
    message that says what to send instead. UTF-8 ``bytes`` are decoded."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise BadInputError("text is not valid UTF-8", hint="send UTF-8 text") from None
    if not isinstance(text, str):
        raise BadInputError(f"text must be a string, got {type(text).__name__}")
    if "\x00" in text:
        raise BadInputError("text contains NUL bytes", hint="send plain text")
    if not text.strip():
        raise BadInputError("text is empty", hint="say or type a request")
    if len(text) > max_chars:
        raise BadInputError(f"text is {len(text)} characters, more than the {max_chars} "
                            f"allowed (nlu.max_text_chars)",
                            hint="shorten the request or raise nlu.max_text_chars")
    return text.strip()


@dataclass(frozen=True)
class Query:
    """A validated request: its text, the normalized form of it, its own budget, its session."""

    text: str = field(repr=False)          # request text is never put in logs by accident
    normalized: str = field(repr=False)
    budget_ms: float | None = None         # the request's own budget; None = configured
    session: str | None = None             # a multi-turn conversation's id
    # spoken requests: the words the recognizer was unsure of (``Transcript.unsure``)
    unsure: frozenset[str] = field(default=frozenset(), repr=False)

    @classmethod
    def build(cls, text: Any, *, max_chars: int, budget_ms: float | None = None,
              session: str | None = None, unsure: frozenset[str] = frozenset()) -> Query:
        """Validate ``text`` (:func:`validate_text`) and ``budget_ms`` (a positive, finite
        number of milliseconds, or None) and normalize the text, once."""
        from .nlu.text import normalize_text   # (edge_runtime.nlu imports this module)

        valid = validate_text(text, max_chars)
        return cls(valid, normalize_text(valid), check_budget_ms(budget_ms), session,
                   frozenset(unsure))

"""Per-session conversation memory for multi-turn dialogue, under a prompt-token budget.

    store = ConversationStore(engine.prompt_tokens, max_prompt_tokens=1024)
    messages = store.messages(session_id, system_prompt, user_text)   # -> engine.generate
    store.add_answer(session_id, answer_text)

or, so the prompt that was measured is the one generated from (templated and tokenized
once), ``prompt = store.prompt(session_id, system_prompt, user_text, engine.prepare)``.

The prompt is [system] + the most recent complete turns that fit + the new user message:
a sliding window over turns (the system prompt always stays, the oldest turns go first).
Dropped turns can leave a one-line summary (their user questions, shortened) appended to
the system message *after* the system prompt text, so the system prompt's tokens stay a
stable prefix: the engine keeps that prefix's KV cache and prefills only what follows
(see ``OnnxLlmEngine(reuse_prefix=True)`` and :class:`BatchingEngine` slot choice).

Memory is bounded: at most ``max_sessions`` sessions (least recently used evicted), at
most ``max_turns`` turns each, and sessions idle longer than ``ttl_s`` (injected clock)
expire. Thread-safe.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import ConfigError
from ..types import Message
from .prompt import Prompt

_T = TypeVar("_T")

log = logging.getLogger(__name__)

SUMMARY_PREFIX = "\nEarlier in this conversation the user asked: "


@dataclass(frozen=True)
class Turn:
    user: str
    assistant: str


@dataclass
class _Session:
    turns: list[Turn] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)   # user texts of dropped turns (recent last)
    pending: str | None = None                          # user text awaiting its answer
    last_used: float = 0.0


def _shorten(text: str, words: int) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + ("..." if len(parts) > words else "")


class ConversationStore:
    """session id -> turns; builds the prompt messages for the next request.

    ``count_tokens(messages)`` returns the templated prompt length in tokens (pass
    ``engine.prompt_tokens``). ``summary_turns`` = how many dropped questions the summary
    keeps (0 = no summary).
    """

    def __init__(self, count_tokens: Callable[[Sequence[Message]], int], *,
                 max_prompt_tokens: int = 1024, max_turns: int = 16, max_sessions: int = 256,
                 ttl_s: float = 1800.0, summary_turns: int = 3, summary_words: int = 10,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        if max_prompt_tokens < 16 or max_turns < 1 or max_sessions < 1 or ttl_s <= 0:
            raise ConfigError("conversation limits must be positive (max_prompt_tokens >= 16)",
                              hint="fix llm.conversation_* in the config")
        self.count_tokens = count_tokens
        self.max_prompt_tokens = max_prompt_tokens
        self.max_turns = max_turns
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.summary_turns = summary_turns
        self.summary_words = summary_words
        self.clock = clock
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._lock = threading.Lock()

    # -- public API --------------------------------------------------------------------------
    def messages(self, session_id: str, system_prompt: str, user_text: str) -> list[Message]:
        """The prompt for ``user_text`` in this session; remembers it until ``add_answer``."""
        return self._window(session_id, system_prompt, user_text, list, self.count_tokens)

    def prompt(self, session_id: str, system_prompt: str, user_text: str,
               prepare: Callable[[Sequence[Message]], Prompt]) -> Prompt:
        """:meth:`messages`, as the prompt ``prepare`` (``engine.prepare``) makes of them and
        measured by its ``tokens``: the prompt is templated and tokenized once."""
        return self._window(session_id, system_prompt, user_text, prepare,
                            lambda p: p.tokens)

    def _window(self, session_id: str, system_prompt: str, user_text: str,
                make: Callable[[list[Message]], _T], size: Callable[[_T], int]) -> _T:
        """``make`` of [system] + the most recent turns whose ``size`` fits + ``user_text``."""
        with self._lock:
            s = self._session(session_id)
            s.pending = user_text
            while True:
                made = make(self._build(s, system_prompt, user_text))
                if not s.turns or size(made) <= self.max_prompt_tokens:
                    return made
                self._drop_oldest(s)

    def add_answer(self, session_id: str, text: str) -> None:
        """Record the answer to the pending user message (a cut-off answer: what was said)."""
        with self._lock:
            s = self._session(session_id)
            if s.pending is None:
                log.debug("add_answer without a pending question in session %s", session_id)
                return
            s.turns.append(Turn(s.pending, text))
            s.pending = None
            while len(s.turns) > self.max_turns:
                self._drop_oldest(s)

    def seed(self, session_id: str, turns: Sequence[tuple[str, str]]) -> None:
        """Start ``session_id`` afresh from (user, assistant) turns a client kept itself
        (an OpenAI-style request carries its whole history); the usual limits apply."""
        with self._lock:
            s = self._session(session_id)
            s.turns = [Turn(user, assistant) for user, assistant in turns]
            s.dropped, s.pending = [], None
            while len(s.turns) > self.max_turns:
                self._drop_oldest(s)

    def turns(self, session_id: str) -> list[Turn]:
        with self._lock:
            s = self._sessions.get(session_id)
            return list(s.turns) if s else []

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._sessions)

    # -- internals ---------------------------------------------------------------------------
    def _session(self, session_id: str) -> _Session:
        self._expire()
        s = self._sessions.get(session_id)
        if s is None:
            s = self._sessions[session_id] = _Session()
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(session_id)
        s.last_used = self.clock.monotonic()
        return s

    def _expire(self) -> None:
        now = self.clock.monotonic()
        while self._sessions:
            sid, s = next(iter(self._sessions.items()))
            if now - s.last_used <= self.ttl_s:
                break
            del self._sessions[sid]

    def _drop_oldest(self, s: _Session) -> None:
        turn = s.turns.pop(0)
        if self.summary_turns:
            s.dropped.append(_shorten(turn.user, self.summary_words))
            del s.dropped[:-self.summary_turns]

    def _build(self, s: _Session, system_prompt: str, user_text: str) -> list[Message]:
        system = system_prompt
        if s.dropped and self.summary_turns:
            system += SUMMARY_PREFIX + "; ".join(s.dropped) + "."
        msgs = [Message("system", system)] if system else []
        for t in s.turns:
            msgs += [Message("user", t.user), Message("assistant", t.assistant)]
        return msgs + [Message("user", user_text)]

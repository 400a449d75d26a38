"""The parts the pipeline drives, typed by what it calls on them.

``runtime.build_stages`` fills :class:`Stages` with the real parts; tests fill it with
fakes. Optional parts are explicit (``llm`` / ``cloud`` may be None, ``skills.timers``
may be None), never found by probing for attributes.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .cache.base import CachedAnswer
from .cloud_link.base import CloudClient
from .errors import EdgeError
from .llm.base import LlmEngine
from .nlu.base import IntentSet, IntentSpec
from .query import Query
from .scheduler import Scheduler
from .scheduler.scheduler import CloudView
from .skills.base import Skill
from .skills.timers import TimerStore
from .types import Intent


class Understanding(Protocol):
    """NLU as the pipeline sees it (``nlu.Understander``)."""

    intents: IntentSet

    def parse(self, text: Query | str) -> Intent: ...

    def acts_on(self, text: str, at_least: float = 0.0) -> bool:
        """Whether ``text`` would be acted on, sure to ``at_least`` (ASR hypothesis choice)."""
        ...


class SkillLookup(Protocol):
    """The skill registry (``skills.SkillRegistry``): a skill by name, and the timers the
    daemon announces (None when there is no timer skill)."""

    timers: TimerStore | None

    def get(self, skill_name: str) -> Skill | None: ...


class AnswerStore(Protocol):
    """The answer cache (``cache.AnswerCache``)."""

    def get(self, key: str) -> CachedAnswer | None: ...

    def put(self, key: str, answer: CachedAnswer, ttl_s: float) -> None: ...

    def tier_states(self) -> dict[str, str]: ...

    def error_counts(self) -> dict[str, int]: ...

    def probe_due(self) -> None: ...

    def close(self) -> None: ...


class CloudLink(CloudClient, CloudView, Protocol):
    """The cloud client as the runtime uses it: streams, state, and the scheduler's view
    (``cloud_link.FailoverCloudClient``)."""


@dataclass
class Stages:
    """The parts the pipeline drives; built by ``runtime.build_stages`` or by tests."""

    understander: Understanding
    skills: SkillLookup
    cache: AnswerStore
    make_key: Callable[[Intent, IntentSpec, str], str | None]
    ttl_for: Callable[[IntentSpec], float]
    scheduler: Scheduler
    llm: LlmEngine | None          # None when it could not be loaded (see llm_error)
    llm_error: EdgeError | None
    cloud: CloudLink | None        # None when disabled

"""Skills: deterministic experts (time, date, timers, arithmetic, units, conversation,
simulated devices) that answer an intent without any model.

Public API: ``SkillRegistry.from_config(cfg, clock, lists).get(skill_name).handle(intent, text)``.
"""
from .base import Skill, SkillConfigError, SkillInputError
from .registry import SkillRegistry
from .timers import Timer, TimerLimitError, TimerStore

__all__ = ["Skill", "SkillConfigError", "SkillInputError", "SkillRegistry", "Timer",
           "TimerLimitError", "TimerStore"]

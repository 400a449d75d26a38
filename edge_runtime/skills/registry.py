"""The skill registry: builds every built-in skill from config and finds one by name.

Intent -> skill names come from the intent file (``IntentSpec.skill``); the registry maps a
skill name to its instance. Shared state (timers, devices) is exposed for the daemon.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..clock import SYSTEM_CLOCK, Clock
from ..config import HomeConfig, NluConfig, SkillsConfig
from .arithmetic import ArithmeticSkill
from .base import Skill
from .conversation import GoodbyeSkill, GreetingSkill, HelpSkill, StopSkill, ThanksSkill
from .conversion import UnitConvertSkill
from .datetime_skills import DateSkill, TimeSkill
from .devices import DeviceSkill, DeviceStore
from .home import ClarifySkill, HomeSkill
from .home_state import HomeBackend, SimHome
from .home_timers import HomeTimers

if TYPE_CHECKING:
    from .ha_refresh import HomeRefresher
from .timers import TimerSkill, TimerStore

log = logging.getLogger(__name__)

# what the help skill says each skill does, in the order it says them
_SUMMARIES = {
    "time": "tell the time", "date": "tell the date", "timer": "run timers",
    "arithmetic": "do arithmetic", "unit_convert": "convert units",
    "device": "switch devices on or off",
    "home": "control lights, covers, the thermostat, music and your lists",
}


class SkillRegistry:
    """Skill name -> skill; one instance per daemon (the timer and device stores live here)."""

    def __init__(self, skills: Mapping[str, Skill], timers: TimerStore | None = None,
                 devices: DeviceStore | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self._skills = dict(skills)
        self._clock = clock
        self.timers = timers
        self.devices = devices
        self.home: HomeBackend | None = None
        self.refresher: HomeRefresher | None = None   # Home Assistant's lists kept fresh

    @classmethod
    def from_config(cls, cfg: SkillsConfig, clock: Clock,
                    lists: Mapping[str, tuple[str, ...]] | None = None) -> SkillRegistry:
        """Build the built-in skills. ``lists`` are ``nlu.lists`` (``area`` and ``device``
        name the simulated devices); None = the default lists. Raises ``SkillConfigError``
        for an unknown ``skills.timezone``."""
        lists = NluConfig().lists if lists is None else lists
        timers = TimerStore(clock, cfg.max_timers)
        devices = DeviceStore(tuple(lists.get("area", ())), tuple(lists.get("device", ())))
        skills: dict[str, Skill] = {}
        registry = cls(skills, timers, devices, clock)
        for skill in (TimeSkill(clock, cfg.timezone), DateSkill(clock, cfg.timezone),
                      TimerSkill(timers, cfg.timezone), ArithmeticSkill(), UnitConvertSkill(),
                      GreetingSkill(clock, cfg.timezone), GoodbyeSkill(), ThanksSkill(),
                      HelpSkill(registry.capabilities), StopSkill(), DeviceSkill(devices)):
            skills[skill.name] = skill
        registry._skills = skills
        log.info("skills ready: %s", ", ".join(skills))
        return registry

    def add_home(self, home: HomeConfig | None = None) -> None:
        """Add the ``home`` skill (Home Assistant intents on the simulated home,
        ``home_state.SimHome``, or on a real Home Assistant with ``home.backend =
        "home_assistant"``) and ``clarify`` (asks unsure home requests back)."""
        device_skill = self._skills.get("device")
        if not isinstance(device_skill, DeviceSkill) or self.devices is None or self.timers is None:
            raise ValueError("the home skill needs the device skill and the timer store")
        if home is not None and home.backend == "home_assistant":
            from .ha_refresh import HomeRefresher
            from .home_assistant import HomeAssistantSkill, read_home
            client, ha_home = read_home(home)
            self.home = ha_home
            self.refresher = HomeRefresher(client, ha_home, refresh_s=home.refresh_s,
                                           retry_s=home.retry_s, clock=self._clock)
            self._skills["home"] = HomeAssistantSkill(client, ha_home, HomeTimers(self.timers),
                                                      self.refresher)
        else:
            sim = SimHome(self.devices.areas, self.devices.devices)
            self.home = sim
            self._skills["home"] = HomeSkill(sim, device_skill, HomeTimers(self.timers))
        self._skills["clarify"] = ClarifySkill()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._skills)

    def get(self, skill_name: str) -> Skill | None:
        return self._skills.get(skill_name)

    def capabilities(self) -> list[str]:
        """What the registered skills can do, as phrases for the help answer."""
        out = [text for name, text in _SUMMARIES.items() if name in self._skills]
        if "tell the time" in out and "tell the date" in out:
            out[out.index("tell the time")] = "tell the time and date"
            out.remove("tell the date")
        return out

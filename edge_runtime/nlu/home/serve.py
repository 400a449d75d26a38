"""The home understanding in the daemon: load the built model, answer home requests.

``attach_home(understander, cfg)`` (``runtime.build_stages`` when ``nlu.home`` is on) loads
the model built by ``edge-runtime models build`` (about half a minute, needs the pinned
``hassil`` and ``home-assistant-intents``) from ``nlu.home_dir`` (default
``<paths.home>/nlu/home-v<format>``); without it the daemon serves the built-in intents
and says how to build it. ``HomeUnderstanding.parse`` answers a request the home model
recognises:

- above the intent's calibrated threshold: the Home Assistant intent and its slots, for
  the ``home`` skill (time, date, starting and cancelling timers and "never mind" are left
  to the built-in intents, which answer them with richer slots);
- below it but still likely a home request: ``clarify``, a question back ("Did you mean:
  turn on the kitchen lamp?"), never an action;
- not a home request: None (the built-in understanding goes on);
- a request in another language (``nlu.language.other_language``): ``clarify`` with a
  spoken answer that says so ("Sorry, I only understand English, so I did nothing."),
  never an action.

Without a built model ``EnglishOnly`` still answers another language.
``set_lists`` swaps the home's lists (Home Assistant read again: ``skills.ha_refresh``).
"""
from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config import NluConfig
from ...types import Intent
from ..base import IntentSpec
from ..hass_model import bridge
from ..language import other_language
from .lists import HomeLists
from .model import HOME_FILE, HOME_FORMAT, OTHER, HomeModel, doubted

if TYPE_CHECKING:
    from ...skills.ha_refresh import HomeRefresher
    from ...skills.home_state import HomeBackend

log = logging.getLogger(__name__)

CLARIFY = "clarify"
# answered by the built-in intents (richer slots: time zones, named timers, "stop")
BUILTIN = frozenset(("HassStartTimer", "HassCancelTimer", "HassCancelAllTimers",
                     "HassGetCurrentTime", "HassGetCurrentDate", "HassNevermind"))
ASK_SHARE = 0.5        # below this share of the threshold the home model does not claim it
_READ_ONLY = frozenset(("HassGetState", "HassClimateGetTemperature", "HassTimerStatus",
                        "HassGetWeather"))
_VERBS = {"HassTurnOn": "turn on", "HassTurnOff": "turn off", "HassLightSet": "set",
          "HassSetPosition": "set the position of", "HassClimateSetTemperature": "set",
          "HassMediaPause": "pause the music", "HassMediaUnpause": "resume the music",
          "HassMediaNext": "skip to the next track", "HassMediaPrevious": "go back a track",
          "HassSetVolume": "set the volume", "HassSetVolumeRelative": "change the volume",
          "HassIncreaseTimer": "add time to a timer", "HassDecreaseTimer": "take time off a timer",
          "HassPauseTimer": "pause a timer", "HassUnpauseTimer": "resume a timer",
          "HassShoppingListAddItem": "add to the shopping list", "HassListAddItem": "add to a list",
          "HassGetState": "check", "HassClimateGetTemperature": "check the temperature",
          "HassTimerStatus": "check your timers", "HassGetWeather": "check the weather"}


_SAID = {"name": "device or room"}


def default_dir() -> Path:
    return Path(f"~/.cache/edge-runtime/nlu/home-v{HOME_FORMAT}").expanduser()


def with_home_dir(nlu: NluConfig, home: Path) -> NluConfig:
    """``nlu`` with ``home_dir`` resolved under the runtime's ``paths.home`` when unset."""
    if nlu.home_dir:
        return nlu
    return dataclasses.replace(nlu, home_dir=str(home / "nlu" / f"home-v{HOME_FORMAT}"))


def model_dir(cfg: NluConfig) -> Path:
    return Path(cfg.home_dir).expanduser() if cfg.home_dir else default_dir()


def home_lists(cfg: NluConfig, home: HomeBackend | None = None) -> HomeLists:
    """The home's areas and entities: ``home`` (the skills' backend: the simulated home or
    the one read from Home Assistant), else the simulated home of ``cfg.lists``. A backend
    with no entities (Home Assistant not reachable at start) gives the default lists."""
    from ...skills.home_state import SimHome
    if home is None:
        areas = tuple(cfg.lists.get("area", ()))
        home = SimHome(areas, tuple(cfg.lists.get("device", ())))
    entities = home.entities()
    return HomeLists(tuple(home.areas), (), entities) if entities else HomeLists()


def describe(intent: str, slots: dict[str, Any]) -> str:
    """A short phrase for what the request seemed to ask ("turn on the kitchen lamp")."""
    text = _VERBS.get(intent, intent)
    what = " in the ".join(str(slots[k]) for k in ("name", "area") if slots.get(k))
    if what:
        text += f" the {what}"
    if "item" in slots:
        return f"{text}: {slots['item']}"
    value = next((slots[k] for k in ("brightness", "color", "temperature", "position",
                                     "volume_level") if k in slots), None)
    return f"{text} to {value}" if value is not None else text


ENGLISH_ONLY = "Sorry, I only understand English, so I did nothing. Please say it in English."


class EnglishOnly:
    """Without a home model: only requests in another language are answered (``clarify``
    says so), everything else goes on to the built-in intents."""

    def specs(self) -> dict[str, IntentSpec]:
        return {CLARIFY: IntentSpec(name=CLARIFY, skill=CLARIFY,
                                    description="a home request asked back (not sure enough)")}

    def parse(self, text: str, unsure: frozenset[str] = frozenset()) -> Intent | None:
        language = other_language(text)
        if language:
            log.debug("request in %s: not understood", language)
            return Intent(CLARIFY, 1.0, {"question": ENGLISH_ONLY, "language": language})
        return None

    def acts_on(self, text: str, at_least: float = 0.0) -> bool:
        return False


class HomeUnderstanding:
    def __init__(self, model: HomeModel) -> None:
        self.model = model

    def set_lists(self, lists: HomeLists) -> None:
        """Parse with ``lists`` from now on (one assignment: a parse in flight sees the old
        or the new model, never half of each)."""
        self.model = self.model.with_lists(lists)

    def specs(self) -> dict[str, IntentSpec]:
        """Intent specs for the pipeline: every home intent answered by the ``home`` skill,
        never cached (answers depend on the home's state)."""
        out = {name: IntentSpec(name=name, skill="home", description=f"Home Assistant {name}")
               for name in self.model.intents if name not in BUILTIN}
        out[CLARIFY] = IntentSpec(name=CLARIFY, skill=CLARIFY,
                                  description="a home request asked back (not sure enough)")
        return out

    def acts_on(self, text: str, at_least: float = 0.0) -> bool:
        """The home model would act on ``text``: an intent above its calibrated threshold
        and ``at_least``, with the slots it needs (``asr.nbest.choose`` asks this of each
        hypothesis)."""
        hp = self.model.parse(text)
        return (hp.accepted and hp.intent != OTHER and hp.confidence >= at_least
                and not other_language(text))

    def parse(self, text: str, unsure: frozenset[str] = frozenset()) -> Intent | None:
        """The home intent of ``text``; ``unsure``: words the recognizer was unsure of (a
        list item or search resting on one is asked back)."""
        other = EnglishOnly().parse(text)
        if other is not None:
            return other
        hp = self.model.parse(text)
        if hp.accepted and hp.intent == "HassStartTimer" and "conversation_command" in hp.slots:
            # "in 20 minutes turn off the fan": a timer that says the command when it rings
            name, slots = bridge(hp.intent, hp.slots)
            return Intent(name, hp.confidence,
                          {**slots, "command": hp.slots["conversation_command"]})
        if hp.intent == OTHER or hp.intent in BUILTIN:
            return None
        doubt = doubted(hp, unsure) if hp.accepted else []
        if doubt:
            heard = " ".join(doubt)
            question = f"I understood: {describe(hp.intent, hp.slots)}, but I am not sure I " \
                       f"heard \"{heard}\" right. Please say it again."
            return Intent(CLARIFY, hp.confidence, {"question": question, "intent": hp.intent,
                                                   "unsure": doubt})
        if hp.accepted:
            return Intent(hp.intent, hp.confidence, hp.slots)
        if hp.missing and hp.confidence >= self.model.threshold(hp.intent):
            lacking = " or ".join(_SAID.get(m, m.replace("_", " ")) for m in hp.missing)
            question = f"I understood: {describe(hp.intent, hp.slots)}, but not the " \
                       f"{lacking}. Please say it again."
            return Intent(CLARIFY, hp.confidence, {"question": question, "intent": hp.intent,
                                                   "missing": list(hp.missing)})
        if hp.confidence < ASK_SHARE * self.model.threshold(hp.intent):
            return None
        question = f"Did you mean: {describe(hp.intent, hp.slots)}? Please say it again."
        log.debug("home intent %s below its threshold (%.2f): asked back", hp.intent,
                  hp.confidence)
        return Intent(CLARIFY, hp.confidence, {"question": question, "intent": hp.intent,
                                               "read_only": hp.intent in _READ_ONLY})


def attach_home(understander: Any, cfg: NluConfig, home: HomeBackend | None = None,
                refresher: HomeRefresher | None = None) -> bool:
    """Give ``understander`` the home understanding built by ``edge-runtime models build``;
    False (logged with the fix, never raised) when it is missing or unusable: the daemon
    then serves the built-in intents."""
    path = model_dir(cfg)
    if not (path / HOME_FILE).is_file():
        log.warning("home understanding not built in %s: serving the built-in intents "
                    "(run `edge-runtime models build`)", path)
        understander.attach_home(EnglishOnly())
        return False
    try:
        model = HomeModel(path, home_lists(cfg, home))
        model.repair = cfg.home_repair
    except Exception as exc:              # unusable files
        log.warning("home model in %s unusable (%s): serving the built-in intents "
                    "(run `edge-runtime models build --force`)", path, exc)
        understander.attach_home(EnglishOnly())
        return False
    understanding = HomeUnderstanding(model)
    understander.attach_home(understanding)
    log.info("home understanding ready: %d intents from %s", len(model.intents), path)
    if refresher is not None:             # Home Assistant's lists, read again
        refresher.on_change(lambda fresh: understanding.set_lists(home_lists(cfg, fresh)))
    return True

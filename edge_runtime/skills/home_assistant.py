"""The ``home`` skill against a real Home Assistant (``home.backend = "home_assistant"``).

The same skill as ``home.HomeSkill`` (name ``home``, the same Home Assistant intents and
answers), carried out through ``ha_client.HomeAssistantClient``: each request resolves its
``name`` / ``area`` / ``domain`` slots against the entities read from Home Assistant
(``ha_client.HAHome``), checks a named entity still exists (404: "I can't find the kitchen
lamp in Home Assistant any more"), then calls one service, once. An area name that matches
two areas, or a request that fits several entities, is asked back. Timers use the daemon's
own timers (``home_timers``); there is no weather source. The lists are kept fresh by
``ha_refresh.HomeRefresher`` (retried after a start-time failure, read again periodically
and soon after a request names something Home Assistant or the lists lack).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..config import HomeConfig

from ..nlu.text import normalize_text
from ..types import Intent
from .base import SkillInputError
from .ha_client import EntityGone, Entity, HAHome, HomeAssistantClient, HomeAssistantError
from .home import HandlerTable, _num, _say, common_handlers
from .home_timers import HomeTimers
from .speech import join_words

if TYPE_CHECKING:
    from .ha_refresh import HomeRefresher

log = logging.getLogger(__name__)

ON_SERVICE = {"cover": "open_cover", "lock": "lock"}
OFF_SERVICE = {"cover": "close_cover", "lock": "unlock"}
ON_STATE = {"cover": "open", "lock": "locked"}
OFF_STATE = {"cover": "closed", "lock": "unlocked"}
COLORS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255), "white": (255, 255, 255),
          "yellow": (255, 255, 0), "orange": (255, 165, 0), "purple": (128, 0, 128),
          "pink": (255, 192, 203), "cyan": (0, 255, 255), "warm white": (255, 214, 170)}
MEDIA = {"HassMediaPause": ("media_pause", "Paused."), "HassMediaUnpause": ("media_play",
         "Resumed."), "HassMediaNext": ("media_next_track", "Skipped to the next track."),
         "HassMediaPrevious": ("media_previous_track", "Back to the previous track.")}


def read_home(cfg: HomeConfig) -> tuple[HomeAssistantClient, HAHome]:
    """The client for ``home`` and the home read from it; an empty home (logged with the
    reason, never raised) when Home Assistant cannot be read now: the skill reads it again
    on the next request and the daemon keeps serving."""
    client = HomeAssistantClient(cfg.url, cfg.token, cfg.timeout_s)
    try:
        home = HAHome.read(client)
    except HomeAssistantError as exc:
        log.warning("Home Assistant at %s not read at start: %s", cfg.url, exc.message)
        return client, HAHome()
    log.info("Home Assistant at %s: %d areas, %d entities", cfg.url, len(home.areas),
             len(home.by_name))
    return client, home


class HomeAssistantSkill(HandlerTable):
    name = "home"
    _where = "with Home Assistant"

    def __init__(self, client: HomeAssistantClient, home: HAHome, timers: HomeTimers,
                 refresher: HomeRefresher | None = None) -> None:
        self.client, self.home, self.timers = client, home, timers
        self.refresher = refresher
        self._handlers = {
            **self.device_handlers(),
            **{i: self._media_handler(i) for i in MEDIA},
            "HassSetVolume": self._volume,
            "HassShoppingListAddItem": lambda s: self._list(s, "add_item", True),
            "HassShoppingListCompleteItem": lambda s: self._list(s, "complete_item", True),
            "HassListAddItem": lambda s: self._list(s, "add_item", False),
            "HassListCompleteItem": lambda s: self._list(s, "update_item", False),
            "HassListRemoveItem": lambda s: self._list(s, "remove_item", False),
            **common_handlers(self.timers),
        }

    def handle(self, intent: Intent, text: str) -> str:
        handler = self.handler(intent)
        if not self.home.by_name:                 # not read yet (down at start): read it now
            fresh = HAHome.read(self.client)      # raises the reason it cannot be read
            if self.refresher is not None:        # the understanding and ASR hear of it
                self.refresher.publish(fresh)
            else:
                self.home.areas, self.home.by_name = fresh.areas, fresh.by_name
        try:
            return handler(dict(intent.slots))
        except EntityGone:
            self._stale()
            raise

    def _stale(self) -> None:
        """The lists named something Home Assistant lacks: read them again soon."""
        if self.refresher is not None:
            self.refresher.request()

    # -- resolving slots to entities ---------------------------------------------------------
    def area(self, spoken: Any) -> str:
        """The Home Assistant area ``spoken`` names; two or more matches are asked back."""
        want = normalize_text(str(spoken))
        if want in self.home.areas:
            return want
        matches = [a for a in self.home.areas if f" {want} " in f" {a} "]
        if len(matches) == 1:
            return matches[0]
        if matches:
            options = [f"the {m}" for m in sorted(matches)]
            raise SkillInputError(f"Which {want}: {join_words(options, 'or')}?")
        self._stale()
        raise SkillInputError(f"I don't know a {want} area in Home Assistant.")

    def _named(self, name: str) -> Entity | None:
        spoken = normalize_text(name)
        for form in (spoken, spoken.rstrip("s"), spoken + "s"):
            if form in self.home.by_name:
                return self.home.by_name[form]
        return None

    def resolve(self, slots: dict[str, Any], domains: tuple[str, ...],
                one: bool = False) -> list[Entity]:
        """The entities a request means: its ``name``, else those of ``domains`` (or the
        ``domain`` slot) in its ``area``, else every one of the ``domain`` slot's ("turn off
        all the lights": the understanding accepts a domain alone only when the request
        said all, every or everywhere), else the only one of those domains."""
        name = str(slots.get("name") or "")
        if name:
            entity = self._named(name)
            if entity is None:
                self._stale()
                raise SkillInputError(f"I don't know a {normalize_text(name)} in Home Assistant.")
            return [entity]
        if slots.get("domain"):
            domains = (str(slots["domain"]),)
        found = [e for e in self.home.by_name.values() if e.domain in domains]
        what = domains[0].replace("_", " ")
        if slots.get("area"):
            area = self.area(slots["area"])
            found = [e for e in found if e.area == area]
            if not found:
                raise SkillInputError(f"There is no {what} in the {area} in Home Assistant.")
        if not found:
            raise SkillInputError(f"There is no {what} in Home Assistant.")
        everywhere = bool(slots.get("domain")) and not slots.get("area")
        if len(found) > 1 and (one or not (slots.get("area") or everywhere)):
            names = [f"the {e.name}" for e in sorted(found, key=lambda e: e.name)[:5]]
            raise SkillInputError(f"Which one: {join_words(names, 'or')}?")
        return found

    def _call(self, entities: list[Entity], service: str, **data: Any) -> None:
        """One service call for ``entities`` (of one domain)."""
        ids = [e.entity_id for e in entities]
        self.client.call(entities[0].domain, service,
                         {"entity_id": ids[0] if len(ids) == 1 else ids, **data})

    @staticmethod
    def _said(entities: list[Entity]) -> str:
        if len(entities) == 1:
            return f"the {entities[0].name}"
        what = f"{len(entities)} {entities[0].domain.replace('_', ' ')}s"
        areas = {e.area for e in entities}
        return f"{what} in the {entities[0].area}" if len(areas) == 1 and entities[0].area \
            else f"all {what}"

    # -- on / off / state / lights / covers --------------------------------------------------
    def _switch(self, slots: dict[str, Any], on: bool) -> str:
        entities = self.resolve(slots, ("light",))
        domain = entities[0].domain
        entities = [e for e in entities if e.domain == domain]
        want = (ON_STATE if on else OFF_STATE).get(domain, "on" if on else "off")
        if len(entities) == 1:
            e = entities[0]
            if self.client.state(e.entity_id, e.name).get("state") == want:
                return f"The {e.name} is already {want}."
        service = (ON_SERVICE if on else OFF_SERVICE).get(domain, "turn_on" if on else "turn_off")
        self._call(entities, service)
        verb = {"open_cover": "Opened", "close_cover": "Closed", "lock": "Locked",
                "unlock": "Unlocked"}.get(service, f"Turned {'on' if on else 'off'}")
        return f"{verb} {self._said(entities)}."

    def _state(self, slots: dict[str, Any]) -> str:
        e = self.resolve(slots, ("light", "switch", "fan", "cover", "lock"), one=True)[0]
        state = self.client.state(e.entity_id, e.name)
        value = str(state.get("state"))
        if e.domain == "climate":
            target = state.get("attributes", {}).get("temperature")
            return f"The {e.name} is {value}, set to {target} degrees."
        return f"The {e.name} is {value.replace('_', ' ')}."

    def _light(self, slots: dict[str, Any]) -> str:
        entities = self.resolve({**slots, "domain": "light"}, ("light",))
        data: dict[str, Any] = {}
        said: list[str] = []
        level = _num(slots.get("brightness"))
        if level is not None:
            if not 0 <= level <= 100:
                raise SkillInputError("What brightness should I set? Say a percentage.")
            data["brightness_pct"] = int(level)
            said.append(f"{int(level)} percent")
        if slots.get("color"):
            color = normalize_text(str(slots["color"]))
            if color not in COLORS:
                raise SkillInputError(f"I don't know the colour {color}. Try red, blue, green "
                                      "or white.")
            data["rgb_color"] = list(COLORS[color])
            said.append(color)
        kelvin = _num(slots.get("temperature"))
        if kelvin is not None:
            data["color_temp_kelvin"] = int(kelvin)
            said.append(f"{int(kelvin)} kelvin")
        if not data:
            raise SkillInputError("How should I set the light? Say a brightness or a colour.")
        if len(entities) == 1:
            self.client.state(entities[0].entity_id, entities[0].name)
        self._call(entities, "turn_on", **data)
        return f"Set {self._said(entities)} to {join_words(said)}."

    def _position(self, slots: dict[str, Any]) -> str:
        entities = self.resolve(slots, ("cover",), one=True)
        level = _num(slots.get("position"))
        if level is None or not 0 <= level <= 100:
            raise SkillInputError(f"How far should I open the {entities[0].name}? "
                                  "Say a percentage.")
        e = entities[0]
        self.client.state(e.entity_id, e.name)
        self._call(entities, "set_cover_position", position=int(level))
        return f"Set the {e.name} to {int(level)} percent open."

    # -- climate, media, lists ---------------------------------------------------------------
    def _get_temperature(self, slots: dict[str, Any]) -> str:
        e = self.resolve({k: v for k, v in slots.items() if k != "domain"}, ("climate",),
                         one=True)[0]
        attrs = self.client.state(e.entity_id, e.name).get("attributes") or {}
        target = _num(attrs.get("temperature"))
        if target is None:
            return f"The {e.name} has no target temperature set."
        return f"The {e.name} is set to {_say(target)} degrees."

    def _set_temperature(self, slots: dict[str, Any]) -> str:
        value = _num(slots.get("temperature"))
        if value is None:
            raise SkillInputError("What temperature should I set? Say a number of degrees.")
        e = self.resolve({k: v for k, v in slots.items() if k != "domain"}, ("climate",),
                         one=True)[0]
        self.client.state(e.entity_id, e.name)
        self._call([e], "set_temperature", temperature=value)
        return f"Set the {e.name} to {_say(value)} degrees."

    def _player(self, slots: dict[str, Any]) -> Entity:
        return self.resolve({**slots, "domain": "media_player"}, ("media_player",), one=True)[0]

    def _media_handler(self, intent: str) -> Callable[[dict[str, Any]], str]:
        return lambda slots: self._media(slots, intent)

    def _media(self, slots: dict[str, Any], intent: str) -> str:
        e = self._player(slots)
        service, answer = MEDIA[intent]
        self.client.state(e.entity_id, e.name)
        self._call([e], service)
        return answer

    def _volume(self, slots: dict[str, Any]) -> str:
        level = _num(slots.get("volume_level"))
        if level is None or not 0 <= level <= 100:
            raise SkillInputError("What volume should I set? Say a percentage from 0 to 100.")
        e = self._player(slots)
        self.client.state(e.entity_id, e.name)
        self._call([e], "volume_set", volume_level=round(level / 100, 2))
        return f"Volume set to {int(level)} percent."

    def _list(self, slots: dict[str, Any], service: str, shopping: bool) -> str:
        item = str(slots.get("item") or "").strip()
        if not item:
            raise SkillInputError("Which item? Say it with the list, e.g. add milk to the "
                                  "shopping list.")
        todo = self.home.by_name.get("shopping list")
        if shopping and (todo is None or todo.domain != "todo"):   # the legacy service
            self.client.call("shopping_list", service, {"name": item})
            where = "the shopping list"
        else:
            if shopping:                                      # its to-do entity
                slots = {**slots, "name": "shopping list"}
                service = {"complete_item": "update_item"}.get(service, service)
            e = self.resolve(slots, ("todo",), one=True)[0]
            self.client.state(e.entity_id, e.name)
            data: dict[str, Any] = {"item": item}
            if service == "update_item":
                data["status"] = "completed"
            self._call([e], service, **data)
            where = f"the {e.name}"
        verb = {"add_item": "Added", "remove_item": "Removed"}.get(service, "Checked off")
        prep = {"Added": "to", "Removed": "from"}.get(verb, "on")
        return f"{verb} {item} {prep} {where}."

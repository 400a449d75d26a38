"""A Home Assistant REST client (documented API, stdlib ``urllib``) and the home it reads.

``HomeAssistantClient`` speaks ``GET /api/`` (auth check), ``GET /api/states``,
``GET /api/states/<entity_id>``, ``POST /api/services/<domain>/<service>`` and
``POST /api/template`` (areas via ``areas()``/``area_name``/``area_entities``), with the
long-lived token as a bearer header (never logged); entity aliases come from the WebSocket
API (``ha_ws``), when it answers. Every failure is a ``HomeAssistantError``
whose message is a complete spoken sentence; nothing is retried, so a service call that
timed out is never sent twice. ``HAHome.read(client)`` is the home as Home Assistant names
it: areas and entities (friendly name -> entity id, domain, area), for the understanding's
lists (``entities()``, the same shape as ``home_state.SimHome.entities()``).
"""
from __future__ import annotations

import http.client
import json
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from ..nlu.text import normalize_text
from .base import SkillInputError

log = logging.getLogger(__name__)

UNREACHABLE = "I can't reach Home Assistant right now."
TOKEN_REFUSED = "Home Assistant refused the token: check home.token."
BAD_REPLY = "Home Assistant sent an answer I can't read, so I did nothing more."

# one template: [[area name, [entity ids]], ...] as JSON
AREAS_TEMPLATE = ("{% set ns = namespace(out=[]) %}{% for a in areas() %}"
                  "{% set ns.out = ns.out + [[area_name(a), area_entities(a)]] %}"
                  "{% endfor %}{{ ns.out | tojson }}")


class HomeAssistantError(SkillInputError):
    """Home Assistant could not be used; ``message`` is spoken as is."""

    stage = "home_assistant"


class EntityGone(HomeAssistantError):
    """An entity read into the lists no longer exists in Home Assistant (404)."""


class HomeAssistantClient:
    def __init__(self, url: str, token: str, timeout_s: float = 5.0) -> None:
        self.url, self._token, self.timeout_s = url.rstrip("/"), token, timeout_s
        # straight to Home Assistant: no proxy from the environment sees the token
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def __repr__(self) -> str:                      # the token never appears
        return f"HomeAssistantClient({self.url!r})"

    def _request(self, method: str, path: str, body: Any = None, *, name: str = "") -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self._token}", "Content-Type": "application/json"})
        try:
            with self._opener.open(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 401:
                raise HomeAssistantError(TOKEN_REFUSED) from None
            if exc.code == 404 and name:
                raise EntityGone(f"I can't find the {name} in Home Assistant any more.") \
                    from None
            log.warning("Home Assistant %s %s: HTTP %d", method, path.split("/")[2], exc.code)
            raise HomeAssistantError(f"Home Assistant answered with error {exc.code}, "
                                     "so I did nothing more.") from None
        except http.client.HTTPException:           # a broken reply (not HTTP, cut short)
            log.warning("Home Assistant %s %s: broken HTTP reply", method, path)
            raise HomeAssistantError(BAD_REPLY) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            log.warning("Home Assistant at %s unreachable: %s", self.url,
                        getattr(exc, "reason", exc))
            raise HomeAssistantError(UNREACHABLE) from None
        if path == "/api/template":
            return raw.decode("utf-8", "replace")
        try:
            return json.loads(raw)
        except ValueError:
            log.warning("Home Assistant %s %s: not JSON", method, path)
            raise HomeAssistantError(BAD_REPLY) from None

    def check(self) -> None:
        """``GET /api/``: raises unless Home Assistant answers and accepts the token."""
        reply = self._request("GET", "/api/")
        if not isinstance(reply, dict) or "message" not in reply:
            raise HomeAssistantError(BAD_REPLY)

    def states(self) -> list[dict[str, Any]]:
        reply = self._request("GET", "/api/states")
        if not isinstance(reply, list) or not all(
                isinstance(s, dict) and isinstance(s.get("entity_id"), str) for s in reply):
            raise HomeAssistantError(BAD_REPLY)
        return reply

    def state(self, entity_id: str, name: str) -> dict[str, Any]:
        """One entity's state; ``EntityGone`` (naming ``name``) when it no longer exists."""
        reply = self._request("GET", f"/api/states/{quote(entity_id)}", name=name)
        if not isinstance(reply, dict) or "state" not in reply:
            raise HomeAssistantError(BAD_REPLY)
        return reply

    def call(self, domain: str, service: str, data: dict[str, Any]) -> Any:
        """``POST /api/services/<domain>/<service>``, sent once (no retry)."""
        log.info("Home Assistant service %s.%s", domain, service)
        return self._request("POST", f"/api/services/{quote(domain)}/{quote(service)}", data)

    def aliases(self, entity_ids: list[str]) -> dict[str, list[str]]:
        """Entity id -> aliases, from the WebSocket API's entity registry; {} (logged) when
        it cannot be read: the names from ``states`` are used alone."""
        from .ha_ws import WebSocketError, entity_aliases
        try:
            return entity_aliases(self.url, self._token, entity_ids, self.timeout_s)
        except WebSocketError as exc:
            log.warning("Home Assistant entity aliases not read (%s): names only", exc)
            return {}

    def areas(self) -> list[tuple[str, list[str]]]:
        """(area name, entity ids) per area through the template API; [] when the template
        cannot be rendered (an old Home Assistant): entities are then known without areas."""
        try:
            text = self._request("POST", "/api/template", {"template": AREAS_TEMPLATE})
            rows = json.loads(text)
            return [(str(a), [str(e) for e in ids]) for a, ids in rows]
        except HomeAssistantError as exc:
            if exc.message in (UNREACHABLE, TOKEN_REFUSED):
                raise
        except (ValueError, TypeError):
            pass
        log.warning("Home Assistant areas unreadable: entities are used without areas")
        return []


@dataclass(frozen=True)
class Entity:
    entity_id: str
    name: str                  # spoken form of the friendly name ("kitchen lamp")
    area: str = ""             # spoken form of its area, "" when none

    @property
    def domain(self) -> str:
        return self.entity_id.split(".", 1)[0]


@dataclass
class HAHome:
    """The home as Home Assistant names it, read once (``read``) for the understanding."""

    areas: tuple[str, ...] = ()
    by_name: dict[str, Entity] = field(default_factory=dict)

    @classmethod
    def read(cls, client: HomeAssistantClient, aliases: bool = True) -> HAHome:
        """Areas and entities over REST; with ``aliases``, each entity's aliases too
        (WebSocket API), as more names for it."""
        client.check()
        area_of: dict[str, str] = {}
        areas: list[str] = []
        for area, ids in client.areas():
            spoken = normalize_text(area)
            if spoken:
                areas.append(spoken)
                area_of.update({i: spoken for i in ids})
        by_name: dict[str, Entity] = {}
        for s in client.states():
            eid = s["entity_id"]
            attrs = s.get("attributes")
            attrs = attrs if isinstance(attrs, dict) else {}
            name = normalize_text(str(attrs.get("friendly_name") or
                                      eid.split(".", 1)[-1].replace("_", " ")))
            if name and name not in by_name:
                by_name[name] = Entity(eid, name, area_of.get(eid, ""))
        if aliases:                   # another name for the same entity ("the big light")
            entity_of = {e.entity_id: e for e in by_name.values()}
            for eid, names in client.aliases(sorted(entity_of)).items():
                for alias in map(normalize_text, names):
                    if alias and alias not in by_name and eid in entity_of:
                        by_name[alias] = entity_of[eid]
        return cls(tuple(areas), by_name)

    def entities(self) -> dict[str, str]:
        """Entity name -> domain, for the understanding's lists."""
        return {name: e.domain for name, e in self.by_name.items()}

"""A server speaking Home Assistant's documented REST API, for tests (Home Assistant Core
itself needs a newer Python than this box has).

Bearer-token check (401 otherwise), ``GET /api/``, ``GET /api/states``, ``GET /api/states/
<entity_id>`` (404 for an unknown one), ``POST /api/services/<domain>/<service>`` (recorded
in ``calls``; updates the state as Home Assistant would for the services the client uses)
and ``POST /api/template`` (rendered with Jinja2 and the ``areas()``, ``area_name`` and
``area_entities`` functions). ``mode`` makes it misbehave: ``"slow"`` (answers after
``delay_s``), ``"garbage"`` (not JSON). Runs on loopback in a thread of its own.
"""
from __future__ import annotations

import asyncio
import copy
import json
import threading
from typing import Any

import jinja2
from aiohttp import web

TOKEN = "test-long-lived-token"

AREAS = {"kitchen": "Kitchen", "living_room": "Living Room", "master_bedroom": "Master Bedroom",
         "guest_bedroom": "Guest Bedroom"}
STATES: list[dict[str, Any]] = [
    {"entity_id": "light.kitchen_lamp", "state": "off", "area": "kitchen",
     "attributes": {"friendly_name": "Kitchen Lamp"}},
    {"entity_id": "light.kitchen_ceiling", "state": "off", "area": "kitchen",
     "attributes": {"friendly_name": "Kitchen Ceiling"}},
    {"entity_id": "light.reading_light", "state": "on", "area": "living_room",
     "attributes": {"friendly_name": "Reading Light", "brightness": 255}},
    {"entity_id": "switch.coffee_maker", "state": "off", "area": "kitchen",
     "attributes": {"friendly_name": "Coffee Maker"}},
    {"entity_id": "fan.ceiling_fan", "state": "on", "area": "master_bedroom",
     "attributes": {"friendly_name": "Ceiling Fan"}},
    {"entity_id": "light.master_bedroom_lamp", "state": "off", "area": "master_bedroom",
     "attributes": {"friendly_name": "Bedside Lamp"}},
    {"entity_id": "light.guest_bedroom_lamp", "state": "off", "area": "guest_bedroom",
     "attributes": {"friendly_name": "Guest Lamp"}},
    {"entity_id": "cover.garage_door", "state": "closed", "area": "",
     "attributes": {"friendly_name": "Garage Door", "current_position": 0}},
    {"entity_id": "climate.thermostat", "state": "heat", "area": "living_room",
     "attributes": {"friendly_name": "Thermostat", "temperature": 20, "current_temperature": 19}},
    {"entity_id": "media_player.living_room_speaker", "state": "paused", "area": "living_room",
     "attributes": {"friendly_name": "Living Room Speaker", "volume_level": 0.3}},
    {"entity_id": "todo.chores", "state": "0", "area": "",
     "attributes": {"friendly_name": "Chores"}},
]
_AFTER = {("light", "turn_on"): "on", ("light", "turn_off"): "off", ("switch", "turn_on"): "on",
          ("switch", "turn_off"): "off", ("fan", "turn_on"): "on", ("fan", "turn_off"): "off",
          ("cover", "open_cover"): "open", ("cover", "close_cover"): "closed",
          ("media_player", "media_pause"): "paused", ("media_player", "media_play"): "playing",
          ("media_player", "media_next_track"): "playing",
          ("media_player", "media_previous_track"): "playing"}


class FakeHomeAssistant:
    def __init__(self) -> None:
        self.states = {s["entity_id"]: copy.deepcopy(s) for s in STATES}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.shopping: list[str] = []
        self.mode = ""
        self.aliases: dict[str, list[str]] = {}      # entity id -> aliases (WebSocket API)
        self.websocket = True                        # False: an old one without get_entries
        self.delay_s = 2.0
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeHomeAssistant:
        self._thread.start()
        port = asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(10)
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def _serve(self) -> int:
        app = web.Application(middlewares=[self._auth])
        app.router.add_get("/api/", self._api)
        app.router.add_get("/api/states", self._all)
        app.router.add_get("/api/states/{entity_id}", self._one)
        app.router.add_post("/api/services/{domain}/{service}", self._service)
        app.router.add_post("/api/template", self._template)
        app.router.add_get("/api/websocket", self._ws)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        """Stop serving (connections are then refused); a second call does nothing."""
        if self._runner is None:
            return
        runner, self._runner = self._runner, None
        asyncio.run_coroutine_threadsafe(runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    # -- handlers ----------------------------------------------------------------------------
    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path == "/api/websocket":        # authenticated inside the socket
            return await handler(request)
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.Response(status=401, text="401: Unauthorized")
        response = await handler(request)      # the action is done, the answer is late
        if self.mode == "slow":
            await asyncio.sleep(self.delay_s)
        if self.mode == "garbage":
            return web.Response(text="<html>oops</html>", content_type="application/json")
        return response

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        """The documented WebSocket exchange: auth, then config/entity_registry/get_entries."""
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"type": "auth_required", "ha_version": "2024.3.3"})
        auth = await ws.receive_json()
        if auth.get("access_token") != TOKEN:
            await ws.send_json({"type": "auth_invalid", "message": "Invalid access token"})
            await ws.close()
            return ws
        await ws.send_json({"type": "auth_ok", "ha_version": "2024.3.3"})
        async for msg in ws:
            req = json.loads(msg.data)
            if req.get("type") != "config/entity_registry/get_entries" or not self.websocket:
                await ws.send_json({"id": req.get("id"), "type": "result", "success": False,
                                    "error": {"code": "unknown_command",
                                              "message": "Unknown command."}})
                continue
            result = {eid: ({"entity_id": eid, "aliases": self.aliases.get(eid, []),
                             "name": None} if eid in self.states else None)
                      for eid in req.get("entity_ids", [])}
            await ws.send_json({"id": req["id"], "type": "result", "success": True,
                                "result": result})
        return ws

    def _public(self, s: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in s.items() if k != "area"}

    async def _api(self, request: web.Request) -> web.Response:
        return web.json_response({"message": "API running."})

    async def _all(self, request: web.Request) -> web.Response:
        return web.json_response([self._public(s) for s in self.states.values()])

    async def _one(self, request: web.Request) -> web.Response:
        s = self.states.get(request.match_info["entity_id"])
        if s is None:
            return web.json_response({"message": "Entity not found."}, status=404)
        return web.json_response(self._public(s))

    async def _service(self, request: web.Request) -> web.Response:
        domain, service = request.match_info["domain"], request.match_info["service"]
        data = await request.json()
        self.calls.append((domain, service, data))
        ids = data.get("entity_id", [])
        ids = [ids] if isinstance(ids, str) else ids
        changed = []
        for eid in ids:
            s = self.states.get(eid)
            if s is None:
                continue
            if (domain, service) in _AFTER:
                s["state"] = _AFTER[(domain, service)]
            attrs = s["attributes"]
            for key in ("brightness_pct", "rgb_color", "color_temp_kelvin", "temperature",
                        "volume_level"):
                if key in data:
                    attrs[key] = data[key]
            if service == "set_cover_position":
                attrs["current_position"] = data["position"]
                s["state"] = "closed" if data["position"] == 0 else "open"
            changed.append(self._public(s))
        if domain == "shopping_list" and service == "add_item":
            self.shopping.append(data["name"])
        return web.json_response(changed)

    async def _template(self, request: web.Request) -> web.Response:
        body = await request.json()
        env = jinja2.Environment(extensions=["jinja2.ext.do"])
        env.globals.update(
            areas=lambda: list(AREAS), area_name=lambda a: AREAS.get(a),
            area_entities=lambda a: [e for e, s in self.states.items() if s["area"] == a],
            namespace=jinja2.utils.Namespace)
        try:
            text = env.from_string(body["template"]).render()
        except jinja2.TemplateError as exc:
            return web.json_response({"message": f"Error rendering template: {exc}"},
                                     status=400)
        return web.Response(text=text, content_type="text/plain")

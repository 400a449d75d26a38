"""``edge-runtime chat`` attached to a running daemon: no second copy of the models.

``find_daemon`` asks ``/healthz`` at the configured address. When a daemon answers, the
microphone is streamed to its ``/v1/stream`` WebSocket (s16le 16 kHz frames) and its
events and speech come back (``voice/api.py`` has the protocol); typed lines (``chat
--text``) go to ``POST /v1/ask`` with one conversation id. The wake word, when set, is
detected here (the tiny microWakeWord model), in front of the remote session, with the
same gate the in-process loop uses.
"""
from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from ..audio.format import float_to_int16
from ..errors import EdgeError

log = logging.getLogger(__name__)

_PROBE_TIMEOUT_S = 1.5


def daemon_url(cfg) -> str:
    host = cfg.server.host
    if host in ("0.0.0.0", "", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{cfg.server.port}"


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


async def find_daemon(cfg, url: str | None = None) -> dict[str, Any] | None:
    """The daemon's /healthz object (plus ``url``) when one answers at ``url`` (default:
    the configured server address), else None."""
    import aiohttp
    url = url or daemon_url(cfg)
    try:
        timeout = aiohttp.ClientTimeout(total=_PROBE_TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout) as http:
            async with http.get(url + "/healthz") as r:
                if r.status != 200:
                    return None
                health = await r.json()
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError):
        return None
    if not isinstance(health, dict):
        return None
    health["url"] = url
    return health


class RemoteSession:
    """What a ``WakeGate`` (or the pump) feeds: audio goes to the daemon's session."""

    def __init__(self, ws, player) -> None:
        self.ws, self.player = ws, player

    async def feed(self, chunk: np.ndarray) -> None:
        if not self.ws.closed:
            await self.ws.send_bytes(float_to_int16(chunk).astype("<i2").tobytes())

    async def finish(self) -> None:
        if not self.ws.closed:
            await self.ws.send_json({"type": "end"})

    def interrupt(self) -> None:
        self.player.stop()


async def _receive(ws, player, emit: Callable[[dict[str, Any]], None]) -> None:
    import aiohttp
    rate = player.sample_rate
    async for msg in ws:
        if msg.type == aiohttp.WSMsgType.BINARY:
            player.play(np.frombuffer(msg.data, "<i2").astype(np.int16), rate)
        elif msg.type == aiohttp.WSMsgType.TEXT:
            event = json.loads(msg.data)
            kind = event.get("type")
            if kind == "audio_start":
                rate = int(event.get("sample_rate", rate))
            elif kind == "audio_stop":
                player.stop()
            elif kind == "end":
                return
            else:
                emit(event)
        else:
            return


async def stream_mic(url: str, token: str, source, player, *, emit, gate_factory=None) -> int:
    """Stream ``source`` to ``url``'s /v1/stream until the source ends; play the answers
    on ``player``; ``emit`` gets every event. ``gate_factory(player, emit)`` -> a wake
    gate or None."""
    import aiohttp

    from .pump import feed_source
    async with aiohttp.ClientSession(headers=_headers(token)) as http:
        try:
            ws = await http.ws_connect(url + "/v1/stream", heartbeat=30.0)
        except aiohttp.WSServerHandshakeError as exc:
            raise EdgeError(f"the daemon at {url} refused the audio stream (HTTP "
                            f"{exc.status})", stage="api", code="stream_refused",
                            hint="set server.token to the daemon's token" if exc.status == 401
                            else "see the daemon's /healthz and log") from None
        async with ws:
            gate = gate_factory(player, emit) if gate_factory else None
            session = RemoteSession(ws, player)
            receiver = asyncio.create_task(_receive(ws, player, gate.emit if gate else emit))
            try:
                await feed_source(gate.attach(session) if gate else session, source,
                                  finish=False)
                await session.finish()           # the daemon says "end" after its answer
                await asyncio.wait_for(receiver, timeout=120.0)
                await asyncio.sleep(getattr(player, "wait_s", lambda: 0.0)())
            finally:
                receiver.cancel()
                if gate is not None:
                    gate.close()
    return 0


async def ask_text(url: str, token: str, text: str, session: str) -> dict[str, Any]:
    """One typed line through the daemon's /v1/ask (same conversation id each time)."""
    import aiohttp
    async with aiohttp.ClientSession(headers=_headers(token)) as http:
        async with http.post(url + "/v1/ask", json={"text": text, "session": session}) as r:
            body = await r.json()
    if "error" in body:
        err = body["error"]
        raise EdgeError(err.get("message", "daemon error"), hint=err.get("hint"),
                        code=err.get("code", "daemon"), stage=err.get("stage", "api"))
    return body


def new_session_id() -> str:
    return f"chat-{uuid.uuid4().hex[:12]}"

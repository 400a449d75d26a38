"""The Wyoming server beside the daemon's HTTP API: same process, same models."""
from __future__ import annotations

import functools
import ipaddress
import logging
from typing import Any

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import ConfigError
from .handler import WyomingContext, WyomingHandler

log = logging.getLogger(__name__)


class WyomingServer:
    """``start`` binds ``uri`` (tcp://HOST:PORT or unix://PATH) and serves until ``stop``.

    ``voice`` is the daemon's VoiceService (its loaded stack is shared); with none, a
    VoiceService of this runtime is started here (the voice models load once)."""

    def __init__(self, runtime, uri: str, voice=None, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.runtime = runtime
        self.uri = uri
        self.voice = voice
        self._owns_voice = False
        self.ctx = WyomingContext(runtime, voice, clock)
        self._server: Any = None

    async def start(self) -> None:
        from wyoming.server import AsyncServer
        if self.voice is None:
            from ..voice.service import VoiceService
            self.voice = self.ctx.voice = VoiceService(self.runtime)
            self._owns_voice = True
            await self.voice.start()
        server = AsyncServer.from_uri(self.uri)
        try:
            await server.start(functools.partial(WyomingHandler, ctx=self.ctx))
        except OSError as exc:
            raise ConfigError(f"cannot serve Wyoming on {self.uri}: {exc.strerror or exc}",
                              hint="choose a free port in wyoming.uri (or --wyoming)") from None
        self._server = server
        host = getattr(self._server, "host", None)
        if host is not None and not _is_loopback(host):
            log.warning("Wyoming server on %s is reachable from the network and has no "
                        "authentication: use it on a trusted LAN only", self.uri)
        log.info("Wyoming server on %s (asr: %s, tts: %s)", self.uri,
                 "on" if self.ctx.stack is not None else "off",
                 "on" if self.ctx.stack is not None and self.ctx.stack.tts else "off")

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop()
            self._server = None
        if self._owns_voice and self.voice is not None:
            self.voice.close()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def start_wyoming(runtime, voice=None) -> WyomingServer | None:
    """The server of config ``wyoming.uri`` started, or None when it is off."""
    uri = runtime.cfg.wyoming.uri
    if not uri:
        return None
    server = WyomingServer(runtime, uri, voice)
    await server.start()
    return server

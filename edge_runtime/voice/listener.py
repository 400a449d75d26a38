"""The daemon's always-on voice loop (``voice.microphone = true``).

Microphone -> wake-word gate (``voice.wake_word``) -> ``VoiceSession`` (VAD, streaming
ASR, the pipeline, TTS to the speaker, barge-in) -> speaker: the loop ``edge-runtime
chat`` runs, but inside ``serve`` and on the daemon's own ``VoiceService``, so the
models are loaded once for the APIs and the room alike.

A microphone that cannot be opened (no sound card: PortAudio raises) does not stop the
daemon: one WARNING names the fix, ``state`` says ``unavailable`` (``/healthz`` reports
it) and the APIs keep serving. No speaker is not fatal either: answers are then played
into a virtual speaker (heard by nobody, but barge-in and the echo guard still work).
Transcripts are logged at DEBUG only.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ..errors import EdgeError
from .pump import feed_source

log = logging.getLogger(__name__)

_STOP_WAIT_S = 5.0


def wake_gate(voice_cfg, player, emit: Callable[[dict[str, Any]], None]):
    """The wake-word gate of ``voice.wake_word`` (None when it is "none"): the one gate
    ``chat`` and the daemon's loop both put in front of their session."""
    from .wake import WakeGate, load_wake
    detector = load_wake(voice_cfg.wake_word, refractory_s=voice_cfg.wake_refractory_s)
    if detector is None:
        return None
    return WakeGate(detector, player, emit=emit, timeout_s=voice_cfg.wake_timeout_s,
                    follow_up_s=voice_cfg.follow_up_s)


def _default_source(cfg):
    from ..audio.sources import MicSource
    return MicSource(cfg.audio.input_device or None)


def _default_player(cfg, sample_rate: int):
    from ..audio.playback import DevicePlayer, VirtualSpeaker
    try:
        return DevicePlayer(cfg.audio.output_device or None, sample_rate)
    except EdgeError as exc:
        log.warning("microphone loop: no audio output (%s); answers are not heard — set "
                    "audio.output_device (list devices with `python -m sounddevice`)",
                    exc.one_line())
        return VirtualSpeaker(sample_rate)


class MicListener:
    """One always-on loop over one audio source, on a started ``VoiceService``.

    ``source`` / ``player``: factories (``cfg`` -> source; ``cfg, rate`` -> player) for
    tests and benchmarks; by default the configured sound devices. ``state`` is ``off``
    (not started), ``listening``, ``unavailable`` (see ``error``) or ``stopped``."""

    def __init__(self, service, *, source: Callable | None = None,
                 player: Callable | None = None) -> None:
        self.service = service
        self.cfg = service.cfg
        self._make_source = source or _default_source
        self._make_player = player or _default_player
        self.state = "off"
        self.error: str | None = None
        self.events: list[dict[str, Any]] = []       # the last ones (tests, health)
        self.turns = 0
        self.wakes = 0
        self._task: asyncio.Task | None = None
        self._source: Any = None
        self._player: Any = None
        self._session: Any = None
        self._gate: Any = None

    def health(self) -> str:
        """What ``/healthz`` says under ``microphone``."""
        return self.state if self.error is None else f"{self.state}: {self.error}"

    async def start(self) -> bool:
        """Open the microphone and the speaker and start listening; False (after one
        WARNING) when that is not possible: the daemon serves on without it."""
        stack = self.service.stack
        if stack is None:
            return self._unavailable(
                "voice models unavailable" + (f" ({self.service.error.one_line()})"
                                              if self.service.error else ""),
                "pull the voice models (`edge-runtime models pull`)")
        loop = asyncio.get_running_loop()
        try:
            self._source = await loop.run_in_executor(None, self._make_source, self.cfg)
        except EdgeError as exc:
            return self._unavailable(exc.message, (exc.hint or "set audio.input_device") +
                                     "; or set voice.microphone = false")
        rate = stack.tts.sample_rate if stack.tts else 22050
        self._player = await loop.run_in_executor(None, self._make_player, self.cfg, rate)
        try:
            self._gate = wake_gate(self.cfg.voice, self._player, self._on_event)
        except EdgeError as exc:
            self._close_devices()
            return self._unavailable(exc.message, exc.hint or "set voice.wake_word")
        self._session = self.service.session(
            self._player, emit=self._gate.emit if self._gate else self._on_event)
        target = self._gate.attach(self._session) if self._gate else self._session
        self._task = asyncio.create_task(feed_source(target, self._source))
        self._task.add_done_callback(self._ended)
        self.state, self.error = "listening", None
        if self._gate is not None:
            log.info("microphone loop on: say \"%s\" to talk", self._gate.detector.phrase)
        else:
            log.info("microphone loop on: listening (voice.wake_word = \"none\")")
        return True

    def _unavailable(self, why: str, fix: str) -> bool:
        self.state, self.error = "unavailable", why
        log.warning("microphone loop off: %s; the APIs keep serving. Fix: %s", why, fix)
        return False

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        self.events.append(event)
        del self.events[:-64]
        if kind == "wake":
            self.wakes += 1
            log.info("wake word heard")
        elif kind == "result":
            self.turns += 1
            log.info("voice turn answered: route %s", event.get("route"))
        elif kind == "error":
            err = event.get("error") or {}
            log.warning("voice turn failed: %s: %s", err.get("stage"), err.get("message"))
        elif kind in ("transcript", "partial"):
            log.debug("heard %s: %s", kind, event.get("text"))

    def _ended(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.state, self.error = "unavailable", f"the microphone loop failed: {exc}"
            log.error("microphone loop stopped: %s", exc, exc_info=exc)
        elif self.state == "listening":
            self.state = "stopped"              # the source ended (a file, a closed device)

    def announce(self, text: str):
        """Speak ``text`` (a timer that rang) on the loop's speaker; the Speaker, or None
        when the loop is not listening or has no voice."""
        from .speaker import Speaker
        stack = self.service.stack
        if self.state != "listening" or stack is None or stack.tts is None \
                or self._player is None:
            return None
        speaker = Speaker(stack, self._player)
        speaker.piece(text)
        speaker.finish()
        return speaker

    async def wait(self) -> None:
        """Until the source ends (a file-backed source) and its last answer is spoken."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        if self._player is not None and hasattr(self._player, "wait_s"):
            await asyncio.sleep(self._player.wait_s())

    async def stop(self) -> None:
        """Stop listening: the answer in flight is cancelled, devices are closed."""
        if self._session is not None:
            self._session.interrupt()
        if self._source is not None:
            self._source.close()
        if self._task is not None and not self._task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._task), _STOP_WAIT_S)
            except (asyncio.TimeoutError, Exception):
                self._task.cancel()
        if self._session is not None:
            self._session.close()
        if self._gate is not None:
            self._gate.close()
        self._close_devices()
        if self.state == "listening":
            self.state = "stopped"

    def _close_devices(self) -> None:
        if self._player is not None and hasattr(self._player, "close"):
            self._player.close()
        self._player = None


async def start_listener(service, **factories) -> MicListener:
    """The daemon's loop on its ``VoiceService`` (kept as ``service.listener`` for
    ``/healthz``); it never raises for a missing device: see ``MicListener.start``."""
    listener = MicListener(service, **factories)
    service.listener = listener
    try:
        await listener.start()
    except Exception as exc:            # a bug or an odd device: the APIs serve on
        log.exception("microphone loop failed to start")
        listener._unavailable(f"the microphone loop failed to start: {exc}",
                              "see the traceback above; or set voice.microphone = false")
    return listener

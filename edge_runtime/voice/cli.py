"""Voice commands for the CLI: ``ask --wav FILE [--speak OUT.wav]``, ``ask TEXT --speak
OUT.wav`` and ``chat``.

Both are coroutines: call them inside ``asyncio.run`` with a started Runtime.
"""
from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

from ..errors import EdgeError
from .service import VoiceService

log = logging.getLogger(__name__)


async def ask_wav(runtime, wav_path: str, speak_path: str | None) -> dict[str, Any]:
    """Transcribe ``wav_path``, answer it, write the spoken answer to ``speak_path``."""
    service = VoiceService(runtime)
    await service.start()
    try:
        service.require_ready()
        out, wav = await service.answer_wav(str(wav_path), speak=bool(speak_path))
        if speak_path and wav is not None:
            await asyncio.to_thread(Path(speak_path).write_bytes, wav)
            out["speak"] = str(speak_path)
        return out
    finally:
        service.close()


async def ask_text_spoken(runtime, text: str, speak_path: str) -> dict[str, Any]:
    """``ask TEXT --speak OUT.wav``: answer typed text, write the spoken answer."""
    service = VoiceService(runtime)
    await service.start()
    try:
        service.require_ready()
        out, wav = await service.answer_text_spoken(text)
        await asyncio.to_thread(Path(speak_path).write_bytes, wav)
        out["speak"] = str(speak_path)
        return out
    finally:
        service.close()


def _print(line: str, end: str = "\n") -> None:
    sys.stdout.write(line + end)
    sys.stdout.flush()


def _show(event: dict[str, Any]) -> None:
    kind = event.get("type")
    if kind == "partial":
        _print(f"\r… {event['text'][-70:]:<72}", end="")
    elif kind == "transcript":
        _print(f"\ryou> {event['text']:<72}")
    elif kind == "result":
        t, v = event["timings_ms"], event.get("voice_ms")
        _print(f"bot> {event['answer']}")
        spoken = (f"; end of speech -> transcript {v.get('final_transcript')} ms, -> first "
                  f"audio {v.get('first_audio')} ms") if v else ""
        _print(f"     [{event['route']}/{event['device']}] {event['reason']}{spoken}; first "
               f"token {t.get('first_token')} ms")
    elif kind == "barge_in":
        _print(f"\n     [barge-in: stopped after {event['ms']} ms]")
    elif kind == "error":
        _print(f"error: {event['error']['stage']}: {event['error']['message']}")


async def run_chat(runtime, text_mode: bool, *, input_device: str | None = None,
                   output_device: str | None = None) -> int:
    """A conversation: microphone (partials, route, timings) or keyboard (``text_mode``).
    Answers are spoken when a sound device opens; Ctrl-C or /quit ends it."""
    from ..audio.playback import DevicePlayer, VirtualSpeaker
    service = VoiceService(runtime)
    await service.start()
    stack = service.stack
    if stack is None and not text_mode:
        raise service.error or EdgeError("voice models unavailable", stage="voice")
    rate = stack.tts.sample_rate if stack and stack.tts else 22050
    out_dev = output_device or service.cfg.audio.output_device or None
    try:
        player: DevicePlayer | VirtualSpeaker = DevicePlayer(out_dev, rate)
    except EdgeError as exc:
        log.warning("no audio output (%s); answers are printed only", exc.one_line())
        player = VirtualSpeaker(rate)
    try:
        if text_mode:
            return await _text_loop(service, player)
        return await _mic_loop(service, player, input_device)
    finally:
        if hasattr(player, "close"):
            player.close()
        service.close()


async def _text_loop(service: VoiceService, player) -> int:
    import uuid

    from .speaker import Speaker
    loop = asyncio.get_running_loop()
    session = f"chat-{uuid.uuid4().hex[:12]}"      # one conversation: follow-ups see context
    while True:
        line = await loop.run_in_executor(None, _prompt)
        rang = service.runtime.finished_timers() + await service.runtime.run_due()
        for announcement in rang:                       # timers that rang meanwhile
            _print(f"bot> {announcement}")
        if line is None or line.strip() in ("/quit", "/exit"):
            return 0
        if not line.strip():
            continue
        player.stop()
        speaker = Speaker(service.stack, player) if service.stack and service.stack.tts \
            else None
        try:
            result = await service.runtime.pipeline.ask(line, sink=speaker, session=session)
            if speaker is not None:
                speaker.finish()
                await speaker.rendered()
            _show({"type": "result", **result.to_dict()})
        except EdgeError as exc:
            _print(f"error: {exc.one_line()}")


def _prompt() -> str | None:
    try:
        return input("you> ")
    except EOFError:
        return None


async def _mic_loop(service: VoiceService, player, input_device: str | None) -> int:
    from ..audio.sources import MicSource
    from .pump import feed_source
    dev = input_device or service.cfg.audio.input_device or None
    mic = MicSource(dev)
    gate = _wake_gate(service, player)
    session = service.session(player, emit=gate.emit if gate else _show)
    _print_listening(gate)
    try:
        await feed_source(gate.attach(session) if gate else session, mic, finish=False)
    finally:
        session.close()
        if gate is not None:
            gate.close()
    return 0


def _print_listening(gate) -> None:
    if gate is None:
        _print("listening (Ctrl-C to stop)")
    else:
        _print(f"say \"{gate.detector.phrase}\" to talk (Ctrl-C to stop)")


def _wake_gate(service, player):
    """The wake-word gate of config ``voice.wake_word`` (None when it is "none")."""
    return _gate_for(service.runtime.cfg.voice, player)


def _gate_for(voice_cfg, player, show=None):
    """The gate of ``voice_cfg``, printing its events (``show``: where the session's other
    events go)."""
    from .listener import wake_gate
    show = show or _show
    phrase = [""]

    def shown(event: dict[str, Any]) -> None:
        if event.get("type") == "wake":
            _print("listening…")
        elif event.get("type") == "wake_timeout":
            _print(f"waiting for \"{phrase[0]}\"")
        else:
            show(event)
    gate = wake_gate(voice_cfg, player, shown)
    if gate is not None:
        phrase[0] = gate.detector.phrase
    return gate


# -- attached to a running daemon (voice/remote.py) ----------------------------------------
async def chat(cfg, text_mode: bool, **attach) -> int:
    """``edge-runtime chat``: attach to the daemon at the configured address when one is
    up (one copy of the models), else load the models in this process."""
    from .remote import daemon_url, find_daemon
    daemon = await find_daemon(cfg)
    if daemon is not None:
        _print(f"attached to the daemon at {daemon['url']} (its models; none loaded here)")
        return await run_chat_attached(cfg, daemon, text_mode, **attach)
    _print(f"no daemon at {daemon_url(cfg)}: loading the models in this process")
    from ..runtime import Runtime
    loop = asyncio.get_running_loop()
    rt = await loop.run_in_executor(None, Runtime.build, cfg)
    await rt.start()
    try:
        return await run_chat(rt, text_mode)
    finally:
        await rt.close()


async def run_chat_attached(cfg, daemon: dict[str, Any], text_mode: bool, *, source=None,
                            player=None) -> int:
    """The conversation loop on a running daemon: typed lines to /v1/ask, or the
    microphone (``source``, default the configured input) to /v1/stream."""
    from . import remote
    url, token = daemon["url"], cfg.server.token
    if text_mode:
        return await _remote_text_loop(url, token)
    if daemon.get("voice") != "ok":
        _print(f"error: the daemon at {url} has no voice (voice: {daemon.get('voice')}); "
               "fix its voice models, or use `chat --text`")
        return 1
    if str(daemon.get("microphone", "off")).startswith("listening") and source is None:
        _print(f"the daemon at {url} is already listening on the microphone "
               "(voice.microphone = true): talk to it, or type with `chat --text`")
        return 0
    if source is None:
        from ..audio.sources import MicSource
        source = MicSource(cfg.audio.input_device or None)
    own_player = player is None
    if player is None:
        from ..audio.playback import DevicePlayer, VirtualSpeaker
        try:
            player = DevicePlayer(cfg.audio.output_device or None, 22050)
        except EdgeError as exc:
            log.warning("no audio output (%s); answers are printed only", exc.one_line())
            player = VirtualSpeaker(22050)
    probe = _gate_for(cfg.voice, player)
    _print_listening(probe)
    if probe is not None:
        probe.close()
    try:
        return await remote.stream_mic(url, token, source, player, emit=_show,
                                       gate_factory=lambda p, emit: _gate_for(cfg.voice, p,
                                                                              emit))
    finally:
        if own_player and hasattr(player, "close"):
            player.close()


async def _remote_text_loop(url: str, token: str) -> int:
    from . import remote
    loop = asyncio.get_running_loop()
    session = remote.new_session_id()
    while True:
        line = await loop.run_in_executor(None, _prompt)
        if line is None or line.strip() in ("/quit", "/exit"):
            return 0
        if not line.strip():
            continue
        try:
            result = await remote.ask_text(url, token, line, session)
            _show({"type": "result", **result})
        except EdgeError as exc:
            _print(f"error: {exc.one_line()}")

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
            Path(speak_path).write_bytes(wav)
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
        Path(speak_path).write_bytes(wav)
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
        player = DevicePlayer(out_dev, rate)
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
        for announcement in service.runtime.finished_timers():   # timers that rang meanwhile
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
    if gate is None:
        _print("listening (Ctrl-C to stop)")
    else:
        _print(f"say \"{gate.detector.phrase}\" to talk (Ctrl-C to stop)")
    try:
        await feed_source(gate.attach(session) if gate else session, mic, finish=False)
    finally:
        session.close()
        if gate is not None:
            gate.close()
    return 0


def _wake_gate(service: VoiceService, player):
    """The wake-word gate of config ``voice.wake_word`` (None when it is "none")."""
    from .wake import WakeGate, load_wake
    v = service.runtime.cfg.voice
    detector = load_wake(v.wake_word, refractory_s=v.wake_refractory_s)
    if detector is None:
        return None

    def show(event: dict[str, Any]) -> None:
        if event.get("type") == "wake":
            _print("listening…")
        elif event.get("type") == "wake_timeout":
            _print(f"waiting for \"{detector.phrase}\"")
        else:
            _show(event)
    return WakeGate(detector, player, emit=show, timeout_s=v.wake_timeout_s,
                    follow_up_s=v.follow_up_s)

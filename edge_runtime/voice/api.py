"""Voice routes of the daemon: ``POST /v1/audio`` and the ``/v1/stream`` WebSocket.

``POST /v1/audio`` (body: a WAV file; ``?speak=0`` to skip speech, ``?format=wav`` for a
WAV reply with the answer object in the ``X-Edge-Result`` header) -> the answer object of
``/v1/ask`` plus ``audio`` {``sample_rate``, ``wav_base64``} and ``voice_ms``.

``GET /v1/stream`` (WebSocket): the client sends binary frames of s16le PCM (16 kHz mono
unless a first text message ``{"type": "start", "sample_rate": R, "channels": C}`` says
otherwise) and ``{"type": "end"}`` when done; the server sends JSON events
(``speech_start``, ``partial``, ``transcript``, ``result``, ``barge_in``, ``audio_start``
{``sample_rate``}, ``audio_stop`` (drop buffered audio: barge-in), ``error``) and the
answer's speech as binary s16le frames at ``audio_start``'s rate.
"""
from __future__ import annotations

import asyncio
import base64
import json
import logging

import numpy as np
from aiohttp import WSMsgType, web

from ..audio.format import PcmFormat, decode_pcm, resample, to_mono
from ..audio.playback import VirtualSpeaker
from ..errors import BadInputError, EdgeError
from ..http_guard import GUARD_KEY, WS_KEY, read_body
from ..limits import MAX_WS_MESSAGE_BYTES, RequestLimits, check_stream_start, parse_json
from .service import VoiceService

log = logging.getLogger(__name__)

VOICE_KEY = web.AppKey("voice", VoiceService)
MAX_WS_MESSAGE = MAX_WS_MESSAGE_BYTES
_WS_LIMITS = RequestLimits(max_body_bytes=MAX_WS_MESSAGE_BYTES)


def add_voice_routes(app: web.Application, runtime) -> None:
    """Register the voice routes; the voice models load at startup, off the event loop."""
    service = VoiceService(runtime)
    app[VOICE_KEY] = service
    app.on_startup.append(_start)
    app.on_cleanup.append(_stop)
    app.router.add_post("/v1/audio", audio)
    app.router.add_get("/v1/stream", stream)


async def _start(app: web.Application) -> None:
    await app[VOICE_KEY].start()


async def _stop(app: web.Application) -> None:
    app[VOICE_KEY].close()


async def audio(request: web.Request) -> web.Response:
    service = request.app[VOICE_KEY]
    # past the daemon-wide server.max_body_bytes, up to what audio.max_seconds can need;
    # the WAV parser then checks the duration itself
    body = await read_body(request, service.max_upload_bytes, what="audio upload",
                           hint="send one utterance (16 kHz mono 16-bit WAV)")
    speak = request.query.get("speak", "1") not in ("0", "false", "no")
    out, wav = await service.answer_wav(body, speak=speak)
    if request.query.get("format") == "wav":
        if wav is None:
            raise BadInputError("format=wav needs speak=1")
        return web.Response(body=wav, content_type="audio/wav",
                            headers={"X-Edge-Result": json.dumps(out, ensure_ascii=True)})
    tts = service.stack.tts if service.stack is not None else None
    if wav is not None and tts is not None:     # a spoken answer: the stack has its TTS
        out["audio"] = {"sample_rate": tts.sample_rate, "format": "wav",
                        "wav_base64": base64.b64encode(wav).decode("ascii")}
    return web.json_response(out)


class _WsSpeaker(VirtualSpeaker):
    """Plays by sending audio to the client, paced as the client plays it."""

    def __init__(self, ws: web.WebSocketResponse, loop: asyncio.AbstractEventLoop,
                 sample_rate: int) -> None:
        super().__init__(sample_rate)
        self.ws, self.loop = ws, loop
        self._started = False

    def play(self, audio: np.ndarray, sample_rate: int) -> None:   # TTS thread
        super().play(audio, sample_rate)
        if not self._started:
            self._started = True
            self._send_json({"type": "audio_start", "sample_rate": self.sample_rate})
        data = audio.astype("<i2").tobytes()
        self.loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._send(data)))

    def stop(self) -> None:
        was = self.playing
        super().stop()
        if was:
            self._send_json({"type": "audio_stop"})

    def _send_json(self, obj: dict) -> None:
        data = json.dumps(obj)
        self.loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._send(data)))

    async def _send(self, data) -> None:
        if self.ws.closed:
            return
        try:
            if isinstance(data, str):
                await self.ws.send_str(data)
            else:
                await self.ws.send_bytes(data)
        except (ConnectionError, RuntimeError):
            log.debug("stream client went away while sending")


async def stream(request: web.Request) -> web.WebSocketResponse:
    service = request.app[VOICE_KEY]
    service.require_ready()
    guard = request.app.get(GUARD_KEY)         # a silent peer is dropped like an idle one
    heartbeat = min(30.0, guard.idle_timeout_s) if guard is not None else 30.0
    ws = web.WebSocketResponse(max_msg_size=MAX_WS_MESSAGE, heartbeat=heartbeat)
    await ws.prepare(request)
    request[WS_KEY] = ws         # from here on, errors become events, never an HTTP 500
    loop = asyncio.get_running_loop()
    tts = service.stack.tts if service.stack is not None else None     # ready: has a stack
    speaker = _WsSpeaker(ws, loop, tts.sample_rate if tts is not None else 22050)
    session = service.session(speaker, emit=lambda ev: speaker._send_json(ev))
    state = _StreamState()
    try:
        async for msg in ws:
            if msg.type == WSMsgType.BINARY:
                await _guarded(ws, _on_pcm(session, state, msg.data))
            elif msg.type == WSMsgType.TEXT:
                if await _guarded(ws, _on_control(ws, session, speaker, state, msg.data)):
                    break
            elif msg.type == WSMsgType.ERROR:
                log.debug("stream client error: %s", ws.exception())
                break
    except (ConnectionError, RuntimeError) as exc:   # the client went away mid-send
        log.debug("stream client went away: %s", exc)
    finally:
        session.close()
        log.debug("stream session closed")
    return ws


class _StreamState:
    def __init__(self) -> None:
        self.fmt = PcmFormat()
        self.rest = b""              # a partial sample frame carried to the next message


async def _guarded(ws: web.WebSocketResponse, step) -> bool:
    """Run one message's handling; a typed error becomes an ``error`` event and the
    stream goes on. Returns what the step returns (True = stop reading)."""
    try:
        return bool(await step)
    except EdgeError as exc:
        await ws.send_json({"type": "error", "error": exc.to_dict()})
        return False


async def _on_pcm(session, state: _StreamState, data: bytes) -> None:
    fmt = state.fmt
    data = state.rest + data
    cut = len(data) - len(data) % fmt.frame_bytes
    state.rest = data[cut:]
    x = to_mono(decode_pcm(data[:cut], fmt))
    await session.feed(resample(x, fmt.sample_rate))


async def _on_control(ws: web.WebSocketResponse, session, speaker: _WsSpeaker,
                      state: _StreamState, text: str) -> bool:
    try:
        ctl = parse_json(text, _WS_LIMITS, example='{"type": "start"}')
    except BadInputError:
        ctl = None
    kind = ctl.get("type") if isinstance(ctl, dict) else None
    if kind == "start":
        assert isinstance(ctl, dict)
        rate, channels = check_stream_start(ctl)
        state.fmt, state.rest = PcmFormat(rate, channels).validate(), b""
    elif kind == "end":
        await session.finish()
        await asyncio.sleep(speaker.wait_s())
        await ws.send_json({"type": "end"})
    else:
        await ws.send_json({"type": "error", "error": {
            "code": "bad_input", "message": "unknown control message",
            "hint": 'send {"type": "start"|"end"} or binary s16le PCM'}})
    return False

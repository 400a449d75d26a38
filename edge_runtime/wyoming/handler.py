"""One Wyoming connection: events in, dispatched by type, answers out.

Bad input never ends the server: an event it does not know is ignored (the protocol
asks servers to drop unknown events), a malformed or out-of-order one gets an ``error``
event that names the problem and the fix, and the connection reads on. Only a broken
framing (an oversized or non-JSON header with a payload that cannot be skipped) closes
that one connection. A client that vanishes mid-stream is logged at DEBUG.
"""
from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.handle import Handled, NotHandled
from wyoming.ping import Pong
from wyoming.server import AsyncEventHandler
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStopped
from wyoming.wake import Detect, Detection, NotDetected

from ..audio.errors import AudioTooLongError
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import BadInputError, EdgeError, ModelMissingError, OverloadedError
from ..tts import SentenceChunker
from ..types import CancelToken
from ..voice.wake import WAKE_WORDS, MicroWakeDetector
from .asr_out import AsrListener, frame_pool
from .audio_in import AudioIn, chunk_format
from .info import build_info
from .tts_out import Synthesizer, sentence_chunker

log = logging.getLogger(__name__)

MAX_LINE = 64 * 1024            # header line (the StreamReader limit)
MAX_DATA = 64 * 1024            # JSON data after the header
MAX_PAYLOAD = 4 * 1024 * 1024   # one audio chunk (about 10 s of 48 kHz stereo 32-bit)
MAX_TTS_CHARS = 10_000
BUSY_TEXT = "Sorry, I'm busy right now. Please try again in a moment."


class FramingError(Exception):
    """The byte stream can no longer be split into events: the connection must close."""


@dataclass
class WyomingContext:
    """What every connection shares: the one runtime and the one voice stack."""

    runtime: Any                         # Runtime: .pipeline, .cfg, .metrics
    voice: Any | None = None             # VoiceService (its .stack), None = text only
    clock: Clock = SYSTEM_CLOCK
    stats: dict[str, list[float]] = field(default_factory=lambda: {
        "end_of_audio_to_transcript_s": [], "synthesize_to_first_audio_s": []})

    @property
    def stack(self):
        return None if self.voice is None else self.voice.stack

    def observe(self, name: str, seconds: float) -> None:
        vals = self.stats.setdefault(name, [])
        vals.append(seconds)
        del vals[:-256]                  # the newest 256 per figure
        metrics = getattr(self.runtime, "metrics", None)
        if metrics is not None:
            metrics.observe_stage(f"wyoming_{name[:-2]}", seconds)


async def read_event(reader: asyncio.StreamReader) -> Event | None:
    """The next event, None at end of stream; BadInputError for a bad but skippable
    header, FramingError when the stream cannot be followed any more."""
    try:
        line = await reader.readline()
    except ValueError:                   # longer than the StreamReader limit
        raise FramingError(f"event header longer than {MAX_LINE} bytes") from None
    if not line:
        return None
    if not line.endswith(b"\n"):
        return None                      # the client left in the middle of a header
    try:
        header = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadInputError("event header is not a JSON object",
                            hint='send {"type": ..., "data": ...} on one line') from None
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise BadInputError('event header has no "type"',
                            hint='send {"type": ..., "data": ...} on one line')
    data = header.get("data") or {}
    lengths = []
    for key, limit in (("data_length", MAX_DATA), ("payload_length", MAX_PAYLOAD)):
        n = header.get(key) or 0
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= limit:
            raise FramingError(f"{key} {n!r} is not an integer within 0..{limit}")
        lengths.append(n)
    if lengths[0]:
        try:
            extra = json.loads(await reader.readexactly(lengths[0]))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise BadInputError("event data is not a JSON object") from None
        if not isinstance(extra, dict):
            raise BadInputError("event data is not a JSON object")
        data = {**data, **extra} if isinstance(data, dict) else extra
    if not isinstance(data, dict):
        raise BadInputError("event data is not a JSON object")
    payload = await reader.readexactly(lengths[1]) if lengths[1] else None
    return Event(type=header["type"], data=data, payload=payload)


class WyomingHandler(AsyncEventHandler):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 ctx: WyomingContext) -> None:
        super().__init__(reader, writer)
        self.ctx = ctx
        self.conversation = f"wyoming-{uuid.uuid4().hex[:12]}"
        self._audio: AudioIn | None = None
        self._asr: AsrListener | None = None
        self._asr_requested: Transcribe | None = None
        self._overflow = False
        self._out_of_order_sent = False
        self._wake: list[MicroWakeDetector] = []
        self._wake_requested: list[str] | None = None
        self._detected = False
        self._synth: Synthesizer | None = None
        self._tts_stream: SentenceChunker | None = None   # while synthesize-start is open
        self._cancel = CancelToken()

    # -- connection ------------------------------------------------------------------
    async def run(self) -> None:
        self._is_running = True
        peer = self.writer.get_extra_info("peername")
        try:
            while self._is_running:
                try:
                    event = await read_event(self.reader)
                except BadInputError as exc:
                    await self._error(exc)
                    continue
                if event is None or not await self.handle_event(event):
                    break
        except FramingError as exc:
            log.debug("wyoming client %s: %s; closing", peer, exc)
            await self._error_quiet(BadInputError(f"{exc}; closing the connection"))
        except (ConnectionError, asyncio.IncompleteReadError, BrokenPipeError) as exc:
            log.debug("wyoming client %s went away: %r", peer, exc)
        except asyncio.CancelledError:
            raise
        except Exception:                    # a bug: this connection ends, the server serves
            log.exception("wyoming connection failed")
        finally:
            await self.disconnect()
            self.writer.close()

    async def disconnect(self) -> None:
        self._cancel.cancel()
        if self._synth is not None:
            self._synth.cancel()

    async def write_event(self, event: Event) -> None:
        await async_write_event(event, self.writer)

    async def _error(self, exc: EdgeError) -> None:
        text = exc.message + (f" ({exc.hint})" if exc.hint else "")
        await self.write_event(Error(text=text, code=exc.code).event())

    async def _error_quiet(self, exc: EdgeError) -> None:
        try:
            await self._error(exc)
        except (ConnectionError, RuntimeError):
            pass

    # -- dispatch --------------------------------------------------------------------
    async def handle_event(self, event: Event) -> bool:
        fn = _HANDLERS.get(event.type)
        if fn is None:
            log.debug("wyoming: ignoring event type %r", event.type[:64])
            return True
        try:
            await fn(self, event)
        except EdgeError as exc:
            await self._error(exc)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            await self._error(BadInputError(f"malformed {event.type} event ({exc!r})",
                                            hint="see the Wyoming protocol for its fields"))
        return True

    async def _on_describe(self, event: Event) -> None:
        stack = self.ctx.stack
        streaming = bool(stack is not None and stack.cfg.asr.partials)
        await self.write_event(build_info(stack, streaming_asr=streaming).event())

    async def _on_ping(self, event: Event) -> None:
        await self.write_event(Pong(text=(event.data or {}).get("text")).event())

    def _stack(self, what: str):
        stack = self.ctx.stack
        if stack is None:
            err = getattr(self.ctx.voice, "error", None)
            raise err or ModelMissingError(f"no voice models loaded: {what} is unavailable",
                                           stage="voice",
                                           hint="enable voice and pull the voice models")
        return stack

    # -- audio in (speech to text, wake word) ------------------------------------------
    async def _on_transcribe(self, event: Event) -> None:
        self._stack("speech to text")
        self._asr_requested = Transcribe.from_event(event)

    async def _on_detect(self, event: Event) -> None:
        names = Detect.from_event(event).names
        if names is not None and (not isinstance(names, list)
                                  or not all(isinstance(n, str) for n in names)):
            raise BadInputError("detect names must be a list of strings")
        known = [n for n in (names or []) if n in WAKE_WORDS]
        if names and not known:
            raise BadInputError(f"no known wake word in {names[:8]!r}",
                                hint=f"ask for one of {', '.join(WAKE_WORDS)} (or none = "
                                     "the default)", code="bad_wake_word")
        default = self.ctx.runtime.cfg.voice.wake_word
        self._wake_requested = known or [default if default != "none" else WAKE_WORDS[0]]

    async def _on_audio_start(self, event: Event) -> None:
        self._audio = None
        start = AudioStart.from_event(event)
        self._audio = AudioIn(chunk_format(start.rate, start.width, start.channels))
        self._overflow = self._detected = False
        self._out_of_order_sent = False
        refractory = self.ctx.runtime.cfg.voice.wake_refractory_s
        self._wake = [MicroWakeDetector(n, refractory_s=refractory)
                      for n in (self._wake_requested or [])]
        self._asr = None
        if self._asr_requested is not None or not self._wake:
            stack = self._stack("speech to text")
            req = self._asr_requested or Transcribe()
            self._asr = AsrListener(stack, self.write_event,
                                    streaming=stack.cfg.asr.partials,
                                    partial_every_s=stack.cfg.asr.partial_every_s,
                                    language=req.language)
        self._asr_requested = None

    async def _on_audio_chunk(self, event: Event) -> None:
        if self._audio is None:
            if not self._out_of_order_sent:      # once per stream, not once per chunk
                self._out_of_order_sent = True
                raise BadInputError("audio-chunk before audio-start: the audio is ignored",
                                    hint="send audio-start {rate, width, channels} first",
                                    code="out_of_order")
            return
        x = self._audio.convert(AudioChunk.from_event(event))
        detections = (await asyncio.get_running_loop().run_in_executor(
            frame_pool(), self._feed_wake, x)) if self._wake else []
        for det in detections:
            self._detected = True
            await self.write_event(Detection(name=det.name,
                                             timestamp=int(det.t_s * 1000)).event())
        if self._asr is None or self._overflow:
            return
        limit = self._stack("speech to text").cfg.audio.max_seconds
        if self._audio.seconds > limit:
            self._overflow = True
            raise AudioTooLongError(f"audio stream passed {limit:g} s: later audio is not "
                                    "transcribed", hint="send one utterance per transcribe, "
                                    "or raise audio.max_seconds")
        await self._asr.feed(x)

    def _feed_wake(self, x):
        return [d for w in self._wake for d in w.feed(x)]

    async def _on_audio_stop(self, event: Event) -> None:
        if self._audio is None:
            raise BadInputError("audio-stop without audio-start", code="out_of_order",
                                hint="send audio-start, audio-chunk..., audio-stop")
        self._audio = None
        t_stop = self.ctx.clock.monotonic()
        if self._wake and not self._detected:
            await self.write_event(NotDetected().event())
        self._wake, self._wake_requested = [], None
        asr, self._asr = self._asr, None
        if asr is not None:
            await asr.finish()
            self.ctx.observe("end_of_audio_to_transcript_s",
                             self.ctx.clock.monotonic() - t_stop)

    # -- conversation ------------------------------------------------------------------
    async def _on_transcript(self, event: Event) -> None:
        t = Transcript.from_event(event)
        context = t.context if isinstance(t.context, dict) else {}
        session = context.get("conversation_id")
        if not isinstance(session, str) or not 0 < len(session) <= 128:
            session = self.conversation
        try:
            result = await self.ctx.runtime.pipeline.ask(t.text, cancel=self._cancel,
                                                         session=session)
        except OverloadedError:
            await self.write_event(NotHandled(text=BUSY_TEXT,
                                              context={"conversation_id": session}).event())
            return
        except EdgeError as exc:
            await self.write_event(NotHandled(text=exc.message,
                                              context={"conversation_id": session}).event())
            return
        await self.write_event(Handled(text=result.answer, context={
            "conversation_id": session, "route": result.route, "device": result.device,
            "reason": result.reason}).event())

    # -- speech out --------------------------------------------------------------------
    def _synthesizer(self) -> Synthesizer:
        stack = self._stack("text to speech")
        if stack.tts is None:
            raise ModelMissingError("no TTS voice loaded", stage="tts",
                                    hint="install the `tts` extra and pull piper-joe-medium")
        if self._synth is None:
            self._synth = Synthesizer(stack, self.write_event, self.ctx.clock)
        return self._synth

    async def _on_synthesize(self, event: Event) -> None:
        if self._tts_stream is not None:
            return          # streaming clients also send the whole text: already spoken
        text = _tts_text(Synthesize.from_event(event).text)
        synth = self._synthesizer()
        t0 = self.ctx.clock.monotonic()
        synth.first_audio_at = None
        chunker = sentence_chunker(synth.stack)
        await synth.speak(chunker.feed(text) + chunker.flush())
        await synth.stop()
        if synth.first_audio_at is not None:
            self.ctx.observe("synthesize_to_first_audio_s", synth.first_audio_at - t0)

    async def _on_synthesize_start(self, event: Event) -> None:
        synth = self._synthesizer()
        self._tts_stream = sentence_chunker(synth.stack)

    async def _on_synthesize_chunk(self, event: Event) -> None:
        if self._tts_stream is None:
            raise BadInputError("synthesize-chunk before synthesize-start",
                                code="out_of_order", hint="send synthesize-start first")
        text = SynthesizeChunk.from_event(event).text
        if not isinstance(text, str):
            raise BadInputError("synthesize-chunk text must be a string")
        sentences = self._tts_stream.feed(text)
        if sentences:
            await self._synthesizer().speak(sentences)

    async def _on_synthesize_stop(self, event: Event) -> None:
        if self._tts_stream is None:
            raise BadInputError("synthesize-stop before synthesize-start",
                                code="out_of_order", hint="send synthesize-start first")
        rest, self._tts_stream = self._tts_stream.flush(), None
        synth = self._synthesizer()
        if rest:
            await synth.speak(rest)
        await synth.stop()
        await self.write_event(SynthesizeStopped().event())


def _tts_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise BadInputError("synthesize text is empty", hint="send the text to speak")
    if len(text) > MAX_TTS_CHARS:
        raise BadInputError(f"synthesize text is {len(text)} characters, more than "
                            f"{MAX_TTS_CHARS}", hint="send it in parts")
    return text.strip()


_HANDLERS = {
    "describe": WyomingHandler._on_describe,
    "ping": WyomingHandler._on_ping,
    "transcribe": WyomingHandler._on_transcribe,
    "detect": WyomingHandler._on_detect,
    "audio-start": WyomingHandler._on_audio_start,
    "audio-chunk": WyomingHandler._on_audio_chunk,
    "audio-stop": WyomingHandler._on_audio_stop,
    "transcript": WyomingHandler._on_transcript,
    "synthesize": WyomingHandler._on_synthesize,
    "synthesize-start": WyomingHandler._on_synthesize_start,
    "synthesize-chunk": WyomingHandler._on_synthesize_chunk,
    "synthesize-stop": WyomingHandler._on_synthesize_stop,
}

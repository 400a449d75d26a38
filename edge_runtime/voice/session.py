"""One conversation over one audio stream: endpointing, streaming ASR, turns, barge-in.

``feed`` takes audio chunks (float32 mono 16 kHz) as they arrive; VAD runs on the
session's own thread so it never waits behind an ASR decode. Speech during a turn
(thinking or speaking) is barge-in: the player stops, the request is cancelled
(CancelToken + task cancel) and the new utterance becomes the next turn. During
playback the echo guard decides whether an onset is the user or the assistant's own
voice coming back through the microphone.

Times: audio time t (seconds of audio fed) maps to clock time ``t0 + t``, where t0 is
fixed at the first chunk; that holds for a live microphone or a source paced in real
time, and is what the latency figures (end of speech -> transcript -> first audio,
onset -> playback stopped) are measured against.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar

import numpy as np

from ..audio.format import SAMPLE_RATE
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import EdgeError, OverloadedError
from ..metrics import Metrics
from ..types import CancelToken, Timings
from ..vad import (Endpointer, SpeechAudio, SpeechEnd, SpeechPause, SpeechResume,
                   SpeechStart)
from .echo import EchoGuard
from .speaker import Speaker

log = logging.getLogger(__name__)
RATE = SAMPLE_RATE
ECHO_WINDOW_S = 0.5        # reference window: covers output latency (device + PulseAudio)
BUSY_TEXT = "Sorry, I'm busy right now. Please try again in a moment."
LEARN_AFTER_S = 0.5        # learn the coupling once playback's sound reaches the mic
Emit = Callable[[dict[str, Any]], None]


class VoiceSession:
    # event type -> its handler (filled below the class)
    _handlers: ClassVar[dict[type, Callable[[VoiceSession, Any], Awaitable[None]]]]

    def __init__(self, stack, pipeline, player, *, emit: Emit | None = None,
                 clock: Clock = SYSTEM_CLOCK, budget_ms: float | None = None,
                 metrics: Metrics | None = None) -> None:
        """``metrics``: where per-stage latencies go (None: not recorded)."""
        self.stack = stack
        self.metrics = metrics
        self.pipeline = pipeline
        self.player = player
        self.emit: Emit = emit or (lambda event: None)
        self.clock = clock
        self.budget_ms = budget_ms
        self.conversation = f"voice-{uuid.uuid4().hex[:12]}"   # follow-ups see earlier turns
        self.endpointer = Endpointer(stack.vad.fork(), stack.cfg.vad)
        self.echo = EchoGuard(margin=stack.cfg.voice.echo_margin)
        self._vad_pool = ThreadPoolExecutor(1, thread_name_prefix="vad")
        self._t0: float | None = None
        self._peaks: collections.deque[float] = collections.deque(maxlen=4)
        self._play_since: float | None = None
        # the utterance being heard
        self._stream = None
        self._echo_utt = False
        self._paused = False
        self._held: list[np.ndarray] = []
        self._partial: asyncio.Future | None = None
        self._since_partial = 0
        # the turn being answered
        self._task: asyncio.Task | None = None       # the latest turn
        self._tasks: set[asyncio.Task] = set()       # every turn still running
        self._cancel: CancelToken | None = None
        self._speaker: Speaker | None = None
        self.records: list[dict[str, Any]] = []      # one per finished turn (benchmarks)
        self.barge_in_ms: list[float] = []

    # -- input ---------------------------------------------------------------------------
    async def run(self, chunks: AsyncIterator[np.ndarray]) -> None:
        """Feed a whole stream, then end the last utterance and wait for its answer."""
        async for chunk in chunks:
            await self.feed(chunk)
        await self.finish()

    async def feed(self, chunk: np.ndarray) -> None:
        loop = asyncio.get_running_loop()
        if self._t0 is None:
            self._t0 = self.clock.monotonic() - len(chunk) / RATE
        peak = float(np.abs(chunk).max()) if len(chunk) else 0.0
        self._peaks.append(peak)
        now = self.clock.monotonic()
        if self.player.playing:
            if self._play_since is None:
                self._play_since = now
            if now - self._play_since >= LEARN_AFTER_S:
                self.echo.observe(max(self._peaks), self.player.recent_peak(ECHO_WINDOW_S),
                                  user_speaking=self._stream is not None and not
                                  self._echo_utt)
        else:
            self._play_since = None
        events = await loop.run_in_executor(self._vad_pool, self.endpointer.feed, chunk)
        for ev in events:
            await self._handle(ev)
        self._maybe_partial()

    async def finish(self) -> None:
        """End of input: close the utterance in progress and wait for the answer."""
        for ev in self.endpointer.flush():
            await self._handle(ev)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def close(self) -> None:
        self.interrupt()
        self._vad_pool.shutdown(wait=False, cancel_futures=True)

    # -- events (dispatch by type) -------------------------------------------------------
    async def _handle(self, ev) -> None:
        await self._handlers[type(ev)](self, ev)

    async def _on_audio(self, ev: SpeechAudio) -> None:
        if self._stream is None or self._echo_utt:
            return
        if self._paused:
            self._held.append(ev.samples)
        else:
            self.stack.asr_pool.submit(self._stream.accept, ev.samples)
            self._since_partial += len(ev.samples)

    async def _on_pause(self, ev: SpeechPause) -> None:
        if self._stream is not None and not self._echo_utt:
            self._paused = True
            self.stack.asr_pool.submit(self._stream.prefetch)

    async def _on_resume(self, ev: SpeechResume) -> None:
        if self._stream is not None and not self._echo_utt:
            self._paused = False
            for samples in self._held:
                self.stack.asr_pool.submit(self._stream.accept, samples)
            self._held.clear()

    async def _on_start(self, ev: SpeechStart) -> None:
        busy = self._task is not None and not self._task.done()
        ref_peak = self.player.recent_peak(ECHO_WINDOW_S)
        playing = self.player.playing or ref_peak > 0.0     # its sound may still be in flight
        self._echo_utt = False
        mic_peak = max(self._peaks, default=0.0)
        log.debug("speech onset at %.2f s: busy=%s playing=%s mic %.3f ref %.3f coupling %.3f",
                  ev.t_s, busy, playing, mic_peak, ref_peak, self.echo.coupling)
        if playing and not self.echo.is_barge_in(mic_peak, ref_peak):
            self._echo_utt = True            # the assistant hearing itself
            log.debug("speech onset during playback taken for echo")
            return
        if (busy or playing) and self.stack.cfg.voice.barge_in:
            self.interrupt()
            assert self._t0 is not None          # set by the first audio chunk
            ms = (self.clock.monotonic() - (self._t0 + ev.t_s)) * 1000.0
            self.barge_in_ms.append(ms)
            self.emit({"type": "barge_in", "ms": round(ms, 1)})
        self._stream = self.stack.asr.stream()
        self._paused, self._held, self._since_partial = False, [], 0
        self.emit({"type": "speech_start", "t_s": round(ev.t_s, 3)})

    def interrupt(self) -> None:
        """Stop speaking and cancel the request in flight (barge-in, or the client left)."""
        if self._speaker is not None:
            self._speaker.cancel()
        self.player.stop()
        if self._cancel is not None:
            self._cancel.cancel()
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _on_end(self, ev: SpeechEnd) -> None:
        stream, echo = self._stream, self._echo_utt
        self._stream, self._echo_utt, self._held = None, False, []
        if stream is None or echo:
            return
        final = asyncio.wrap_future(self.stack.asr_pool.submit(self.stack.finish, stream))
        if ev.reason == "too_short":
            self.emit({"type": "speech_ignored", "reason": "too_short"})
            final.add_done_callback(lambda f: f.cancelled() or f.exception())
            return
        # the transcript and the answer run as the turn task: listening goes on meanwhile
        self._task = asyncio.create_task(self._turn(final, ev))
        self._tasks.add(self._task)
        self._task.add_done_callback(self._tasks.discard)

    def _maybe_partial(self) -> None:
        s = self.stack.cfg.asr
        if (not s.partials or self._stream is None or self._echo_utt or self._paused
                or (self._partial is not None and not self._partial.done())
                or self._since_partial < int(s.partial_every_s * RATE)):
            return
        self._since_partial = 0
        stream = self._stream
        self._partial = asyncio.wrap_future(self.stack.asr_pool.submit(stream.partial))

        def done(f: asyncio.Future) -> None:
            if not f.cancelled() and f.exception() is None and f.result() \
                    and stream is self._stream:
                self.emit({"type": "partial", "text": f.result()})
        self._partial.add_done_callback(done)

    # -- a turn --------------------------------------------------------------------------
    async def _turn(self, final: asyncio.Future, ev: SpeechEnd) -> None:
        try:
            transcript = await final
        except EdgeError as exc:
            self.emit({"type": "error", "error": exc.to_dict()})
            return
        assert self._t0 is not None              # set by the first audio chunk
        eos = self._t0 + ev.t_speech_end
        final_ms = (self.clock.monotonic() - eos) * 1000.0
        self._observe("asr", transcript.decode_s)
        self._observe("end_of_speech_to_transcript", final_ms / 1000.0)
        text = transcript.text.strip()
        self.emit({"type": "transcript", "text": text, "final_ms": round(final_ms, 1),
                   "decode_ms": round(transcript.decode_s * 1000.0, 1),
                   "reason": ev.reason})
        if not any(c.isalnum() for c in text):
            self.emit({"type": "no_speech"})
            return
        await self._answer(text, eos, final_ms, transcript.decode_s, transcript.unsure)

    async def _answer(self, text: str, eos: float, final_ms: float, asr_s: float,
                      unsure: frozenset[str] = frozenset()) -> None:
        cancel = self._cancel = CancelToken()
        speaker = self._speaker = Speaker(self.stack, self.player, clock=self.clock)
        record: dict[str, Any] = {"transcript": text, "final_transcript_ms": final_ms}
        try:
            result = await self.pipeline.ask(text, cancel=cancel, sink=speaker,
                                             timings=Timings(asr=asr_s),
                                             budget_ms=self.budget_ms, session=self.conversation,
                                             unsure=unsure)
            speaker.finish()
            await speaker.rendered()
            first = speaker.first_audio_at
            if first is not None:
                self._observe("end_of_speech_to_first_audio", first - eos)
            record.update(route=result.route, answer=result.answer,
                          first_token_ms=None if result.timings.first_token is None else
                          result.timings.first_token * 1000.0,
                          first_audio_ms=None if first is None else (first - eos) * 1000.0)
            out = result.to_dict()
            out["voice_ms"] = {"final_transcript": round(final_ms, 1),
                               "first_audio": None if first is None else
                               round((first - eos) * 1000.0, 1)}
            self.emit({"type": "result", **out})
            self.records.append(record)
        except asyncio.CancelledError:
            speaker.cancel()
            cancel.cancel()
            self.emit({"type": "cancelled", "transcript": text})
        except OverloadedError as exc:     # refused at once: say so rather than stay silent
            speaker.piece(BUSY_TEXT)
            speaker.finish()
            self.emit({"type": "busy", "text": BUSY_TEXT, "error": exc.to_dict()})
            await speaker.rendered()
        except EdgeError as exc:
            speaker.cancel()
            self.emit({"type": "error", "error": exc.to_dict()})
        except Exception:                  # a bug: keep listening, say so, log it
            speaker.cancel()
            log.exception("voice turn failed")
            self.emit({"type": "error", "error": {"code": "internal", "stage": "voice",
                                                  "message": "internal error; see the log",
                                                  "hint": None, "retryable": True}})

    def _observe(self, stage: str, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.observe_stage(stage, seconds)


VoiceSession._handlers = {SpeechAudio: VoiceSession._on_audio,
                          SpeechStart: VoiceSession._on_start,
                          SpeechPause: VoiceSession._on_pause,
                          SpeechResume: VoiceSession._on_resume,
                          SpeechEnd: VoiceSession._on_end}

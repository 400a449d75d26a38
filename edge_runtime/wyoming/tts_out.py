"""Text to speech over Wyoming: ``audio-start``, ``audio-chunk``..., ``audio-stop``.

Text is cut into sentences (the runtime's ``SentenceChunker``, short first chunk) and
each sentence is rendered on the TTS worker thread (or taken from the audio cache) and
sent as it is ready, so the first audio leaves while later sentences still render.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event

from ..tts import SentenceChunker

log = logging.getLogger(__name__)
Send = Callable[[Event], Awaitable[None]]
SAMPLES_PER_CHUNK = 2048
_END = object()


def sentence_chunker(stack) -> SentenceChunker:
    s = stack.cfg.tts
    return SentenceChunker(first_min_chars=s.first_chunk_chars,
                           first_max_chars=s.first_chunk_max_chars)


class Synthesizer:
    """Renders text for one connection; ``cancel`` stops a render (the client left)."""

    def __init__(self, stack, send: Send, clock) -> None:
        self.stack = stack
        self.send = send
        self.clock = clock
        self.started = False             # audio-start sent for the current response
        self.first_audio_at: float | None = None
        self._stop = threading.Event()

    async def speak(self, sentences: list[str]) -> None:
        """Render and send ``sentences``; sends audio-start first if not yet sent."""
        tts = self.stack.tts
        await self._start()
        for text in sentences:
            async for audio in self._render(text):
                for i in range(0, len(audio), SAMPLES_PER_CHUNK):
                    part = audio[i:i + SAMPLES_PER_CHUNK]
                    if self.first_audio_at is None:
                        self.first_audio_at = self.clock.monotonic()
                    await self.send(AudioChunk(rate=tts.sample_rate, width=2, channels=1,
                                               audio=part.astype("<i2").tobytes()).event())

    async def _start(self) -> None:
        if not self.started:
            self.started = True
            await self.send(AudioStart(rate=self.stack.tts.sample_rate, width=2,
                                       channels=1).event())

    async def stop(self) -> None:
        """End the response (audio-stop); an empty response still gets start + stop."""
        await self._start()
        self.started = False
        await self.send(AudioStop().event())

    def cancel(self) -> None:
        self._stop.set()

    async def _render(self, text: str):
        tts, cache = self.stack.tts, self.stack.audio_cache
        hit = cache.get(tts.voice, text)
        if hit is not None:
            yield hit
            return
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def work() -> None:          # the TTS thread: one sentence, piece by piece
            parts = []
            try:
                for part in tts.synthesize(text):
                    if self._stop.is_set():
                        return
                    parts.append(part)
                    loop.call_soon_threadsafe(queue.put_nowait, part)
                if parts:
                    cache.put(tts.voice, text, np.concatenate(parts))
            except Exception as exc:          # TtsError: handed to the loop, raised there
                loop.call_soon_threadsafe(queue.put_nowait, exc)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, _END)

        self.stack.tts_pool.submit(work)
        done = False
        try:
            while (item := await queue.get()) is not _END:
                if isinstance(item, Exception):
                    raise item
                yield item
            done = True
        finally:
            if not done:                 # the send failed (client gone): stop rendering
                self._stop.set()

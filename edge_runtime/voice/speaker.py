"""Speaker: the ``AnswerSink`` that turns answer pieces into sound as they arrive.

Pieces (on the event loop) go through a ``SentenceChunker``; each finished chunk is
rendered on the TTS thread (or taken from the audio cache) and handed to the player,
so the first sentence plays while the LLM is still writing the rest. ``cancel`` (barge-in)
drops what is queued and silences the player at once; ``reset`` (a cloud answer failed
midway) drops what is queued and starts over.
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Future

import numpy as np

from ..clock import SYSTEM_CLOCK, Clock
from ..tts import SentenceChunker

log = logging.getLogger(__name__)

MAX_PENDING_CHUNKS = 64


class Speaker:
    def __init__(self, stack, player, *, clock: Clock = SYSTEM_CLOCK,
                 first_chunk_chars: int | None = None) -> None:
        self.stack = stack
        self.player = player
        self.clock = clock
        t = stack.cfg.tts
        n = t.first_chunk_chars if first_chunk_chars is None else first_chunk_chars
        self.chunker = SentenceChunker(first_min_chars=n, first_max_chars=t.first_chunk_max_chars)
        self._gen = 0                  # bumped by cancel/reset: queued renders then skip
        self._pending: list[Future] = []
        self.first_audio_at: float | None = None    # clock time of the first play()
        self.chunks_spoken = 0
        self.cache_hits = 0
        self.cancelled = False

    # -- AnswerSink --------------------------------------------------------------------
    def piece(self, text: str) -> None:
        for chunk in self.chunker.feed(text):
            self._submit(chunk)

    def reset(self) -> None:
        self._gen += 1
        self.chunker.reset()
        self.player.stop()

    # -- control -----------------------------------------------------------------------
    def finish(self) -> None:
        """The answer is complete: speak what the chunker still holds."""
        for chunk in self.chunker.flush():
            self._submit(chunk)

    def cancel(self) -> None:
        """Barge-in: silence now, render nothing more."""
        self.cancelled = True
        self._gen += 1
        self.player.stop()

    async def rendered(self) -> None:
        """Wait until every queued chunk is rendered and handed to the player."""
        pending, self._pending = self._pending, []
        if pending:
            await asyncio.gather(*(asyncio.wrap_future(f) for f in pending),
                                 return_exceptions=True)

    # -- the TTS thread ------------------------------------------------------------------
    def _submit(self, chunk: str) -> None:
        if self.cancelled or self.stack.tts is None:
            return
        self._pending = [f for f in self._pending if not f.done()]
        if len(self._pending) >= MAX_PENDING_CHUNKS:
            log.warning("speech queue full; dropping a chunk of %d characters", len(chunk))
            return
        self._pending.append(self.stack.tts_pool.submit(self._render, chunk, self._gen))

    def _render(self, chunk: str, gen: int) -> None:
        tts, cache = self.stack.tts, self.stack.audio_cache
        if gen != self._gen:
            return
        audio = cache.get(tts.voice, chunk)
        if audio is not None:
            self.cache_hits += 1
            self._play(audio, gen)
            return
        parts = []
        for part in tts.synthesize(chunk):
            if gen != self._gen:
                return
            self._play(part, gen)
            parts.append(part)
        if parts:
            cache.put(tts.voice, chunk, np.concatenate(parts))

    def _play(self, audio: np.ndarray, gen: int) -> None:
        if gen != self._gen or not len(audio):
            return
        if self.first_audio_at is None:
            self.first_audio_at = self.clock.monotonic()
        self.player.play(audio, self.stack.tts.sample_rate)
        self.chunks_spoken += 1

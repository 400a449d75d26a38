"""Speech to text over Wyoming: audio in, ``transcript`` out, with streamed pieces.

Streaming (``transcript-start``, ``transcript-chunk``..., then ``transcript`` and
``transcript-stop``) follows the protocol's rule that chunks are *appended*: they join
into the transcript. Whisper's partial guesses can still change, so a chunk carries only
words two partials in a row agree on, and only when they extend what was sent; the rest
comes in a last chunk at the end. If the final transcript disagrees with what was sent
(rare), the ``transcript`` event is the authority.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import numpy as np
from wyoming.asr import Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.event import Event

log = logging.getLogger(__name__)
RATE = 16_000
Send = Callable[[Event], Awaitable[None]]


def stable_prefix(a: str, b: str) -> str:
    """The words two guesses share from the start (with the trailing space)."""
    out = []
    for x, y in zip(a.split(), b.split(), strict=False):
        if x != y:
            break
        out.append(x)
    return " ".join(out) + " " if out else ""


class AsrListener:
    """One ``transcribe`` request: feeds the stack's ASR stream on its worker thread."""

    def __init__(self, stack, send: Send, *, streaming: bool, partial_every_s: float,
                 language: str | None = None) -> None:
        self.stack = stack
        self.send = send
        self.streaming = streaming
        self.language = language
        self.partial_every = int(partial_every_s * RATE)
        self.stream = stack.asr.stream()
        self.samples = 0
        self._since = 0
        self._partial: asyncio.Future | None = None
        self._last = ""                  # the previous partial guess
        self.sent = ""                   # text sent in chunks so far
        self._started = False

    async def accept(self, x: np.ndarray) -> None:
        if not len(x):
            return
        self.stack.asr_pool.submit(self.stream.accept, x)
        self.samples += len(x)
        self._since += len(x)
        if self._partial is not None and self._partial.done():
            await self._take_partial()
        if self.streaming and self._partial is None and self._since >= self.partial_every:
            self._since = 0
            self._partial = asyncio.wrap_future(self.stack.asr_pool.submit(self.stream.partial))

    async def _take_partial(self) -> None:
        fut, self._partial = self._partial, None
        if fut is None or fut.cancelled() or fut.exception() is not None:
            return
        guess = fut.result() or ""
        stable = stable_prefix(self._last, guess)
        self._last = guess
        if len(stable) > len(self.sent) and stable.startswith(self.sent):
            await self._chunk(stable[len(self.sent):])

    async def _chunk(self, text: str) -> None:
        if not self._started:
            self._started = True
            await self.send(TranscriptStart(language=self.language).event())
        self.sent += text
        await self.send(TranscriptChunk(text=text).event())

    async def finish(self) -> str:
        """Send the final transcript (and close the chunk stream); returns its text."""
        if self._partial is not None:
            await asyncio.wait([self._partial])
            await self._take_partial()
        if self.samples == 0:
            text = ""                    # a transcribe with no audio: nothing was said
        else:
            t = await asyncio.wrap_future(self.stack.asr_pool.submit(self.stream.finish))
            text = t.text.strip()
        if self.streaming:
            if text.startswith(self.sent.strip()) and len(text) > len(self.sent.strip()):
                await self._chunk(text[len(self.sent):] if text.startswith(self.sent)
                                  else text[len(self.sent.strip()):])
            elif not self._started:
                await self.send(TranscriptStart(language=self.language).event())
                self._started = True
        await self.send(Transcript(text=text, language=self.language).event())
        if self.streaming:
            await self.send(TranscriptStop().event())
        return text

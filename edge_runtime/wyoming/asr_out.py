"""Speech to text over Wyoming: audio in, ``transcript`` out, with streamed pieces.

Streaming (``transcript-start``, ``transcript-chunk``..., then ``transcript`` and
``transcript-stop``) follows the protocol's rule that chunks are *appended*: they join
into the transcript. Whisper's partial guesses can still change, so a chunk carries only
words two partials in a row agree on, and only when they extend what was sent; the rest
comes in a last chunk at the end. Words sent are committed: the final decode (a third
guess, over more audio) supplies only what follows them. It is aligned to the committed words
by word (up to case and punctuation), so a final that re-hears an early word differently
("Turn on the" streamed, "Pern on the kitchen lights." decoded) still joins into one text
with the chunks ("Turn on the kitchen lights."). Only a final that shares no word with the
chunks replaces them: then the ``transcript`` event is the authority.
"""
from __future__ import annotations

import asyncio
import difflib
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from wyoming.asr import Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.event import Event

from ..vad import Endpointer, SpeechAudio, SpeechEnd, SpeechPause, SpeechResume

log = logging.getLogger(__name__)
RATE = 16_000
Send = Callable[[Event], Awaitable[None]]


def _norm(word: str) -> str:
    return "".join(c for c in word.lower() if c.isalnum())


def same_words(a: list[str], b: list[str]) -> bool:
    """Equal up to case and punctuation (Whisper's partials and final differ in both)."""
    return len(a) == len(b) and all(_norm(x) == _norm(y) for x, y in zip(a, b, strict=True))


def stable_prefix(a: str, b: str) -> str:
    """The words two guesses share from the start, as ``b`` writes them (with the
    trailing space); case and punctuation do not count as a difference."""
    out = []
    for x, y in zip(a.split(), b.split(), strict=False):
        if _norm(x) != _norm(y):
            break
        out.append(y)
    return " ".join(out) + " " if out else ""


def after_committed(sent: list[str], final: list[str]) -> int | None:
    """Where, in the final decode's words, the words after the committed ones start; None
    when the two share no word. Committed words the final re-heard differently at the end
    are skipped one for one."""
    m = difflib.SequenceMatcher(a=[_norm(w) for w in sent], b=[_norm(w) for w in final],
                                autojunk=False)
    blocks = [b for b in m.get_matching_blocks() if b.size]
    if not blocks:
        return None
    last = blocks[-1]
    unmatched_tail = len(sent) - (last.a + last.size)
    return min(len(final), last.b + last.size + unmatched_tail)


_FRAME_POOL: ThreadPoolExecutor | None = None


def frame_pool() -> ThreadPoolExecutor:
    """One thread runs every Wyoming stream's per-frame models (VAD ~0.1 ms a frame, the
    wake word ~0.3 ms a 30 ms stride), off the event loop; each stream awaits its own calls,
    so a stream's frames stay in order."""
    global _FRAME_POOL
    if _FRAME_POOL is None:
        _FRAME_POOL = ThreadPoolExecutor(1, thread_name_prefix="wyoming-frames")
    return _FRAME_POOL


class AsrListener:
    """One ``transcribe`` request: the stack's VAD picks the speech out of the audio (as in
    the voice loop: silence is not decoded, and the final decode starts at the first pause,
    so it is usually done when ``audio-stop`` arrives); the ASR stream runs on its worker
    thread."""

    def __init__(self, stack, send: Send, *, streaming: bool, partial_every_s: float,
                 language: str | None = None) -> None:
        self.stack = stack
        self.send = send
        self.streaming = streaming
        self.language = language
        self.partial_every = int(partial_every_s * RATE)
        self.stream = stack.asr.stream()
        self.endpointer = Endpointer(stack.vad.fork(), stack.cfg.vad)
        self._paused = False
        self._held: list[np.ndarray] = []
        self.samples = 0
        self._since = 0
        self._partial: asyncio.Future | None = None
        self._last = ""                  # the previous partial guess
        self.sent = ""                   # text sent in chunks so far
        self._started = False

    async def feed(self, x: np.ndarray) -> None:
        """Audio as it arrives (float32 mono 16 kHz)."""
        if not len(x):
            return
        loop = asyncio.get_running_loop()
        for ev in await loop.run_in_executor(frame_pool(), self.endpointer.feed, x):
            await self._on_vad(ev)

    async def _on_vad(self, ev) -> None:
        if isinstance(ev, SpeechAudio):
            if self._paused:
                self._held.append(ev.samples)     # kept only if speech resumes
            else:
                await self.accept(ev.samples)
        elif isinstance(ev, SpeechPause):
            self._paused = True
            self.stack.asr_pool.submit(self.stream.prefetch)
        elif isinstance(ev, SpeechResume):
            self._paused, held, self._held = False, self._held, []
            for samples in held:
                await self.accept(samples)
        elif isinstance(ev, SpeechEnd):
            self._paused, self._held = False, []  # the tail silence is not decoded

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
        sent, words = self.sent.split(), stable.split()
        if len(words) > len(sent) and same_words(words[:len(sent)], sent):
            await self._chunk(" ".join(words[len(sent):]) + " ")

    async def _chunk(self, text: str) -> None:
        if not self._started:
            self._started = True
            await self.send(TranscriptStart(language=self.language).event())
        self.sent += text
        await self.send(TranscriptChunk(text=text).event())

    async def finish(self) -> str:
        """Send the final transcript (and close the chunk stream); returns its text."""
        for ev in self.endpointer.flush():
            await self._on_vad(ev)
        if self._partial is not None:
            await asyncio.wait([self._partial])
            await self._take_partial()
        if self.samples == 0:
            text = ""                    # a transcribe with no audio: nothing was said
        else:
            t = await asyncio.wrap_future(self.stack.asr_pool.submit(self.stack.finish,
                                                                  self.stream))
            text = t.text.strip()
        if self.streaming:
            sent, words = self.sent.split(), text.split()
            cut = after_committed(sent, words) if sent else None
            if cut is not None:
                # the committed words stand, in the chunks' spelling; the final adds the
                # rest, so the chunks join into exactly the transcript
                rest = " ".join(words[cut:])
                if rest:
                    await self._chunk(rest)      # (appends it to self.sent)
                text = self.sent.strip()
            elif not sent and text:
                await self._chunk(text)
            elif not self._started:
                await self.send(TranscriptStart(language=self.language).event())
                self._started = True
        await self.send(Transcript(text=text, language=self.language).event())
        if self.streaming:
            await self.send(TranscriptStop().event())
        return text

"""Sentence chunker: answer pieces in (as an LLM streams them), speakable chunks out.

A chunk is released as soon as a sentence ends (``.``, ``!``, ``?``, ``;``, ``:`` or a
line break, followed by more text), so speech starts before the answer is complete.
The first chunk may also end at a comma once it holds ``first_min_chars``, and is cut
at a space once it would pass ``first_max_chars``: a short first chunk renders sooner
(Piper's time grows with the chunk), and an LLM that writes a long clause
without punctuation does not hold back the first sound. Abbreviations ("Dr.", "e.g.")
and decimals ("3.5") do not end sentences; chunks longer than ``max_chars`` are split
at a space.
"""
from __future__ import annotations

import re

_ABBREV = {"mr", "mrs", "ms", "dr", "st", "vs", "etc", "e.g", "i.e", "no", "jr", "sr", "prof",
           "approx", "min", "max", "fig", "inc", "ltd", "co"}
_END = re.compile(r"[.!?;:]+[\"')\]]*\s+|\n+")
_COMMA = re.compile(r",\s+")


class SentenceChunker:
    def __init__(self, first_min_chars: int = 24, max_chars: int = 240,
                 first_max_chars: int = 56) -> None:
        self.first_min_chars = first_min_chars
        self.first_max_chars = min(max_chars, max(first_max_chars, first_min_chars + 1))
        self.max_chars = max_chars
        self._buf = ""
        self._emitted = 0

    def reset(self) -> None:
        self._buf = ""
        self._emitted = 0

    def feed(self, piece: str) -> list[str]:
        """Add text; return the chunks that are complete now."""
        self._buf += piece
        out: list[str] = []
        while (chunk := self._next()) is not None:
            out.append(chunk)
        return out

    def flush(self) -> list[str]:
        """The answer is complete: whatever remains is the last chunk."""
        rest, self._buf = self._buf.strip(), ""
        out = self._split_long(rest) if rest else []
        self._emitted += len(out)
        return out

    def _next(self) -> str | None:
        end = self._sentence_end()
        if self._emitted == 0:
            # the earliest boundary wins, so a streamed answer and the same answer given
            # whole (a cache hit) are cut alike, and their audio is cached alike
            comma = next((m for m in _COMMA.finditer(self._buf)
                          if m.start() >= self.first_min_chars), None)
            first = min((m for m in (end, comma) if m is not None), key=lambda m: m.start(),
                        default=None)
            if first is not None and first.start() <= self.first_max_chars:
                return self._take(first.end())
            if len(self._buf) > self.first_max_chars:
                cut = self._buf.rfind(" ", self.first_min_chars, self.first_max_chars)
                if cut > 0:
                    return self._take(cut + 1)
            if first is not None:
                return self._take(first.end())
        elif end is not None:
            return self._take(end.end())
        if len(self._buf) > self.max_chars:
            cut = self._buf.rfind(" ", 0, self.max_chars)
            return self._take(cut + 1 if cut > 0 else self.max_chars)
        return None

    def _sentence_end(self) -> re.Match | None:
        for m in _END.finditer(self._buf):
            head = self._buf[:m.start()].rstrip()
            if not head.strip():
                continue
            if m.group(0).startswith(".") and self._not_an_end(head):
                continue
            return m
        return None

    def _take(self, end: int) -> str | None:
        chunk, self._buf = self._buf[:end].strip(), self._buf[end:]
        if not chunk or not any(c.isalnum() for c in chunk):
            return None if not self._buf else self._next()
        self._emitted += 1
        return chunk

    @staticmethod
    def _not_an_end(head: str) -> bool:
        word = head.rsplit(None, 1)[-1].lower() if head.split() else ""
        word = word.lstrip("(\"'")
        return word in _ABBREV or (len(word) == 1 and word.isalpha() and word != "i")

    def _split_long(self, text: str) -> list[str]:
        out = []
        while len(text) > self.max_chars:
            cut = text.rfind(" ", 0, self.max_chars)
            cut = cut if cut > 0 else self.max_chars
            out.append(text[:cut].strip())
            text = text[cut:].strip()
        return out + ([text] if text else [])

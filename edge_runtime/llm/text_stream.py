"""Turn streamed token ids into text safely, and count sentences for the sentence cap.

Byte-level BPE tokens can split a multi-byte UTF-8 character; :class:`Utf8StreamDecoder`
keeps the incomplete tail until the next token completes it, so no half character (and no
U+FFFD for a merely split character) is ever yielded.
"""
from __future__ import annotations

import codecs
from collections.abc import Sequence
from functools import lru_cache

_TERMINATORS = ".!?…"
_CLOSERS = "\"')]”’»*"
_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "vs", "etc", "e.g", "i.e", "prof", "jr", "sr",
                  "approx", "fig", "mt"}


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table (byte-level BPE)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs), strict=True))


def byte_level_to_bytes(token: str) -> bytes:
    """A byte-level BPE token string back to its raw bytes (unknown chars: as UTF-8)."""
    inv = _inverse_table()
    try:
        return bytes(inv[c] for c in token)
    except KeyError:
        return token.encode("utf-8")


def spm_piece_to_bytes(token: str) -> bytes:
    """A SentencePiece token to its raw bytes: ``<0xAB>`` byte tokens, ``▁`` as a space."""
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        try:
            return bytes([int(token[3:5], 16)])
        except ValueError:
            pass
    return token.replace("\u2581", " ").encode("utf-8")


@lru_cache(maxsize=1)
def _inverse_table() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


class Utf8StreamDecoder:
    """Feeds each token's bytes to an incremental UTF-8 decoder.

    ``token_bytes[i]`` is the byte string of token id ``i``; ids listed in ``skip`` (control
    tokens) produce no text. Invalid byte sequences become U+FFFD rather than raising.
    """

    def __init__(self, token_bytes: Sequence[bytes], skip: frozenset[int] = frozenset()) -> None:
        self._bytes = token_bytes
        self._skip = skip
        self._dec = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, token_id: int) -> str:
        if token_id in self._skip or token_id >= len(self._bytes):
            return ""
        return self._dec.decode(self._bytes[token_id])

    def flush(self) -> str:
        """Whatever is left at the end of the stream (an unfinished character -> U+FFFD)."""
        return self._dec.decode(b"", final=True)

    def reset(self) -> None:
        self._dec.reset()


class SentenceCounter:
    """Counts finished sentences in streamed text and says where the cap is reached.

    A sentence ends at ``.``, ``!``, ``?`` or ``…`` (plus closing quotes/brackets) followed
    by whitespace, except after a short abbreviation ("Dr.", "e.g.") or a lone initial; a
    decimal point ("3.14") is not followed by whitespace, so it never counts.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit          # 0 = no cap
        self.count = 0
        self._text = ""             # everything seen so far (answers are short)
        self._pending = False       # a terminator (+closers) seen, waiting for whitespace

    def feed(self, piece: str) -> tuple[str, bool]:
        """Return (text to emit, stop). When the cap is reached, the text ends right after
        the final sentence's terminator; the rest of ``piece`` is dropped."""
        for i, ch in enumerate(piece):
            if self._pending and ch.isspace():
                self._pending = False
                if not self._is_abbreviation(self._text + piece[:i]):
                    self.count += 1
                    if self.limit and self.count >= self.limit:
                        self._text += piece[:i]
                        return piece[:i], True
            elif ch in _TERMINATORS:
                self._pending = True
            elif self._pending and ch in _CLOSERS:
                pass
            else:
                self._pending = False
        self._text += piece
        return piece, False

    def finish(self) -> int:
        """Count a trailing sentence that ended with the stream; return the total."""
        if self._pending and not self._is_abbreviation(self._text):
            self.count += 1
            self._pending = False
        return self.count

    @staticmethod
    def _is_abbreviation(text: str) -> bool:
        head = text.rstrip(_CLOSERS)
        if not head or head[-1] != ".":
            return False
        word = head[:-1].split()[-1:] or [""]
        w = word[0].lower().lstrip("(\"'")
        return w in _ABBREVIATIONS or (len(w) == 1 and w.isalpha())

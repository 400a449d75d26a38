"""Rendered-audio cache: (voice, chunk text) -> int16 audio, LRU bounded by bytes.

Cached answers and skill answers repeat word for word, so their speech does too: a hit
plays at once instead of waiting ~0.2 s for Piper. Thread-safe (the TTS worker writes,
anyone reads).
"""
from __future__ import annotations

import collections
import threading

import numpy as np


class AudioCache:
    def __init__(self, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._d: collections.OrderedDict[tuple[str, str], np.ndarray] = \
            collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(voice: str, text: str) -> tuple[str, str]:
        return voice, " ".join(text.split())

    def get(self, voice: str, text: str) -> np.ndarray | None:
        k = self.key(voice, text)
        with self._lock:
            audio = self._d.get(k)
            if audio is None:
                self.misses += 1
                return None
            self._d.move_to_end(k)
            self.hits += 1
            return audio

    def put(self, voice: str, text: str, audio: np.ndarray) -> None:
        if audio.nbytes > self.max_bytes:
            return
        k = self.key(voice, text)
        with self._lock:
            old = self._d.pop(k, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._d[k] = audio
            self._bytes += audio.nbytes
            while self._bytes > self.max_bytes:
                _, dropped = self._d.popitem(last=False)
                self._bytes -= dropped.nbytes

    def __len__(self) -> int:
        return len(self._d)

    @property
    def bytes(self) -> int:
        return self._bytes

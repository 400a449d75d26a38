"""Audio sources: blocking iterators of float32 mono 16 kHz chunks.

``FileSource`` plays samples (a WAV, a test recording) as a microphone would, paced in
real time when asked; ``MicSource`` reads a sound device through ``sounddevice``
(PortAudio) with a bounded queue that drops the oldest audio when the reader falls
behind. Both end their iterator at end of input or after ``close()``.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np

from ..clock import SYSTEM_CLOCK, Clock
from .errors import AudioDeviceError
from .format import SAMPLE_RATE, resample

log = logging.getLogger(__name__)


class FileSource:
    """Samples as a microphone: ``chunk`` samples at a time, optionally paced in real time.

    ``tail_silence_s`` of silence is appended so an endpointer sees the end of speech.
    """

    def __init__(self, samples: np.ndarray, *, chunk: int = 512, realtime: bool = False,
                 tail_silence_s: float = 1.0, clock: Clock = SYSTEM_CLOCK,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.samples = np.concatenate([samples.astype(np.float32, copy=False),
                                       np.zeros(int(tail_silence_s * SAMPLE_RATE), np.float32)])
        self.chunk = chunk
        self.realtime = realtime
        self.clock = clock
        self.sleep = sleep
        self._closed = threading.Event()
        self.started_at: float | None = None      # clock.monotonic() of the first chunk

    def close(self) -> None:
        self._closed.set()

    def __iter__(self) -> Iterator[np.ndarray]:
        t0 = self.started_at = self.clock.monotonic()
        for i, start in enumerate(range(0, len(self.samples), self.chunk)):
            if self._closed.is_set():
                return
            if self.realtime:        # chunk i is complete at t0 + (i + 1) * duration
                wait = t0 + (i + 1) * self.chunk / SAMPLE_RATE - self.clock.monotonic()
                if wait > 0:
                    self.sleep(wait)
            yield self.samples[start:start + self.chunk]


class MicSource:
    """A sounddevice input stream at 16 kHz mono (or the device's rate, resampled)."""

    def __init__(self, device: int | str | None = None, *, chunk: int = 512,
                 max_queue_chunks: int = 64, sample_rate: int = SAMPLE_RATE) -> None:
        try:
            import sounddevice as sd
        except (ImportError, OSError) as exc:
            raise AudioDeviceError(f"sounddevice is unavailable ({exc})",
                                   hint="pip install sounddevice; apt install libportaudio2"
                                   ) from None
        self._q: queue.Queue = queue.Queue(maxsize=max_queue_chunks)
        self._closed = threading.Event()
        self.dropped = 0
        self.rate = sample_rate
        self.chunk = chunk
        try:
            self._stream = sd.InputStream(samplerate=sample_rate, channels=1, dtype="float32",
                                          blocksize=int(chunk * sample_rate / SAMPLE_RATE),
                                          device=device, callback=self._callback)
            self._stream.start()
        except Exception as exc:  # PortAudioError, ValueError for a bad device
            raise AudioDeviceError(f"cannot open input device {device!r}: {exc}",
                                   hint="list devices with `python -m sounddevice`; set "
                                        "audio.input_device") from None

    def _callback(self, indata, frames, time_info, status) -> None:  # PortAudio thread
        block = indata[:, 0].copy()
        if self.rate != SAMPLE_RATE:
            block = resample(block, self.rate, SAMPLE_RATE)
        try:
            self._q.put_nowait(block)
        except queue.Full:           # the reader fell behind: drop the oldest audio
            try:
                self._q.get_nowait()
            except queue.Empty:
                pass
            self.dropped += 1
            self._q.put_nowait(block)

    def close(self) -> None:
        self._closed.set()
        try:
            self._stream.stop()
            self._stream.close()
        except Exception:
            log.debug("input stream close failed", exc_info=True)

    def __iter__(self) -> Iterator[np.ndarray]:
        while not self._closed.is_set():
            try:
                yield self._q.get(timeout=0.5)
            except queue.Empty:
                continue

"""Audio out: players that can be stopped at once (barge-in).

``play`` queues int16 mono audio and returns; ``stop`` silences playback and drops what
is queued; ``playing`` says whether sound is (still) coming out; ``recent_peak`` is the
peak level of what played in the last ~0.2 s (the echo guard's reference).
``VirtualSpeaker`` plays into memory paced by a clock: for tests, ``ask --speak`` and
benchmarks. ``DevicePlayer`` plays through ``sounddevice``.
"""
from __future__ import annotations

import collections
import logging
import threading
import time

import numpy as np

from ..clock import SYSTEM_CLOCK, Clock
from .errors import AudioDeviceError
from .format import int16_to_float, resample_int16

log = logging.getLogger(__name__)


def _peak(x: np.ndarray) -> float:
    return float(np.abs(int16_to_float(x)).max()) if len(x) else 0.0


class VirtualSpeaker:
    """Plays into memory in (clock) real time; keeps what was actually heard."""

    def __init__(self, sample_rate: int = 22050, clock: Clock = SYSTEM_CLOCK,
                 max_seconds: float = 120.0) -> None:
        self.sample_rate = sample_rate
        self.clock = clock
        self.max_samples = int(max_seconds * sample_rate)
        self._lock = threading.Lock()
        self._chunks: list[np.ndarray] = []
        self._heard = np.zeros(0, np.int16)
        self._start: float | None = None        # clock time the queued audio started
        self._end = 0.0                         # clock time the queued audio ends
        self.first_audio_at: float | None = None
        self.stopped_at: float | None = None

    def play(self, audio: np.ndarray, sample_rate: int) -> None:
        audio = resample_int16(audio, sample_rate, self.sample_rate)
        with self._lock:
            now = self.clock.monotonic()
            if self.first_audio_at is None:
                self.first_audio_at = now
            if now >= self._end:                # idle: a new stretch of sound starts now
                self._flatten_heard()
                self._start = now
                self._end = now
            queued = sum(len(c) for c in self._chunks)
            room = self.max_samples - queued
            if room <= 0:
                log.warning("virtual speaker full; dropping %d samples", len(audio))
                return
            audio = audio[:room]
            self._chunks.append(audio)
            self._end += len(audio) / self.sample_rate

    def _flatten_heard(self) -> None:
        self._heard = self.heard()
        self._chunks = []

    @property
    def playing(self) -> bool:
        return self.clock.monotonic() < self._end

    def stop(self) -> None:
        with self._lock:
            now = self.clock.monotonic()
            if now < self._end and self._start is not None:
                keep = int((now - self._start) * self.sample_rate)
                cur = np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.int16)
                self._chunks = [cur[:keep]]
                self._end = now
                self.stopped_at = now

    def recent_peak(self, window_s: float = 0.2) -> float:
        with self._lock:
            now = self.clock.monotonic()
            if self._start is None or not self._chunks or now >= self._end + window_s:
                return 0.0
            cur = np.concatenate(self._chunks)
            pos = int((min(now, self._end) - self._start) * self.sample_rate)
            return _peak(cur[max(0, pos - int(window_s * self.sample_rate)):pos])

    def heard(self) -> np.ndarray:
        """Everything played so far (int16), as a listener would have heard it."""
        cur = [c for c in self._chunks if len(c)]
        return np.concatenate([self._heard, *cur]) if cur else self._heard

    def wait_s(self) -> float:
        """Seconds until the queued audio has finished playing."""
        return max(0.0, self._end - self.clock.monotonic())


class DevicePlayer:
    """A sounddevice output stream fed from a bounded queue of chunks."""

    def __init__(self, device: int | str | None = None, sample_rate: int = 22050,
                 max_seconds: float = 120.0) -> None:
        try:
            import sounddevice as sd
        except (ImportError, OSError) as exc:
            raise AudioDeviceError(f"sounddevice is unavailable ({exc})",
                                   hint="pip install sounddevice; apt install libportaudio2"
                                   ) from None
        self.sample_rate = sample_rate
        self.max_samples = int(max_seconds * sample_rate)
        self._q: collections.deque[np.ndarray] = collections.deque()
        self._queued = 0
        self._lock = threading.Lock()
        self._recent: collections.deque[tuple[float, float]] = collections.deque(maxlen=64)
        self._audible_until = 0.0
        self._latency = 0.0
        self.first_audio_at: float | None = None
        try:
            self._stream = sd.OutputStream(samplerate=sample_rate, channels=1, dtype="int16",
                                           device=device, callback=self._callback,
                                           blocksize=int(sample_rate * 0.02))
            self._stream.start()
            self._latency = float(self._stream.latency)
        except Exception as exc:
            raise AudioDeviceError(f"cannot open output device {device!r}: {exc}",
                                   hint="list devices with `python -m sounddevice`; set "
                                        "audio.output_device") from None

    def _callback(self, outdata, frames, time_info, status) -> None:  # PortAudio thread
        out = outdata[:, 0]
        filled = 0
        with self._lock:
            while filled < frames and self._q:
                head = self._q[0]
                n = min(len(head), frames - filled)
                out[filled:filled + n] = head[:n]
                filled += n
                if n == len(head):
                    self._q.popleft()
                else:
                    self._q[0] = head[n:]
                self._queued -= n
        out[filled:] = 0
        now = time.monotonic()
        if filled:
            self._recent.append((now, _peak(out[:filled])))
            self._audible_until = now + frames / self.sample_rate + self._latency

    def play(self, audio: np.ndarray, sample_rate: int) -> None:
        audio = resample_int16(audio, sample_rate, self.sample_rate)
        with self._lock:
            room = self.max_samples - self._queued
            if room <= 0:
                log.warning("playback queue full; dropping %d samples", len(audio))
                return
            if self.first_audio_at is None:
                self.first_audio_at = time.monotonic()
            self._q.append(audio[:room])
            self._queued += len(audio[:room])

    @property
    def playing(self) -> bool:
        """Queued audio, or audio handed to the device that may still be sounding."""
        return self._queued > 0 or time.monotonic() < self._audible_until

    def stop(self) -> None:
        with self._lock:
            self._q.clear()
            self._queued = 0
            self._audible_until = 0.0

    def recent_peak(self, window_s: float = 0.2) -> float:
        """Peak of what was handed to the device in the last ``window_s`` + output latency."""
        since = time.monotonic() - window_s - self._latency
        return max((p for t, p in list(self._recent) if t >= since), default=0.0)

    def close(self) -> None:
        try:
            self._stream.stop()
            self._stream.close()
        except Exception:
            log.debug("output stream close failed", exc_info=True)

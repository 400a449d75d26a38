"""Endpointing: per-frame speech probabilities -> speech start, pause, and end events.

All times are *audio* seconds (samples fed / 16 kHz), so the state machine is exact and
needs no clock; a caller that feeds a live microphone maps audio time to wall time.

Idle: a ring of ``preroll_ms`` of audio is kept. ``start_ms`` of frames at or above
``threshold`` start an utterance (``SpeechStart``); the utterance begins with the
pre-roll, so onsets are not clipped. Every frame that joins the utterance is also
emitted (``SpeechAudio``, in order) for a streaming recognizer. In speech, frames below
``neg_threshold`` count as silence (frames between the thresholds continue whatever
came before); after ``pause_ms`` of silence a ``SpeechPause`` carries the utterance so
far (a caller may start the final transcription early and keep it if speech does not
resume; ``SpeechResume`` says it did); after ``end_silence_ms`` a ``SpeechEnd`` carries
the utterance with at most ``pause_ms`` of trailing silence, so it equals the pause
snapshot. An utterance also
ends at ``max_utterance_s``; one with under ``min_speech_ms`` of speech ends as
``too_short`` (a cough, a click).
"""
from __future__ import annotations

import collections
from dataclasses import dataclass

import numpy as np

from ..audio.format import SAMPLE_RATE
from ..config import VadConfig
from .base import VadEngine

RATE = SAMPLE_RATE


@dataclass(frozen=True)
class SpeechStart:
    t_s: float                      # audio time of the first speech frame's start


@dataclass(frozen=True)
class SpeechAudio:
    samples: np.ndarray             # audio that joined the utterance (pre-roll, then frames)


@dataclass(frozen=True)
class SpeechPause:
    t_s: float                      # audio time when the pause was noticed
    audio: np.ndarray               # the utterance so far (float32, 16 kHz)


@dataclass(frozen=True)
class SpeechResume:
    t_s: float                      # speech came back after a SpeechPause (not an end)


@dataclass(frozen=True)
class SpeechEnd:
    audio: np.ndarray               # the utterance: pre-roll + speech + short tail
    t_start: float                  # onset (audio seconds)
    t_speech_end: float             # end of the last speech frame
    t_detected: float               # when the endpoint was decided
    reason: str                     # "silence" | "max_length" | "too_short" | "flush"


Event = SpeechStart | SpeechAudio | SpeechPause | SpeechResume | SpeechEnd


class Endpointer:
    def __init__(self, vad: VadEngine, cfg: VadConfig | None = None) -> None:
        """``cfg`` is the config's ``[vad]`` section (validated at load by ``Config``)."""
        self.vad = vad
        self.cfg = cfg or VadConfig()
        self.frame = vad.frame_samples
        ms = lambda v: max(1, int(round(v / 1000.0 * RATE / self.frame)))  # noqa: E731
        self._start_frames = ms(self.cfg.start_ms)
        self._end_frames = ms(self.cfg.end_silence_ms)
        self._pause_frames = min(ms(self.cfg.pause_ms), self._end_frames)
        self._min_speech_frames = ms(self.cfg.min_speech_ms)
        self._max_frames = int(self.cfg.max_utterance_s * RATE / self.frame)
        self._pre: collections.deque = collections.deque(
            maxlen=max(1, int(self.cfg.preroll_ms / 1000.0 * RATE / self.frame)))
        self._pending = np.zeros(0, dtype=np.float32)
        self.last_prob = 0.0
        self.reset()

    def reset(self) -> None:
        """Back to idle (keeps the VAD's context: audio is continuous)."""
        self._frames_in = 0
        self._in_speech = False
        self._run = 0            # consecutive speech frames while idle
        self._utt: list[np.ndarray] = []
        self._speech_frames = 0
        self._silence = 0
        self._t_start = 0.0
        self._last_speech_end = 0.0
        self._pre.clear()

    @property
    def in_speech(self) -> bool:
        return self._in_speech

    @property
    def now_s(self) -> float:
        """Audio seconds consumed so far (frames processed)."""
        return self._frames_in * self.frame / RATE

    def feed(self, samples: np.ndarray) -> list[Event]:
        """Feed float32 mono 16 kHz audio of any length; returns the events it caused."""
        buf = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        n = len(buf) // self.frame
        self._pending = buf[n * self.frame:]
        events: list[Event] = []
        for i in range(n):
            events.extend(self._frame(buf[i * self.frame:(i + 1) * self.frame]))
        return events

    def flush(self) -> list[Event]:
        """End of stream: an utterance in progress ends now (reason "flush")."""
        if not self._in_speech:
            return []
        return [self._end("flush" if self._speech_frames >= self._min_speech_frames
                          else "too_short")]

    # -- the state machine --------------------------------------------------------------
    def _frame(self, frame: np.ndarray) -> list[Event]:
        p = self.last_prob = self.vad.prob(frame)
        self._frames_in += 1
        t_end = self.now_s
        if not self._in_speech:
            self._pre.append(frame)
            self._run = self._run + 1 if p >= self.cfg.threshold else 0
            if self._run < self._start_frames:
                return []
            self._in_speech = True
            self._utt = list(self._pre)
            self._pre.clear()
            self._speech_frames = self._run
            self._silence = 0
            self._t_start = t_end - self._run * self.frame / RATE
            self._last_speech_end = t_end
            return [SpeechStart(self._t_start), SpeechAudio(np.concatenate(self._utt))]
        self._utt.append(frame)
        resumed: list[Event] = [SpeechAudio(frame)]   # + SpeechResume, if speech came back
        if p < self.cfg.neg_threshold:
            self._silence += 1
        elif p >= self.cfg.threshold or self._silence == 0:
            if self._silence >= self._pause_frames and \
                    self._speech_frames >= self._min_speech_frames:
                resumed.append(SpeechResume(t_end))
            self._silence = 0
            self._speech_frames += 1
            self._last_speech_end = t_end
        else:                                    # in the hysteresis band: still silence
            self._silence += 1
        if len(resumed) > 1:
            return resumed
        if len(self._utt) >= self._max_frames:
            return resumed + [self._end("max_length")]
        if self._silence >= self._end_frames:
            return resumed + [self._end("silence" if self._speech_frames >=
                                        self._min_speech_frames else "too_short")]
        if self._silence == self._pause_frames and \
                self._speech_frames >= self._min_speech_frames:
            return resumed + [SpeechPause(t_end, self._trimmed())]
        return resumed

    def _trimmed(self) -> np.ndarray:
        keep = len(self._utt) - max(0, self._silence - self._pause_frames)
        return np.concatenate(self._utt[:keep]) if keep else np.zeros(0, np.float32)

    def _end(self, reason: str) -> SpeechEnd:
        ev = SpeechEnd(self._trimmed(), self._t_start, self._last_speech_end, self.now_s, reason)
        self._in_speech = False
        self._run = 0
        self._utt = []
        self._speech_frames = 0
        self._silence = 0
        return ev

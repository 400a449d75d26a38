"""Wake word: a small detector interface, the microWakeWord backend, and the gate that
keeps a voice session deaf until the wake word is heard.

``WakeDetector.feed`` takes float32 mono 16 kHz audio as it arrives and returns the
detections in it: one per pass of the model's probability over its cutoff, and none
within ``refractory_s`` of the last (an echo, or the word said twice in a row).
``MicroWakeDetector`` runs the ``pymicro-wakeword`` models (okay_nabu, hey_jarvis,
hey_mycroft, alexa: tiny TFLite files carried by the wheel, with its own TFLite C
library; no TensorFlow). A detector holds streaming state: one per audio stream
(loading takes ~10 ms).

``WakeGate`` sits in front of a ``VoiceSession``: while waiting it feeds the detector
only; on the wake word it plays a short listening cue and passes audio to the session;
with no speech within ``timeout_s`` it goes back to waiting, and after an answer it
keeps listening ``follow_up_s`` for a follow-up turn without the wake word.
"""
from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ..audio.format import float_to_int16
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import BadInputError, ModelMissingError

log = logging.getLogger(__name__)

RATE = 16_000
WAKE_WORDS = ("okay_nabu", "hey_jarvis", "hey_mycroft", "alexa")
_STEP_S = 0.01                      # microWakeWord features: one per 10 ms of audio
_INSTALL = "pip install 'edge-runtime[wake]' (pymicro-wakeword)"


@dataclass(frozen=True)
class WakeDetection:
    name: str                       # model id, e.g. "okay_nabu"
    phrase: str                     # what is said, e.g. "Okay Nabu"
    t_s: float                      # audio time of the detection (seconds since start)
    probability: float


@dataclass(frozen=True)
class WakeModelInfo:
    name: str
    phrase: str
    languages: tuple[str, ...]
    version: str


class WakeDetector(Protocol):
    name: str
    phrase: str

    def feed(self, audio: np.ndarray) -> list[WakeDetection]:
        """Float32 mono 16 kHz in; the detections it completes (usually none)."""

    def reset(self) -> None:
        """Forget the stream so far (a new stream starts)."""


def _models_dir() -> Path:
    import importlib.util
    spec = importlib.util.find_spec("pymicro_wakeword")
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissingError("the wake word needs pymicro-wakeword", stage="wake",
                                hint=_INSTALL)
    return Path(spec.submodule_search_locations[0]) / "models"


def wake_models() -> list[WakeModelInfo]:
    """The built-in models (from their JSON configs); [] when the package is missing."""
    try:
        d = _models_dir()
    except ModelMissingError:
        return []
    out = []
    for name in WAKE_WORDS:
        p = d / f"{name}.json"
        if p.is_file():
            c = json.loads(p.read_text(encoding="utf-8"))
            out.append(WakeModelInfo(name, c.get("wake_word", name),
                                     tuple(c.get("trained_languages", ["en"])),
                                     str(c.get("version", ""))))
    return out


def check_wake_word(name: str) -> str:
    if name not in WAKE_WORDS:
        raise BadInputError(f"unknown wake word {name!r}",
                            hint=f"use one of {', '.join(WAKE_WORDS)}", code="bad_wake_word")
    return name


class MicroWakeDetector:
    """One microWakeWord model over one audio stream."""

    def __init__(self, name: str, *, refractory_s: float = 2.0,
                 cutoff: float | None = None) -> None:
        check_wake_word(name)
        d = _models_dir()
        try:
            from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures
            self._model = MicroWakeWord.from_config(d / f"{name}.json")
            self._features = MicroWakeWordFeatures()
        except ImportError as exc:
            raise ModelMissingError(f"the wake word needs {exc.name}", stage="wake",
                                    hint=_INSTALL) from None
        self.name = name
        self.phrase = self._model.wake_word
        self.cutoff = self._model.probability_cutoff if cutoff is None else cutoff
        self.refractory_s = refractory_s
        self.stride = max(1, int(self._model.stride))
        self._steps = 0
        self._above = False
        self._last: float | None = None

    def feed(self, audio: np.ndarray) -> list[WakeDetection]:
        out = []
        for feats in self._features.process_streaming(float_to_int16(audio).tobytes()):
            self._steps += 1
            p = self._model.process_streaming_prob(feats)
            if self._steps % self.stride:
                continue                    # the model runs on every stride-th window only
            above = p is not None and p > self.cutoff
            rising, self._above = above and not self._above, above
            if not rising:                  # one detection per pass over the cutoff
                continue
            t = self._steps * _STEP_S
            if self._last is not None and t - self._last < self.refractory_s:
                continue
            self._last = t
            out.append(WakeDetection(self.name, self.phrase, t, float(p or 0.0)))
        return out

    def reset(self) -> None:
        self._model.reset()
        self._features.reset()
        self._steps = 0
        self._above = False
        self._last = None


def load_wake(name: str, *, refractory_s: float = 2.0) -> MicroWakeDetector | None:
    """The detector for config ``voice.wake_word`` (None for "none")."""
    if name == "none":
        return None
    return MicroWakeDetector(name, refractory_s=refractory_s)


def cue_tone(sample_rate: int, seconds: float = 0.12, freq: float = 880.0) -> np.ndarray:
    """The listening cue: a short soft beep (int16), faded in and out."""
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    env = np.minimum(1.0, np.minimum(t, seconds - t) / 0.02)
    return (0.25 * 32767 * env * np.sin(2 * np.pi * freq * t)).astype(np.int16)


# -- the gate in front of a voice session ------------------------------------------------
_TURN_OVER = {"result", "error", "cancelled", "busy", "no_speech", "speech_ignored"}


class WakeGate:
    """Feeds ``session`` only between a wake word and the end of the conversation.

    Build it, pass ``gate.emit`` as the session's ``emit``, then ``attach`` the session
    and feed the gate instead of the session (``feed``/``finish``, as ``feed_source``
    does). Events: ``wake`` {name, t_s}, ``wake_timeout`` (back to waiting)."""

    def __init__(self, detector: WakeDetector, player, *, emit: Callable[[dict], None],
                 timeout_s: float = 8.0, follow_up_s: float = 0.0,
                 clock: Clock = SYSTEM_CLOCK, cue: bool = True) -> None:
        self.detector = detector
        self.player = player
        self._emit = emit
        self.timeout_s = timeout_s
        self.follow_up_s = follow_up_s
        self.clock = clock
        self.cue = cue
        self.session: Any = None
        self.state = "waiting"             # waiting | listening
        self._deadline = 0.0
        self._speaking = False             # an utterance is being heard
        self._turn = False                 # an answer is being worked out
        self._audio_t = 0.0
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="wake")
        self.detections: list[WakeDetection] = []

    def attach(self, session) -> WakeGate:
        self.session = session
        return self

    def emit(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "speech_start":
            self._speaking = True
        elif kind == "transcript":
            self._speaking, self._turn = False, True
        elif kind in _TURN_OVER:
            self._speaking = self._turn = False
            self._after_turn()
        self._emit(event)

    def _after_turn(self) -> None:
        if self.state != "listening":
            return
        if self.follow_up_s > 0:
            self._deadline = self.clock.monotonic() + self.follow_up_s
        else:
            self._wait()

    def _wait(self) -> None:
        self.state = "waiting"
        self.detector.reset()

    async def feed(self, chunk: np.ndarray) -> None:
        loop = asyncio.get_running_loop()
        self._audio_t += len(chunk) / RATE
        if self.state == "waiting":
            found = await loop.run_in_executor(self._pool, self.detector.feed, chunk)
            if found:
                self._woken(found[0])
            return
        now = self.clock.monotonic()
        if self._speaking or self._turn or self.player.playing:
            self._deadline = max(self._deadline, now + (self.follow_up_s or self.timeout_s))
        elif now >= self._deadline:
            self._emit({"type": "wake_timeout"})
            self._wait()
            return
        await self.session.feed(chunk)

    def _woken(self, det: WakeDetection) -> None:
        self.detections.append(det)
        if self.session is not None and self.player.playing:
            self.session.interrupt()        # the wake word stops an answer being spoken
        self.state = "listening"
        self._deadline = self.clock.monotonic() + self.timeout_s
        if self.cue:
            rate = getattr(self.player, "sample_rate", RATE)
            self.player.play(cue_tone(rate), rate)
        self._emit({"type": "wake", "name": det.name, "t_s": round(self._audio_t, 2)})

    async def finish(self) -> None:
        if self.session is not None and self.state == "listening":
            await self.session.finish()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

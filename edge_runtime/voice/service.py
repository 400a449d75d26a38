"""The voice half of one runtime: loads the stack once and answers WAVs and streams.

Used by the daemon routes (``api.py``) and the CLI (``cli.py``). Model paths come from
the model store when its voice entries are pulled, else from the installed packages.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

import numpy as np

from ..audio.errors import NoSpeechError
from ..audio.format import SAMPLE_RATE, load_audio, wav_bytes
from ..audio.playback import VirtualSpeaker
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import EdgeError, ModelMissingError
from ..types import CancelToken, Timings
from ..vad import Endpointer, SpeechEnd
from .session import VoiceSession
from .speaker import Speaker
from .stack import VoiceStack, model_paths

log = logging.getLogger(__name__)
RATE = SAMPLE_RATE


class VoiceService:
    def __init__(self, runtime, *, clock: Clock = SYSTEM_CLOCK,
                 stack: VoiceStack | None = None) -> None:
        self.runtime = runtime
        self.cfg = runtime.cfg                # [audio] [vad] [asr] [tts] [voice] are read here
        self.clock = clock
        self.stack = stack
        if stack is not None:
            self._listen_for_commands(stack)
        self._owns_stack = False            # close only what this service loaded
        self.error: EdgeError | None = None
        self.listener: Any = None           # the daemon's microphone loop (voice/listener.py)

    @property
    def max_upload_bytes(self) -> int:
        from ..limits import RequestLimits      # the edge policy says what can be valid
        return RequestLimits(max_audio_seconds=self.cfg.audio.max_seconds).max_audio_bytes

    async def start(self) -> None:
        """Load the models off the event loop; a failure is kept and reported per request."""
        if self.stack is not None:
            return
        loop = asyncio.get_running_loop()
        try:
            store = None
            try:
                from ..models.store import ModelStore
                store = ModelStore(self.runtime.cfg)
            except EdgeError:
                log.debug("model store unavailable; using installed model packages")
            vocabulary = self.vocabulary()
            grammar = None
            if self.cfg.asr.grammar:
                from ..asr.vosk import grammar_from_intents
                grammar = vocabulary.grammar(
                    grammar_from_intents(self.runtime.stages.understander.intents))
            self.stack = await loop.run_in_executor(
                None, lambda: VoiceStack.load(self.cfg, paths=model_paths(store),
                                              grammar=grammar, accel=self.runtime.accel))
            self._owns_stack = True
            self._listen_for_commands(self.stack)
            self._bias(vocabulary)
            await self.stack.warm_up()
        except EdgeError as exc:
            self.error = exc
            log.warning("voice unavailable: %s", exc.one_line())

    def _listen_for_commands(self, stack: VoiceStack) -> None:
        """Final transcripts: the recognizer's hypothesis the understanding acts on, with
        the words it was unsure of."""
        if self.cfg.asr.nbest > 1 or self.cfg.asr.unsure_below > 0:
            stack.acts_on = self.runtime.stages.understander.acts_on

    def vocabulary(self, home: Any = None):
        """The command vocabulary (``asr.bias``): the home's area and entity names (the
        simulated home, or the lists read from Home Assistant) and ``asr.bias_words``."""
        from ..asr.bias import CommandVocabulary
        skills = self.runtime.stages.skills
        home = home if home is not None else getattr(skills, "home", None)
        names = list(home.entities()) if home is not None else []
        areas = list(home.areas) if home is not None else []
        return CommandVocabulary.of(names, areas, self.cfg.asr.bias_words)

    def _bias(self, vocabulary) -> None:
        """Prompt a Whisper recognizer with the vocabulary, and again whenever Home
        Assistant's lists are read again."""
        asr = self.stack.asr if self.stack is not None else None
        set_prompt = getattr(asr, "set_prompt", None)
        if not self.cfg.asr.bias or set_prompt is None:
            return
        set_prompt(vocabulary.prompt())
        refresher = getattr(self.runtime.stages.skills, "refresher", None)
        if refresher is not None:
            refresher.on_change(lambda home: set_prompt(self.vocabulary(home).prompt()))
        log.info("ASR biased toward %d names and areas", len(vocabulary.names) +
                 len(vocabulary.areas))

    def require_ready(self) -> VoiceStack:
        if self.stack is None:
            raise self.error or ModelMissingError("the voice models are not loaded yet",
                                                  stage="voice", retryable=True)
        return self.stack

    def session(self, player, emit=None, budget_ms: float | None = None) -> VoiceSession:
        return VoiceSession(self.require_ready(), self.runtime.pipeline, player, emit=emit,
                            metrics=self.runtime.metrics,
                            clock=self.clock, budget_ms=budget_ms)

    def close(self) -> None:
        if self.stack is not None and self._owns_stack:
            self.stack.close()

    # -- one WAV in, one answer out ----------------------------------------------------
    async def answer_wav(self, data: bytes | str, *, speak: bool = True,
                         budget_ms: float | None = None) -> tuple[dict[str, Any], bytes | None]:
        """Transcribe a WAV (bytes or path), answer it, and render the answer as a WAV."""
        stack = self.require_ready()
        loop = asyncio.get_running_loop()
        samples = await loop.run_in_executor(
            stack.asr_pool, lambda: load_audio(data, max_seconds=self.cfg.audio.max_seconds))
        speech = await loop.run_in_executor(stack.asr_pool, self._speech_span, samples)
        transcript = await loop.run_in_executor(stack.asr_pool, stack.transcribe, speech)
        text = transcript.text.strip()
        self.runtime.metrics.observe_stage("asr", transcript.decode_s)
        if not any(c.isalnum() for c in text):
            raise NoSpeechError("the recognizer heard no words in the audio",
                                hint="speak closer to the microphone, or check the file")
        player = VirtualSpeaker(stack.tts.sample_rate if stack.tts else 22050, self.clock)
        speaker = Speaker(stack, player, clock=self.clock) if speak and stack.tts else None
        t_ask = self.clock.monotonic()
        result = await self.runtime.pipeline.ask(text, cancel=CancelToken(), sink=speaker,
                                                 timings=Timings(asr=transcript.decode_s),
                                                 budget_ms=budget_ms, unsure=transcript.unsure)
        wav = None
        if speaker is not None:
            speaker.finish()
            await speaker.rendered()
            wav = wav_bytes(player.heard(), player.sample_rate)
        out = result.to_dict()
        first = speaker.first_audio_at if speaker is not None else None
        out["voice_ms"] = {
            "speech": round(len(speech) / RATE * 1000.0, 1),
            "asr": round(transcript.decode_s * 1000.0, 1),
            # processing from end of speech (not counting endpoint silence) to first audio
            "first_audio": None if first is None else
            round((transcript.decode_s + first - t_ask) * 1000.0, 1)}
        out["asr_backend"] = transcript.backend
        return out, wav

    async def answer_text_spoken(self, text: str, *, budget_ms: float | None = None
                                 ) -> tuple[dict[str, Any], bytes]:
        """Answer typed text and render the answer as a WAV (``ask TEXT --speak``)."""
        stack = self.require_ready()
        if stack.tts is None:
            raise ModelMissingError("no TTS voice loaded", stage="tts",
                                    hint="install the `tts` extra and pull piper-joe-medium")
        player = VirtualSpeaker(stack.tts.sample_rate, self.clock)
        speaker = Speaker(stack, player, clock=self.clock)
        t_ask = self.clock.monotonic()
        result = await self.runtime.pipeline.ask(text, sink=speaker, budget_ms=budget_ms)
        speaker.finish()
        await speaker.rendered()
        out = result.to_dict()
        first = speaker.first_audio_at
        out["voice_ms"] = {"first_audio": None if first is None else
                           round((first - t_ask) * 1000.0, 1)}
        return out, wav_bytes(player.heard(), player.sample_rate)

    def _speech_span(self, samples: np.ndarray) -> np.ndarray:
        """The audio from the first speech onset to the last end; NoSpeechError if none."""
        stack = self.require_ready()
        ep = Endpointer(stack.vad.fork(), self.cfg.vad)
        ends = [ev for ev in ep.feed(samples) + ep.flush()
                if isinstance(ev, SpeechEnd) and ev.reason != "too_short"]
        if not ends:
            raise NoSpeechError("no speech detected in the audio (silence or noise only)",
                                hint="send a recording of someone speaking")
        pre = self.cfg.vad.preroll_ms / 1000.0
        start = max(0, int((ends[0].t_start - pre) * RATE))
        stop = min(len(samples), int((ends[-1].t_speech_end + 0.1) * RATE))
        return samples[start:stop]

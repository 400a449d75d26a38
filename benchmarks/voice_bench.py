"""`edge-runtime bench voice`: WER per ASR backend and the voice loop's latencies.

    python -m benchmarks.voice_bench [--data DIR] [--json] [--backends whisper,pocketsphinx]
                                     [--turns N] [--end-silence-ms MS] [--quick]

* WER per backend on the test audio: ``--data DIR`` (WAV + .txt pairs), else commands
  synthesized with Piper and espeak-ng plus the Debian pocketsphinx-testdata recordings.
* End of speech -> final transcript, and end of speech -> first audio sample by route:
  spoken commands are played as a microphone in real time (a paced file source) into
  the full loop (VAD -> ASR -> pipeline -> chunker -> TTS -> player). End of speech is
  the VAD's end of the last speech frame, so the figures include the endpoint silence.
* Barge-in: the user speaks over a long answer (with the answer's echo mixed into the
  microphone at -14 dB); speech onset -> playback stopped.
* Endpoint tuning: for each end-of-speech silence, how many test utterances would be
  cut in two (VAD only, offline).
* Wake word (``--wake-only`` for just this, ``--no-wake`` to skip): false rejects on
  synthesized wake phrases (Piper, espeak-ng; clean and noisy) and false accepts per hour
  on non-wake speech, per model (see ``benchmarks/wake_bench.py``).

``--json`` prints {"wer": {backend: fraction}, "first_audio_ms": {route: {"p50", "p95"}},
"final_transcript_ms": {"p50", "p95"}, "barge_in_ms": {"p50"}, ...}.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from edge_runtime.asr import available_backends, load_asr
from edge_runtime.asr.wer import wer
from edge_runtime.audio.format import read_wav_file
from edge_runtime.audio.playback import VirtualSpeaker
from edge_runtime.audio.sources import FileSource
from edge_runtime.types import Intent, Result, Timings
from edge_runtime.config import Config, VadConfig
from edge_runtime.vad import Endpointer, SpeechEnd, load_vad
from edge_runtime.voice.pump import feed_source
from edge_runtime.voice.session import VoiceSession
from edge_runtime.voice.stack import VoiceStack

try:                       # run as `python -m benchmarks.voice_bench` or as a script
    from benchmarks.voice_data import folder_set, make_command_set, pocketsphinx_set
except ImportError:        # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from voice_data import folder_set, make_command_set, pocketsphinx_set

log = logging.getLogger("benchmarks.voice")
SKILL_TURNS = ["what time is it", "what is twelve times seven", "set a timer for five minutes",
               "convert ten miles to kilometers"]
OPEN_TURNS = ["what is the capital of france", "tell me something about the moon",
              "who wrote hamlet", "why do cats purr", "how far away is the sun"]


def stats(values: list[float]) -> dict:
    if not values:
        return {"p50": None, "p95": None, "n": 0}
    v = np.asarray(values, dtype=float)
    return {"p50": round(float(np.percentile(v, 50)), 1),
            "p95": round(float(np.percentile(v, 95)), 1), "n": len(values)}


# -- WER ---------------------------------------------------------------------------------
def wer_bench(sets: dict[str, list[tuple[Path, str]]], backends: list[str]) -> dict:
    out = {"wer": {}, "wer_by_set": {}, "asr_rtf": {}}
    for backend in backends:
        asr = load_asr(backend)
        per_set, audio_s, decode_s = {}, 0.0, 0.0
        for name, pairs in sets.items():
            hyps = []
            for path, ref in pairs:
                t = asr.transcribe(read_wav_file(path))
                audio_s, decode_s = audio_s + t.audio_s, decode_s + t.decode_s
                hyps.append((ref, t.text))
            per_set[name] = hyps
        out["wer_by_set"][backend] = {k: round(wer(v), 4) for k, v in per_set.items()}
        synth = [p for k, v in per_set.items() if k != "real" for p in v]
        out["wer"][backend] = round(wer(synth or [p for v in per_set.values() for p in v]), 4)
        out["asr_rtf"][backend] = round(decode_s / audio_s, 3) if audio_s else None
    return out


# -- endpoint tuning -------------------------------------------------------------------------
def endpoint_tuning(paths: list[Path], candidates=(160, 224, 288, 352, 448, 576, 704)) -> dict:
    """Utterances cut in two (or more) per end-of-speech silence, VAD only."""
    vad = load_vad("silero")
    clips = [read_wav_file(p) for p in paths]
    out = {}
    for ms in candidates:
        cuts = 0
        for x in clips:
            ep = Endpointer(vad.fork(), VadConfig(end_silence_ms=ms, pause_ms=min(96, ms)))
            ends = [e for e in ep.feed(x) + ep.flush()
                    if isinstance(e, SpeechEnd) and e.reason != "too_short"]
            cuts += max(0, len(ends) - 1)
        out[str(ms)] = cuts
    return out


# -- latency through the loop ----------------------------------------------------------------
class LongAnswer:
    """A pipeline that streams a long answer word by word (for barge-in)."""

    def __init__(self):
        self.cancelled = []

    async def ask(self, text, *, cancel=None, timings=None, budget_ms=None, sink=None,
                  session=None):
        answer = "Here is a long answer that goes on for quite a while. " * 5
        for word in answer.split(" "):
            await asyncio.sleep(0.005)
            sink.piece(word + " ")
        self.cancelled.append(cancel)
        return Result(text, Intent("oos", 0.0), "local", "cpu", "bench", answer,
                      timings or Timings())


async def turn(stack, pipeline, audio: np.ndarray, *, echo_gain: float = 0.0) -> VoiceSession:
    speaker = VirtualSpeaker(stack.tts.sample_rate)
    session = VoiceSession(stack, pipeline, speaker)
    source = FileSource(audio, realtime=True, tail_silence_s=1.2)
    if echo_gain:
        source = _EchoRoom(source, speaker, echo_gain)
    await feed_source(session, source)
    session.close()
    return session


class _EchoRoom:
    """Mixes what the speaker plays back into the microphone (a crude room)."""

    def __init__(self, source, speaker, gain):
        self.source, self.speaker, self.gain = source, speaker, gain

    def __iter__(self):
        for chunk in self.source:
            level = self.speaker.recent_peak(0.05) if self.speaker.playing else 0.0
            if level:
                n = np.arange(len(chunk))
                chunk = chunk + (self.gain * level * np.sin(n * 0.13)).astype(np.float32)
            yield chunk

    def close(self):
        self.source.close()


async def latency_bench(stack, pipeline, wavs: dict[str, np.ndarray], turns: int) -> dict:
    first_audio: dict[str, list[float]] = {}
    first_token: dict[str, list[float]] = {}
    final: list[float] = []
    texts = SKILL_TURNS + OPEN_TURNS
    plan = texts * turns          # open questions: local first, then cache hits
    for text in plan:
        s = await turn(stack, pipeline, wavs[text])
        for rec in s.records:
            final.append(rec["final_transcript_ms"])
            if rec.get("first_audio_ms") is not None:
                first_audio.setdefault(rec["route"], []).append(rec["first_audio_ms"])
            if rec.get("first_token_ms") is not None:
                first_token.setdefault(rec["route"], []).append(rec["first_token_ms"])
    barge = []
    for _ in range(max(2, turns // 2)):
        mic = np.concatenate([wavs["what time is it"], np.zeros(40000, np.float32),
                              wavs["what is twelve times seven"]])
        s = await turn(stack, LongAnswer(), mic, echo_gain=0.2)
        barge += s.barge_in_ms
    return {"first_audio_ms": {k: stats(v) for k, v in first_audio.items()},
            "pipeline_first_token_ms": {k: stats(v) for k, v in first_token.items()},
            "final_transcript_ms": stats(final), "barge_in_ms": stats(barge)}


def _pipeline(stub: bool):
    """The real runtime's pipeline, or (``stub``/unavailable) None."""
    if stub:
        return None, None
    from edge_runtime.config import load_config
    from edge_runtime.runtime import Runtime
    try:        # a fresh in-memory answer cache: open questions go local, then hit the cache
        rt = Runtime.build(load_config(None, overrides={"cache": {"disk_enabled": False}}))
    except Exception as exc:
        log.warning("real pipeline unavailable (%s); skill/local routes not measured", exc)
        return None, None
    return rt, rt.pipeline


async def run(args) -> dict:
    if args.wake_only:
        return {"wake": wake_section(args)}
    work = Path(args.cache_dir or Path(tempfile.gettempdir()) / "edge-voice-bench")
    synth = make_command_set(work / "commands", voices=("piper", "espeak"))
    sets: dict[str, list] = {}
    if args.data:
        sets["data"] = folder_set(args.data)
    else:
        sets["piper"] = [p for p in synth if p[0].name.startswith("piper")]
        sets["espeak"] = [p for p in synth if p[0].name.startswith("espeak")]
        sets["real"] = pocketsphinx_set()
    if args.quick:
        sets = {k: v[:6] for k, v in sets.items()}
    backends = [b for b in args.backends.split(",") if b in available_backends()]
    out: dict = {"machine": {"cpus": os.cpu_count()}}
    t0 = time.perf_counter()
    out.update(wer_bench(sets, backends))
    out["endpoint_tuning"] = endpoint_tuning([p for p, _ in sets.get("piper", [])[:12] +
                                              sets.get("real", [])])
    settings = Config().with_overrides(vad={"end_silence_ms": args.end_silence_ms},
                                       asr={"beam_size": args.beam or Config().asr.beam_size,
                                            "nbest": 1})
    stack = VoiceStack.load(settings)
    await stack.warm_up()
    turn_wavs = make_command_set(work / "turns", SKILL_TURNS + OPEN_TURNS, voices=("piper",))
    wavs = {text: read_wav_file(p) for p, text in turn_wavs}
    rt, pipeline = _pipeline(args.stub)
    if rt is not None:
        await rt.start()
    try:
        out.update(await latency_bench(stack, pipeline or LongAnswer(), wavs, args.turns))
    finally:
        if rt is not None:
            await rt.close()
        stack.close()
    out["settings"] = {"end_silence_ms": args.end_silence_ms, "asr": "whisper tiny.en int8 "
                       f"beam {settings.asr.beam_size}, window {settings.asr.window_s} s",
                       "tts": "piper joe medium", "vad": "silero"}
    if not args.no_wake:
        out["wake"] = wake_section(args)
    out["bench_s"] = round(time.perf_counter() - t0, 1)
    return out


def wake_section(args) -> dict:
    """False rejects / false accepts per wake word (benchmarks/wake_bench.py)."""
    try:
        from benchmarks.wake_bench import run_wake
    except ImportError:    # pragma: no cover
        from wake_bench import run_wake
    return run_wake(quick=args.quick)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="edge-runtime bench voice", description=__doc__)
    p.add_argument("--data", help="folder of WAV + .txt pairs for WER")
    p.add_argument("--json", action="store_true")
    p.add_argument("--backends", default="whisper,pocketsphinx")
    p.add_argument("--turns", type=int, default=2, help="rounds of spoken turns per route")
    p.add_argument("--end-silence-ms", type=float, default=VadConfig().end_silence_ms)
    p.add_argument("--beam", type=int, default=0, help="Whisper beam size (0: asr.beam_size)")
    p.add_argument("--quick", action="store_true", help="6 clips per set")
    p.add_argument("--stub", action="store_true", help="skip the real pipeline")
    p.add_argument("--cache-dir", help="where synthesized test audio is kept")
    p.add_argument("--no-wake", action="store_true", help="skip the wake-word section")
    p.add_argument("--wake-only", action="store_true", help="only the wake-word section")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    out = asyncio.run(run(args))
    if args.json:
        print(json.dumps(out))
    else:
        print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

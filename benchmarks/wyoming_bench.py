"""Wyoming vs the daemon's own voice loop, same stack, same pipeline, same run.

    python -m benchmarks.wyoming_bench [--turns N] [--stub] [--json]

Each spoken skill command goes (a) through the voice loop (``VoiceSession``, audio paced
in real time, as `bench voice` does) and (b) over Wyoming on loopback as Home Assistant
drives it: ``transcribe`` + the audio paced in real time with the loop's end-of-speech
silence after the speech, ``audio-stop``, then ``transcript`` -> ``handled``, then
``synthesize`` of the answer. Both are timed from the end of speech (the VAD's end of
the last speech frame in the clip, found offline with the same VAD), so:

* ``final_transcript_ms``: end of speech -> final transcript (loop) / ``transcript``
  event received (Wyoming);
* ``first_audio_ms``: end of speech -> first answer audio (loop: into the player;
  Wyoming: the first ``audio-chunk`` of the answer's ``synthesize`` received);
* ``synthesize_first_chunk_ms`` (Wyoming): ``synthesize`` sent -> first ``audio-chunk``.

The answer-audio cache is emptied before every turn, so both paths render their speech.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from edge_runtime.vad import Endpointer, SpeechEnd
from edge_runtime.wyoming import WyomingServer

RATE = 16_000
CHUNK_S = 0.032                      # what a satellite sends (512 samples)


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def speech_end_s(stack, x: np.ndarray) -> float:
    ep = Endpointer(stack.vad.fork(), stack.cfg.vad)
    ends = [e for e in ep.feed(x) + ep.flush() if isinstance(e, SpeechEnd)]
    return ends[-1].t_speech_end if ends else len(x) / RATE


async def _read(c, *types):
    while True:
        ev = await c.read_event()
        if ev is None:
            raise RuntimeError(f"connection closed before {types}")
        if ev.type in types:
            return ev


async def wyoming_turn(port: int, x: np.ndarray, eos_s: float, tail_s: float) -> dict:
    """One Assist turn over Wyoming; times from the end of speech in ms."""
    audio = np.concatenate([x[:int(eos_s * RATE)], np.zeros(int(tail_s * RATE), np.float32)])
    pcm = (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()
    step = int(CHUNK_S * RATE) * 2
    async with AsyncTcpClient("127.0.0.1", port, read_timeout=60) as c:
        await c.write_event(Transcribe(language="en").event())
        await c.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
        t0 = time.perf_counter()
        for k, i in enumerate(range(0, len(pcm), step)):
            delay = t0 + (k + 1) * CHUNK_S - time.perf_counter()    # sent at its end time
            if delay > 0:
                await asyncio.sleep(delay)
            await c.write_event(AudioChunk(rate=RATE, width=2, channels=1,
                                           audio=pcm[i:i + step]).event())
        await c.write_event(AudioStop().event())
        text = Transcript.from_event(await _read(c, "transcript")).text
        eos = t0 + eos_s
        t_final = time.perf_counter()
    async with AsyncTcpClient("127.0.0.1", port, read_timeout=60) as c:
        await c.write_event(Transcript(text=text).event())
        answer = (await _read(c, "handled", "not-handled")).data.get("text") or "Okay."
    async with AsyncTcpClient("127.0.0.1", port, read_timeout=60) as c:
        t_syn = time.perf_counter()
        await c.write_event(Synthesize(text=answer).event())
        await _read(c, "audio-chunk")
        t_audio = time.perf_counter()
        await _read(c, "audio-stop")
    return {"final_transcript_ms": (t_final - eos) * 1e3,
            "first_audio_ms": (t_audio - eos) * 1e3,
            "synthesize_first_chunk_ms": (t_audio - t_syn) * 1e3}


async def compare(stack, pipeline, runtime, wavs: dict[str, np.ndarray], turns: int) -> dict:
    try:
        from benchmarks.voice_bench import stats, turn
    except ImportError:      # pragma: no cover
        from voice_bench import stats, turn
    from edge_runtime.tts import AudioCache
    from edge_runtime.voice.service import VoiceService
    port = _free_port()
    server = WyomingServer(runtime, f"tcp://127.0.0.1:{port}", VoiceService(runtime,
                                                                            stack=stack))
    await server.start()
    loop: dict[str, list[float]] = {"final_transcript_ms": [], "first_audio_ms": []}
    wy: dict[str, list[float]] = {"final_transcript_ms": [], "first_audio_ms": [],
                                  "synthesize_first_chunk_ms": []}
    tail = stack.cfg.vad.end_silence_ms / 1000.0
    try:
        for r in range(turns):
            for x in wavs.values():          # interleaved, alternating who goes first
                for path in ("loop", "wyoming") if r % 2 == 0 else ("wyoming", "loop"):
                    stack.audio_cache = AudioCache(stack.audio_cache.max_bytes)  # both render
                    if path == "loop":
                        s = await turn(stack, pipeline, x)
                        for rec in s.records:
                            loop["final_transcript_ms"].append(rec["final_transcript_ms"])
                            if rec.get("first_audio_ms") is not None:
                                loop["first_audio_ms"].append(rec["first_audio_ms"])
                    else:
                        for k, v in (await wyoming_turn(port, x, speech_end_s(stack, x),
                                                        tail)).items():
                            wy[k].append(v)
    finally:
        await server.stop()
    out = {"loop": {k: stats(v) for k, v in loop.items()},
           "wyoming": {k: stats(v) for k, v in wy.items()}}
    out["ratio_p50"] = {k: round(out["wyoming"][k]["p50"] / out["loop"][k]["p50"], 3)
                        for k in loop if out["loop"][k]["p50"] and out["wyoming"][k]["p50"]}
    return out


async def _main(args) -> dict:
    from benchmarks.voice_bench import SKILL_TURNS, _pipeline
    from benchmarks.voice_data import make_command_set
    from edge_runtime.audio.format import read_wav_file
    from edge_runtime.config import load_config
    from edge_runtime.voice.stack import VoiceStack
    work = Path(tempfile.gettempdir()) / "edge-voice-bench" / "turns"
    wavs = {t: read_wav_file(p) for p, t in make_command_set(work, SKILL_TURNS,
                                                              voices=("piper",))}
    stack = VoiceStack.load(load_config(env={}))
    await stack.warm_up()
    rt, pipeline = _pipeline(args.stub)
    if rt is None:
        from edge_runtime.config import load_config
        from edge_runtime.runtime import Runtime
        from tests.pipeline_fakes import make_pipeline
        p = make_pipeline(cfg=load_config(env={}))
        rt = Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p)
        pipeline = p
    else:
        await rt.start()
    try:
        return await compare(stack, pipeline, rt, wavs, args.turns)
    finally:
        await rt.close()
        stack.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.wyoming_bench",
                                description=__doc__)
    p.add_argument("--turns", type=int, default=2, help="rounds over the skill commands")
    p.add_argument("--stub", action="store_true", help="fake pipeline stages")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    out = asyncio.run(_main(args))
    print(json.dumps(out) if args.json else json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A spoken local answer end to end, per ``llm.spin_us``: what the user waits for.

    python -m benchmarks.llm_spoken [--spins 0,200] [--rounds 3] [--json]

``llm_contention`` shows that the LLM's bounded busy-wait decodes ~1.5x faster alone and
~15 % slower while the Piper voice speaks beside it. Which wins for the user depends on how
much of an answer's time the two overlap, so this measures the whole thing the product does
with an open question: one runtime per spin setting is built (local LLM, answer cache off,
cloud off), each question goes through the real pipeline with the voice's ``Speaker`` as
its answer sink (sentence chunker -> Piper, in the TTS thread, beside the decoding), and the
audio goes to a virtual speaker. The runtimes take turns question by question, in a
shuffled order each round, so a busy box slows both alike. Per spin setting, medians over
every question and round:

* ``first_audio_ms``: ask -> first audio sample synthesized (first token + the first
  sentence decoded + that sentence synthesized, partly beside the decoding);
* ``all_audio_ms``: ask -> the whole answer synthesized (the rest of the decoding beside
  the voice);
* ``first_token_ms`` and the answer's characters (the same answers for both: greedy).

The speech from the mic and ASR come before the answer and are not part of the fork.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import statistics
import sys
import time

QUESTIONS = ["what is the capital of france", "tell me something about the moon",
             "who wrote hamlet", "why do cats purr", "how far away is the sun",
             "what should i cook tonight", "explain what a rainbow is",
             "give me a tip for sleeping better"]


def _runtime(spin: int):
    from edge_runtime.config import load_config
    from edge_runtime.runtime import Runtime

    cfg = load_config(None, overrides={"cache": {"enabled": False},
                                       "cloud": {"enabled": False},
                                       "tts": {"cache_mb": 0},
                                       "llm": {"spin_us": spin}})
    return Runtime.build(cfg)


async def _one(rt, stack, question: str) -> dict:
    from edge_runtime.audio.playback import VirtualSpeaker
    from edge_runtime.voice.speaker import Speaker

    speaker = Speaker(stack, VirtualSpeaker(stack.tts.sample_rate))
    t0 = time.monotonic()
    result = await rt.pipeline.ask(question, sink=speaker)
    speaker.finish()
    await speaker.rendered()
    done = time.monotonic()
    first = speaker.first_audio_at
    ft = result.timings.first_token
    return {"route": result.route, "answer": result.answer,
            "first_token_ms": None if ft is None else ft * 1000.0,
            "first_audio_ms": None if first is None else (first - t0) * 1000.0,
            "all_audio_ms": (done - t0) * 1000.0}


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 1) if values else None


async def run(spins: list[int], rounds: int, seed: int) -> dict:
    from edge_runtime.config import Config
    from edge_runtime.voice.stack import VoiceStack

    stack = VoiceStack.load(Config().with_overrides(tts={"cache_mb": 0}))
    await stack.warm_up()
    rts = {s: _runtime(s) for s in spins}
    for rt in rts.values():
        await rt.start()
    rng = random.Random(seed)
    recs: dict[int, list[dict]] = {s: [] for s in spins}
    try:
        for s in spins:                                   # warm-up, not counted
            await _one(rts[s], stack, "hello there, how are you")
        for r in range(rounds):
            for q in QUESTIONS:
                order = list(spins)
                rng.shuffle(order)
                for s in order:
                    recs[s].append({"q": q, **await _one(rts[s], stack, q)})
            print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    finally:
        for rt in rts.values():
            await rt.close()
        stack.close()
    out: dict = {"questions": len(QUESTIONS), "rounds": rounds, "by_spin": {}}
    for s, rows in recs.items():
        out["by_spin"][str(s)] = {
            "routes": sorted({r["route"] for r in rows}),
            "first_token_ms": _median([r["first_token_ms"] for r in rows]),
            "first_audio_ms": _median([r["first_audio_ms"] for r in rows]),
            "all_audio_ms": _median([r["all_audio_ms"] for r in rows]),
            "answer_chars": _median([len(r["answer"]) for r in rows])}
    first = recs[spins[0]]
    out["same_answers"] = all(
        [r["answer"] for r in recs[s]] == [r["answer"] for r in first] for s in spins)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.llm_spoken", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spins", default="0,200", help="llm.spin_us values, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    out = asyncio.run(run([int(s) for s in args.spins.split(",")], args.rounds, args.seed))
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for s, row in out["by_spin"].items():
            print(f"spin_us {s:>4}: first token {row['first_token_ms']} ms, first audio "
                  f"{row['first_audio_ms']} ms, all audio {row['all_audio_ms']} ms "
                  f"({row['answer_chars']} chars, routes {row['routes']})")
        print(f"same answers: {out['same_answers']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

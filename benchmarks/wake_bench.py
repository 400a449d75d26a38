"""Wake-word section of `edge-runtime bench voice`: false rejects and false accepts.

    python -m benchmarks.wake_bench [--words okay_nabu,...] [--quick] [--json]
    edge-runtime bench voice --wake-only [--quick]

* False rejects: each wake phrase spoken by synthetic voices — Piper joe at three speaking
  rates and espeak-ng English voices at two speeds — with 0.5 s of silence either side,
  clean and with white noise mixed in at 20, 10 and 0 dB SNR (of the speech). A clip counts
  as rejected when the detector (``edge_runtime.voice.wake``, the daemon's own, fresh
  state per clip) reports nothing.
* False accepts: one continuous stream of non-wake speech per model — the Debian
  pocketsphinx-testdata recordings (real people) and synthesized sentences (Piper and
  espeak-ng voices: commands and open questions), clean and again with noise — fed as a
  microphone would; every detection is a false accept. Reported as a count, the hours of
  audio, and per hour. Near-miss phrases ("okay, now", "hey Jarvis' friend" ...) are
  counted apart (``confusable``): they are meant to be hard.

The figures are only as good as the data: synthetic voices are not people, and a few
minutes of non-wake speech bound the false-accept rate loosely (0 in 0.2 h means fewer
than ~15 per hour at 95 % confidence).
"""
from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from edge_runtime.audio.format import PcmFormat, load_audio, resample
from edge_runtime.voice.wake import WAKE_WORDS, MicroWakeDetector

log = logging.getLogger("benchmarks.wake")
RATE = 16_000
PHRASES = {"okay_nabu": ["Okay Nabu.", "Okay, Nabu!", "OK Nabu."],
           "hey_jarvis": ["Hey Jarvis.", "Hey, Jarvis!", "Hey Jarvis?"],
           "hey_mycroft": ["Hey Mycroft.", "Hey, Mycroft!", "Hey Mycroft?"],
           "alexa": ["Alexa.", "Alexa!", "Alexa?"]}
CONFUSABLE = ["okay, now boo", "okay now", "hey, Jarvis' friend is here", "hey Marvin",
              "hey, my craft is ready", "Alexander the Great", "a lexicon", "hey there"]
SENTENCES = [
    "what time is it", "set a timer for five minutes", "turn on the kitchen lights",
    "turn off the living room lamp", "what is the weather like tomorrow",
    "what is twelve times seven", "convert ten miles to kilometers", "play some jazz music",
    "stop the music", "what is the capital of france", "remind me to call my mother at six",
    "how far away is the moon", "set the thermostat to twenty degrees", "cancel my timer",
    "tell me a joke", "what day is it today", "open the garage door",
    "how many days until christmas", "turn the volume down", "good morning",
    "the train to the city leaves at a quarter past nine",
    "could you read me the news headlines from this morning",
    "my neighbour is going on holiday next week and asked me to water the plants",
    "I think we should paint the kitchen a lighter colour before the winter",
    "the children are playing football in the garden",
    "we need milk, eggs, bread and some apples from the shop",
    "why do cats purr", "who wrote hamlet", "tell me something about the ocean",
    "how do rainbows form",
]
ESPEAK_VOICES = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-us+f3")
PSX = Path("/usr/share/pocketsphinx/test/data")


# -- audio ------------------------------------------------------------------------------------
def _piper(tts, text: str) -> np.ndarray:
    audio = np.concatenate(list(tts.synthesize(text))).astype(np.float32) / 32768.0
    return resample(audio, tts.sample_rate, RATE)


def _espeak(text: str, voice: str, speed: int) -> np.ndarray | None:
    exe = shutil.which("espeak-ng")
    if exe is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".wav") as f:
        r = subprocess.run([exe, "-v", voice, "-s", str(speed), "-w", f.name, text],
                           capture_output=True)
        if r.returncode != 0:
            return None
        return load_audio(Path(f.name), max_seconds=120.0)


def with_noise(x: np.ndarray, snr_db: float | None, rng: np.random.Generator) -> np.ndarray:
    """White noise at ``snr_db`` below the speech's RMS (speech = samples above -40 dBFS)."""
    if snr_db is None:
        return x
    loud = x[np.abs(x) > 0.01]
    rms = float(np.sqrt(np.mean(loud ** 2))) if len(loud) else 0.05
    noise = rng.standard_normal(len(x)).astype(np.float32) * rms / (10 ** (snr_db / 20))
    return np.clip(x + noise, -1.0, 1.0).astype(np.float32)


def _pad(x: np.ndarray, s: float = 0.5) -> np.ndarray:
    z = np.zeros(int(s * RATE), np.float32)
    return np.concatenate([z, x, z])


class Voices:
    """Synthetic voices: Piper joe at three rates, espeak-ng voices at two speeds."""

    def __init__(self, quick: bool) -> None:
        from edge_runtime.tts import load_tts
        scales = (1.0,) if quick else (0.85, 1.0, 1.2)
        self.piper = [(f"piper-{s}", load_tts(length_scale=s)) for s in scales]
        self.espeak = [(v, sp) for v in (ESPEAK_VOICES[:2] if quick else ESPEAK_VOICES)
                       for sp in ((160,) if quick else (140, 180))]
        if shutil.which("espeak-ng") is None:
            log.warning("espeak-ng not installed: Piper voices only")
            self.espeak = []

    def render(self, text: str) -> list[tuple[str, np.ndarray]]:
        out = [(name, _piper(tts, text)) for name, tts in self.piper]
        for voice, speed in self.espeak:
            x = _espeak(text, voice, speed)
            if x is not None:
                out.append((f"espeak-{voice}-{speed}", x))
        return out


def real_speech() -> list[np.ndarray]:
    """Debian pocketsphinx-testdata: WAV recordings and the 16 kHz raw ones."""
    out = [load_audio(p, max_seconds=120.0) for p in sorted(PSX.rglob("*.wav"))]
    for name in ("goforward.raw", "something.raw"):
        if (PSX / name).is_file():
            out.append(load_audio((PSX / name).read_bytes(), fmt=PcmFormat(RATE)))
    return out


# -- measurement --------------------------------------------------------------------------------
def detections(word: str, x: np.ndarray, chunk: int = 1600) -> int:
    det = MicroWakeDetector(word)
    return sum(len(det.feed(x[i:i + chunk])) for i in range(0, len(x), chunk))


def false_rejects(word: str, clips: list[tuple[str, np.ndarray]], snrs, rng) -> dict:
    out = {}
    for snr in snrs:
        key = "clean" if snr is None else f"snr_{snr:g}db"
        by: dict[str, list[int]] = {"piper": [], "espeak": []}
        for name, x in clips:
            missed = detections(word, _pad(with_noise(x, snr, rng))) == 0
            by["piper" if name.startswith("piper") else "espeak"].append(int(missed))
        allv = by["piper"] + by["espeak"]
        out[key] = {"rate": round(float(np.mean(allv)), 4) if allv else None, "n": len(allv),
                    **{f"{k}_rate": round(float(np.mean(v)), 4) if v else None
                       for k, v in by.items()}}
    return out


def false_accepts(word: str, stream: np.ndarray) -> dict:
    n = detections(word, stream)
    hours = len(stream) / RATE / 3600
    return {"count": n, "hours": round(hours, 4), "per_hour": round(n / hours, 2)}


def run_wake(*, words=WAKE_WORDS, quick: bool = False, seed: int = 0) -> dict:
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    voices = Voices(quick)
    sentences = SENTENCES[:8] if quick else SENTENCES
    gap = np.zeros(int(0.4 * RATE), np.float32)
    real = real_speech()
    speech = [x for s in sentences for _, x in voices.render(s)] + real
    clean = np.concatenate([y for x in speech for y in (x, gap)])
    stream = np.concatenate([clean, with_noise(clean, 10.0, rng)])
    near = [x for s in CONFUSABLE for _, x in voices.render(s)]
    confusable = np.concatenate([y for x in near for y in (x, gap)])
    snrs = (None, 10.0) if quick else (None, 20.0, 10.0, 0.0)
    out: dict = {"voices": {"piper": [n for n, _ in voices.piper],
                            "espeak": [f"{v}@{s}" for v, s in voices.espeak]},
                 "non_wake_speech_s": round(len(stream) / RATE, 1),
                 "real_recordings": len(real), "real_speech_s":
                 round(sum(len(x) for x in real) / RATE, 1), "models": {}}
    for word in words:
        clips = [c for p in PHRASES[word] for c in voices.render(p)]
        t = time.perf_counter()
        fr = false_rejects(word, clips, snrs, rng)
        fa = false_accepts(word, stream)
        out["models"][word] = {
            "false_reject": fr, "false_accepts": fa,
            "confusable": {"count": detections(word, confusable), "clips": len(near)},
            "detector_rtf": round((time.perf_counter() - t) / (
                sum(len(_pad(x)) for _, x in clips) * len(snrs) / RATE
                + len(stream) / RATE + len(confusable) / RATE), 5)}
    out["bench_s"] = round(time.perf_counter() - t0, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.wake_bench", description=__doc__)
    p.add_argument("--words", default=",".join(WAKE_WORDS))
    p.add_argument("--quick", action="store_true", help="fewer voices and sentences")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    out = run_wake(words=[w for w in args.words.split(",") if w], quick=args.quick)
    print(json.dumps(out) if args.json else json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

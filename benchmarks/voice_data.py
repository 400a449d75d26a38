"""Test audio for the voice benchmarks and tests: spoken commands with transcripts.

``make_command_set(dir)`` writes ``NAME.wav`` (16 kHz mono 16-bit) + ``NAME.txt`` pairs:
each command spoken by Piper (joe) and by espeak-ng (when installed). ``pocketsphinx_set``
lists the Debian ``pocketsphinx-testdata`` recordings (real speech) with transcripts.

    python -m benchmarks.voice_data OUT_DIR
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from edge_runtime.audio.format import load_audio, resample, write_wav

COMMANDS = [
    "what time is it",
    "set a timer for five minutes",
    "turn on the kitchen lights",
    "turn off the living room lamp",
    "what is the weather like tomorrow",
    "what is twelve times seven",
    "convert ten miles to kilometers",
    "play some jazz music",
    "stop the music",
    "what is the capital of france",
    "remind me to call my mother at six",
    "how far away is the moon",
    "set the thermostat to twenty degrees",
    "cancel my timer",
    "tell me a joke",
    "what day is it today",
    "open the garage door",
    "how many days until christmas",
    "turn the volume down",
    "good morning",
]
PSX = Path("/usr/share/pocketsphinx/test/data")


def piper_samples(tts, text: str) -> np.ndarray:
    audio = np.concatenate(list(tts.synthesize(text))).astype(np.float32) / 32768.0
    return resample(audio, tts.sample_rate, 16_000)


def espeak_samples(text: str, voice: str = "en-us") -> np.ndarray | None:
    exe = shutil.which("espeak-ng")
    if exe is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".wav") as f:
        subprocess.run([exe, "-v", voice, "-s", "160", "-w", f.name, text], check=True,
                       capture_output=True)
        return load_audio(Path(f.name), max_seconds=60.0)


def make_command_set(out: str | Path, commands: list[str] | None = None,
                     voices: tuple[str, ...] = ("piper", "espeak")) -> list[tuple[Path, str]]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tts = None
    if "piper" in voices:
        from edge_runtime.tts import load_tts
        tts = load_tts()
    pairs = []
    for i, text in enumerate(commands or COMMANDS):
        for voice in voices:
            name = out / f"{voice}-{i:02d}"
            if not name.with_suffix(".wav").is_file():
                x = piper_samples(tts, text) if voice == "piper" else espeak_samples(text)
                if x is None:
                    continue
                lead = np.zeros(int(0.3 * 16_000), np.float32)
                write_wav(name.with_suffix(".wav"), np.concatenate([lead, x, lead]), 16_000)
                name.with_suffix(".txt").write_text(text + "\n")
            pairs.append((name.with_suffix(".wav"), text))
    return pairs


def pocketsphinx_set() -> list[tuple[Path, str]]:
    """Real recordings from Debian pocketsphinx-testdata (cards + librivox), if installed."""
    pairs = []
    for trans in (PSX / "cards" / "cards.transcription", PSX / "librivox" / "transcription"):
        if not trans.is_file():
            continue
        for line in trans.read_text().splitlines():
            m = re.match(r"\s*(?:<s>)?(.*?)(?:</s>)?\s*\(([^)]+)\)\s*$", line)
            if not m:
                continue
            wav = trans.parent / f"{m.group(2).strip()}.wav"
            if wav.is_file():
                pairs.append((wav, m.group(1).strip().lower()))
    return pairs


def folder_set(d: str | Path) -> list[tuple[Path, str]]:
    """WAV + .txt pairs from a folder (``--data DIR``)."""
    return [(w, w.with_suffix(".txt").read_text().strip())
            for w in sorted(Path(d).glob("*.wav")) if w.with_suffix(".txt").is_file()]


if __name__ == "__main__":
    for path, text in make_command_set(sys.argv[1] if len(sys.argv) > 1 else "voice-data"):
        print(path, text)

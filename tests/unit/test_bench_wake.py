"""The wake-word benchmark's measuring parts (the synthesized data sets: bench voice)."""
import numpy as np

from benchmarks.wake_bench import false_accepts, false_rejects, with_noise
from tests.voice_fixtures import silence, tone


def test_noise_is_mixed_at_the_asked_snr():
    rng = np.random.default_rng(1)
    x = tone(2.0, amp=0.3)
    y = with_noise(x, 10.0, rng)
    snr = 10 * np.log10(np.mean(x ** 2) / np.mean((y - x) ** 2))
    assert abs(snr - 10.0) < 0.3
    assert with_noise(x, None, rng) is x


def test_non_speech_is_rejected_and_never_accepted():
    rng = np.random.default_rng(0)
    fr = false_rejects("okay_nabu", [("piper-1.0", tone(1.0)), ("espeak-en-us", silence(1.0))],
                       (None, 10.0), rng)
    assert fr["clean"] == {"rate": 1.0, "n": 2, "piper_rate": 1.0, "espeak_rate": 1.0}
    fa = false_accepts("okay_nabu", np.concatenate([silence(3.0), tone(3.0)]))
    assert fa["count"] == 0 and fa["hours"] == round(6.0 / 3600, 4) and fa["per_hour"] == 0.0

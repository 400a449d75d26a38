"""Echo guard: keep the assistant from barging in on itself.

While the speaker plays, the microphone hears it. A speech onset during playback
counts as barge-in only when the microphone is clearly louder than the echo expected
from what is playing: ``mic_peak > margin * coupling * ref_peak + floor`` (a Geigel-style
double-talk detector; ``ref_peak`` is taken over a window long enough to cover the
output latency). The coupling (mic level / speaker level) starts at 1.0 (a microphone
next to the speaker) and is learned while the assistant talks and nobody interrupts,
once playback has run long enough for its sound to reach the microphone.
"""
from __future__ import annotations


class EchoGuard:
    def __init__(self, margin: float = 2.0, floor: float = 0.01, initial: float = 1.0,
                 fall: float = 0.05, rise: float = 0.1, max_coupling: float = 2.0) -> None:
        self.margin = margin
        self.floor = floor
        self.coupling = initial
        self.fall = fall
        self.rise = rise
        self.max_coupling = max_coupling

    def observe(self, mic_peak: float, ref_peak: float, user_speaking: bool) -> None:
        """Learn from one frame heard while playing (skip frames during user speech)."""
        if user_speaking or ref_peak < 0.02:
            return
        ratio = min(self.max_coupling, mic_peak / ref_peak)
        rate = self.fall if ratio < self.coupling else self.rise
        self.coupling += rate * (ratio - self.coupling)

    def is_barge_in(self, mic_peak: float, ref_peak: float) -> bool:
        """True when a speech onset heard during playback is the user, not the echo."""
        if ref_peak < 0.02:
            return True                 # nothing (audible) is playing
        return mic_peak > self.margin * self.coupling * ref_peak + self.floor

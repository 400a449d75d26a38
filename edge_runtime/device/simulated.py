"""A simulated Jetson: replays a tegrastats trace on the injected clock.

Time zero is the clock's ``monotonic()`` when the device is created; sample
``i`` of the trace is in force from its offset until the next one. Offsets
come from the lines' own timestamps when every line has one, else from
``interval_s``. After the last sample the device stays in that state (or,
with ``loop=True``, starts the trace again).

A trace may name its parts: a comment line ``# phase NAME`` applies to the samples
after it, up to the next one (the committed trace marks ``idle``, ``nominal``,
``throttled``, ``recovered`` and ``gpu-lost``); :attr:`SimulatedDevice.phases` lists
them with their times, :meth:`SimulatedDevice.phase` says which is in force.
"""
from __future__ import annotations

import bisect
import itertools
import logging
import re
from importlib import resources
from collections.abc import Iterable

from ..clock import Clock
from .base import describe_state
from .errors import TegrastatsParseError, TraceError
from .profiles import DeviceProfile
from .tegrastats import Telemetry, gpu_slowdown, parse_tegrastats

log = logging.getLogger(__name__)

TRACE_PACKAGE = "edge_runtime.device.traces"
_PHASE = re.compile(r"^#\s*phase\s+(\S+)\s*$")


def load_trace_lines(name: str) -> list[str]:
    """Read a trace shipped in ``edge_runtime/device/traces``
    (e.g. ``sim-orin-nano.tegrastats.txt``)."""
    try:
        text = resources.files(TRACE_PACKAGE).joinpath(name).read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, ModuleNotFoundError):
        raise TraceError(f"telemetry trace {name!r} is not in {TRACE_PACKAGE}",
                         hint="reinstall edge-runtime; traces ship with the package") from None
    return text.splitlines()


def parse_trace(lines: Iterable[str], interval_s: float = 1.0) -> list[tuple[float, Telemetry]]:
    """Parse trace lines into ``(offset seconds, sample)`` pairs, ascending.

    Blank lines and lines starting with ``#`` are skipped; any other line that
    is not tegrastats output raises TraceError naming its line number.
    """
    return _parse(lines, interval_s)[0]


def trace_phases(lines: Iterable[str], interval_s: float = 1.0
                 ) -> list[tuple[str, float, float]]:
    """The named parts of a trace as ``(name, start s, end s)``, in order (``# phase NAME``
    lines; samples before the first one belong to no phase and are not listed)."""
    trace, names = _parse(lines, interval_s)
    end = trace[-1][0] + interval_s
    out: list[tuple[str, float, float]] = []
    for (t, _), name in zip(trace, names, strict=True):
        if name is not None and (not out or out[-1][0] != name):
            out.append((name, t, end))
    return [(name, start, out[i + 1][1] if i + 1 < len(out) else end)
            for i, (name, start, _) in enumerate(out)]


def _parse(lines: Iterable[str], interval_s: float
           ) -> tuple[list[tuple[float, Telemetry]], list[str | None]]:
    if interval_s <= 0:
        raise TraceError("trace interval_s must be positive")
    samples: list[Telemetry] = []
    names: list[str | None] = []
    phase: str | None = None
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            m = _PHASE.match(line)
            phase = m.group(1) if m else phase
            continue
        try:
            samples.append(parse_tegrastats(line))
        except TegrastatsParseError as exc:
            raise TraceError(
                f"trace line {number} is not tegrastats output: {exc.message}") from None
        names.append(phase)
    if not samples:
        raise TraceError("telemetry trace has no samples", hint="give at least one tegrastats line")
    stamps = [s.timestamp for s in samples if s.timestamp is not None]
    if len(stamps) == len(samples):
        offsets = [(t - stamps[0]).total_seconds() for t in stamps]
        if any(b < a for a, b in itertools.pairwise(offsets)):
            raise TraceError("trace timestamps go backwards", hint="sort the trace by time")
    else:
        offsets = [i * interval_s for i in range(len(samples))]
    return list(zip(offsets, samples, strict=True)), names


class SimulatedDevice:
    """A device whose telemetry, GPU clock and GPU presence come from a trace.

    ``slowdown()`` is nominal GPU clock / clock of the newest busy sample (>= 1);
    ``gpu_available()`` is False while the trace reports the GPU ``off``.
    Both read the injected clock, so tests walk through phases with FakeClock.
    ``phases`` lists the trace's named parts as ``(name, start s, end s)``.
    """

    slows_engine = False        # the host's engine never feels the replayed throttling

    def __init__(self, profile: DeviceProfile, trace_lines: Iterable[str], clock: Clock, *,
                 interval_s: float = 1.0, loop: bool = False) -> None:
        self.profile = profile
        self._clock = clock
        self._loop = loop
        lines = list(trace_lines)
        trace, self._phase_names = _parse(lines, interval_s)
        self.phases = trace_phases(lines, interval_s)
        self._offsets = [t for t, _ in trace]
        self._samples = [s for _, s in trace]
        self._duration_s = self._offsets[-1] + interval_s
        self._gpu = self._precompute_gpu()
        self._slow = [1.0 if not self._gpu[i] else
                      gpu_slowdown(reversed(self._samples[:i + 1]), profile.gpu_nominal_mhz)
                      for i in range(len(self._samples))]
        self._t0 = clock.monotonic()
        log.info("simulated device %s: %d samples over %.0f s", profile.name,
                 len(self._samples), self._duration_s)

    @classmethod
    def from_profile(cls, profile: DeviceProfile, clock: Clock, *, loop: bool = False
                     ) -> SimulatedDevice:
        """Build the device from the trace the profile names (``profile.trace``)."""
        if not profile.trace:
            raise TraceError(f"device profile {profile.name} has no telemetry trace",
                             hint="use a simulated profile such as sim-orin-nano")
        return cls(profile, load_trace_lines(profile.trace), clock, loop=loop)

    def _precompute_gpu(self) -> list[bool]:
        """GPU presence per sample; a sample without a GR3D field keeps the last known state."""
        state, out = self.profile.has_gpu, []
        for sample in self._samples:
            if self.profile.has_gpu and sample.gpu_present is not None:
                state = sample.gpu_present
            out.append(state)
        return out

    @property
    def duration_s(self) -> float:
        """Length of the trace in seconds (last offset + one interval)."""
        return self._duration_s

    def elapsed_s(self) -> float:
        """Seconds since the device was created, on the injected clock."""
        return self._clock.monotonic() - self._t0

    def _index(self, t: float | None) -> int:
        t = self.elapsed_s() if t is None else t
        if self._loop and t >= self._duration_s:
            t %= self._duration_s
        return max(0, bisect.bisect_right(self._offsets, t) - 1)

    def phase(self, t: float | None = None) -> str | None:
        """The name of the trace part in force at ``t`` (default: now), e.g. ``throttled``;
        None when the trace names no part there."""
        return self._phase_names[self._index(t)]

    def telemetry_at(self, t: float) -> Telemetry:
        """The sample in force ``t`` seconds after start (t < 0: the first sample)."""
        return self._samples[self._index(t)]

    def telemetry(self) -> Telemetry:
        """The sample in force now."""
        return self._samples[self._index(None)]

    def slowdown(self, t: float | None = None) -> float:
        """Factor >= 1 by which GPU latency grows at ``t`` (default: now); 1.0 without a GPU."""
        return self._slow[self._index(t)]

    def gpu_available(self, t: float | None = None) -> bool:
        """False in the trace's GPU-loss phase (GR3D ``off``) or for a profile without GPU."""
        return self._gpu[self._index(t)]

    def predict_ttft_s(self, prompt_tokens: int, t: float | None = None) -> float:
        """Time to first token (s) the profile's latency model predicts at ``t`` (default: now)."""
        if self.profile.latency is None:
            raise TraceError(f"device profile {self.profile.name} has no latency model",
                             hint="use a profile with a latency prior, e.g. sim-orin-nano")
        gpu = self.gpu_available(t)
        return self.profile.latency.ttft_s(prompt_tokens, gpu=gpu, slowdown=self.slowdown(t))

    def describe(self, t: float | None = None) -> str:
        """One-line state for decision reasons, e.g. ``gpu 306/624 MHz (2.04x), tj 93.0 C``."""
        i = self._index(t)
        return describe_state(self._samples[i], self.slowdown(t), self.gpu_available(t),
                              self.profile.gpu_nominal_mhz)


def simulated_device_for(profile: DeviceProfile, clock: Clock, *, loop: bool = True
                         ) -> SimulatedDevice | None:
    """The simulated device of a simulated profile (e.g. ``sim-orin-nano``), else None.

    A daemon replays the trace in a loop by default (normal -> throttled -> GPU lost ->
    normal ...); tests that want the last state to hold pass ``loop=False``.
    """
    if not profile.simulated:
        return None
    return SimulatedDevice.from_profile(profile, clock, loop=loop)

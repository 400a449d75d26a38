"""Live telemetry on a real Jetson: tail a ``tegrastats`` process, with the GPU's sysfs.

Started only when the ``tegrastats`` binary exists (``TelemetrySource.available()``);
elsewhere the runtime does not use it. A reader thread parses each line and
keeps the newest sample plus a short, bounded history (for the slowdown
estimate). A sample older than ``stale_after_s`` counts as no telemetry.

With the GPU's devfreq node (:class:`~.sysfs.SysfsGpu`), each line is completed from
sysfs: a line without ``GR3D_FREQ`` (tegrastats without root) takes the GPU clock and load
from there, and a node that can no longer be read marks the sample's GPU lost, the same
signals the simulated trace gives.
"""
from __future__ import annotations

import collections
import dataclasses
import logging
import shutil
import subprocess
import threading
from collections.abc import Sequence

from ..clock import SYSTEM_CLOCK, Clock
from .base import describe_state
from .errors import TegrastatsParseError
from .sysfs import SysfsGpu
from .tegrastats import Telemetry, gpu_slowdown, parse_tegrastats

log = logging.getLogger(__name__)

TEGRASTATS = "tegrastats"


class TelemetrySource:
    """Tails ``tegrastats --interval <ms>``; implements the DeviceMonitor protocol.

    ``command`` replaces the tegrastats command line (tests feed recorded lines
    through a subprocess). ``history`` bounds the samples kept (default 60).
    ``stale_after_s`` defaults to five intervals. ``sysfs``: the GPU's devfreq node
    (``SysfsGpu.find()``), read once per line; None: tegrastats alone.
    """

    slows_engine = True         # the board this process runs on: its engine feels the state

    def __init__(self, clock: Clock = SYSTEM_CLOCK, *, interval_ms: int = 1000,
                 nominal_gpu_mhz: float | None = None, command: Sequence[str] | None = None,
                 history: int = 60, stale_after_s: float | None = None,
                 sysfs: SysfsGpu | None = None) -> None:
        if interval_ms <= 0 or history <= 0:
            raise ValueError("interval_ms and history must be positive")
        self._clock = clock
        self._command = list(command) if command else [TEGRASTATS, "--interval", str(interval_ms)]
        self._nominal = nominal_gpu_mhz
        self._stale_after_s = (stale_after_s if stale_after_s is not None
                               else 5 * interval_ms / 1000.0)
        self._history: collections.deque[Telemetry] = collections.deque(maxlen=history)
        self._received_at: float | None = None
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._bad_lines = 0
        self._sysfs = sysfs
        self.lines_read = 0

    @staticmethod
    def available() -> bool:
        """True when the ``tegrastats`` binary is on PATH (a Jetson)."""
        return shutil.which(TEGRASTATS) is not None

    @property
    def running(self) -> bool:
        """True while the tegrastats process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> bool:
        """Start the process and reader thread; False (and a log line) when tegrastats is absent."""
        if self._proc is not None:
            return True
        if shutil.which(self._command[0]) is None:
            log.info("%s not found; live device telemetry is off", self._command[0])
            return False
        self._proc = subprocess.Popen(self._command, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self._thread = threading.Thread(target=self._read, name="tegrastats-reader", daemon=True)
        self._thread.start()
        log.info("device telemetry from %s (pid %d)", " ".join(self._command), self._proc.pid)
        return True

    def stop(self, timeout_s: float = 2.0) -> None:
        """Terminate the process (kill after ``timeout_s``) and join the reader thread."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout_s)
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def __enter__(self) -> TelemetrySource:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _read(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        for line in proc.stdout:
            self.feed(line)
        rc = proc.wait()
        if self._proc is proc:          # not a stop() we asked for
            log.warning("tegrastats exited with code %s; device telemetry is stale from now", rc)

    def feed(self, line: str) -> bool:
        """Take one line of tegrastats output (the reader thread calls it per line); True
        when it was a sample. Unreadable output is counted and logged now and then."""
        if not line.strip():
            return False
        try:
            sample = parse_tegrastats(line)
        except TegrastatsParseError as exc:
            self._bad_lines += 1
            if self._bad_lines in (1, 10, 100) or self._bad_lines % 1000 == 0:
                log.warning("skipping unreadable tegrastats output (%d so far): %s",
                            self._bad_lines, exc.message)
            return False
        if self._sysfs is not None:
            sample = self._with_sysfs(sample)
        with self._lock:
            self._history.append(sample)
            self._received_at = self._clock.monotonic()
            self.lines_read += 1
        return True

    def _with_sysfs(self, sample: Telemetry) -> Telemetry:
        assert self._sysfs is not None
        gpu = self._sysfs.read()
        if not gpu.present:
            return dataclasses.replace(sample, gpu_present=False, gpu_util_pct=None,
                                       gpu_freq_mhz=None)
        if sample.gpu_present is None:        # no GR3D field: tegrastats without root
            return dataclasses.replace(sample, gpu_present=True, gpu_util_pct=gpu.util_pct,
                                       gpu_freq_mhz=gpu.freq_mhz)
        return sample

    def telemetry(self) -> Telemetry | None:
        """The newest sample, or None when there is none or it is older than ``stale_after_s``."""
        with self._lock:
            if not self._history or self._received_at is None:
                return None
            if self._clock.monotonic() - self._received_at > self._stale_after_s:
                return None
            return self._history[-1]

    def slowdown(self) -> float:
        """Factor >= 1 from the newest busy sample's GPU clock vs nominal; 1.0 when unknown."""
        if self.telemetry() is None:
            return 1.0
        with self._lock:
            recent = list(self._history)
        return gpu_slowdown(reversed(recent), self._nominal)

    def gpu_available(self) -> bool:
        """False when the newest sample has the GPU lost (tegrastats ``off``, or its sysfs
        node gone); no telemetry means unknown (True).

        On a real board the authoritative signal is the execution provider:
        assert ``session.get_providers()`` and fall back when CUDA/TensorRT fail.
        """
        sample = self.telemetry()
        return sample is None or sample.gpu_present is not False

    def describe(self) -> str:
        sample = self.telemetry()
        return describe_state(sample, self.slowdown(), self.gpu_available(), self._nominal)

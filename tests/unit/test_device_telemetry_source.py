"""TelemetrySource tails a process; here a tiny Python script stands in for tegrastats."""
from __future__ import annotations

import sys
import threading

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.device import TelemetrySource

BUSY_510 = ("RAM 4000/7620MB CPU [20%@1510,off] GR3D_FREQ 95%@[510] tj@85.0C "
            "VDD_IN 9000mW/9000mW")
IDLE_306 = "RAM 3000/7620MB CPU [2%@1510,off] GR3D_FREQ 1%@[306] tj@60.0C"
LOST = "RAM 3000/7620MB CPU [2%@1510,off] GR3D_FREQ off tj@70.0C"


def _fake_tegrastats(*lines: str) -> list[str]:
    """A process that prints ``lines`` then waits (as tegrastats would) until terminated."""
    script = ("import sys, time\n"
              f"for line in {list(lines)!r}:\n"
              "    print(line, flush=True)\n"
              "time.sleep(60)\n")
    return [sys.executable, "-c", script]


def _wait_for(predicate, timeout_s: float = 10.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout_s / 0.02)):
        if predicate():
            return
        done.wait(0.02)
    raise AssertionError("condition not reached")


def test_reads_samples_skips_bad_lines_and_estimates_slowdown() -> None:
    clock = FakeClock()
    src = TelemetrySource(clock, nominal_gpu_mhz=624.0,
                          command=_fake_tegrastats(BUSY_510, "not tegrastats", IDLE_306))
    with src:
        assert src.running
        _wait_for(lambda: src.lines_read == 2)
        sample = src.telemetry()
        assert sample is not None and sample.gpu_freq_mhz == 306         # newest line
        assert src.slowdown() == pytest.approx(624 / 510)                # newest *busy* line
        assert src.gpu_available()
        assert "tj 60.0 C" in src.describe()
    assert not src.running


def test_gpu_reported_off_is_unavailable() -> None:
    src = TelemetrySource(FakeClock(), nominal_gpu_mhz=624.0, command=_fake_tegrastats(LOST))
    with src:
        _wait_for(lambda: src.lines_read == 1)
        assert not src.gpu_available()
        assert src.slowdown() == 1.0
        assert "gpu unavailable" in src.describe()


def test_stale_telemetry_counts_as_none() -> None:
    clock = FakeClock()
    src = TelemetrySource(clock, interval_ms=1000, nominal_gpu_mhz=624.0,
                          command=_fake_tegrastats(LOST))
    with src:
        _wait_for(lambda: src.lines_read == 1)
        assert src.telemetry() is not None
        clock.advance(5.1)                                   # five intervals without a line
        assert src.telemetry() is None
        assert src.gpu_available()                           # unknown is not "lost"
        assert src.slowdown() == 1.0
        assert src.describe() == "no device telemetry"


def test_no_binary_means_not_started(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert TelemetrySource.available() is False
    src = TelemetrySource(FakeClock())
    assert src.start() is False
    assert src.telemetry() is None
    src.stop()                                               # harmless when never started


def test_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        TelemetrySource(FakeClock(), interval_ms=0)

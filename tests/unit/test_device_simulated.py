"""SimulatedDevice: a tegrastats trace replayed on FakeClock (nominal -> throttled ->
recovered -> GPU lost)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.device import (DeviceProfile, SimulatedDevice, TraceError, get_profile,
                                 load_trace_lines, parse_trace, trace_phases)

SIM = get_profile("sim-orin-nano")


def _line(util: int | None, mhz: int, tj: float, stamp: str = "") -> str:
    gr3d = "GR3D_FREQ off" if util is None else f"GR3D_FREQ {util}%@[{mhz}]"
    return f"{stamp} RAM 4000/7620MB CPU [20%@1510,off] {gr3d} tj@{tj}C".strip()


def test_committed_trace_walks_nominal_throttled_recovered_then_gpu_lost() -> None:
    clock = FakeClock()
    dev = SimulatedDevice.from_profile(SIM, clock)
    assert dev.duration_s == 180.0

    clock.advance(30)                                  # nominal: busy at the nominal clock
    assert dev.phase() == "nominal"
    assert dev.gpu_available() and dev.slowdown() == 1.0
    normal_ttft = dev.predict_ttft_s(60)
    normal_tj = dev.telemetry().temps_c["tj"]

    clock.advance(50)                                  # t = 80 s: deep in the throttled part
    assert dev.phase() == "throttled" and dev.gpu_available()
    assert dev.slowdown() > 1.5
    assert dev.telemetry().gpu_freq_mhz < SIM.gpu_nominal_mhz
    assert dev.telemetry().temps_c["tj"] > normal_tj + 15
    assert dev.predict_ttft_s(60) > normal_ttft * 1.5
    assert "MHz" in dev.describe() and "tj" in dev.describe()

    clock.advance(40)                                  # t = 120 s: cooled, the cap released
    assert dev.phase() == "recovered"
    assert dev.gpu_available() and dev.slowdown() == 1.0
    assert dev.predict_ttft_s(60) == pytest.approx(normal_ttft)

    clock.advance(40)                                  # t = 160 s: GPU lost
    assert dev.phase() == "gpu-lost"
    assert not dev.gpu_available()
    assert dev.slowdown() == 1.0                       # nothing to throttle; CPU model applies
    assert dev.telemetry().gpu_present is False
    assert dev.predict_ttft_s(60) > normal_ttft
    assert "gpu unavailable" in dev.describe()

    clock.advance(1000)                                # after the trace: the last state holds
    assert not dev.gpu_available()


def test_the_committed_trace_marks_its_parts_and_each_part_is_what_it_says() -> None:
    dev = SimulatedDevice.from_profile(SIM, FakeClock())
    assert [name for name, _, _ in dev.phases] == \
        ["idle", "nominal", "throttled", "recovered", "gpu-lost"]
    parts = {name: (start, end) for name, start, end in dev.phases}
    assert parts["throttled"] == (60.0, 100.0) and parts["gpu-lost"] == (150.0, 180.0)

    def seconds(name):
        start, end = parts[name]
        return [float(t) for t in range(int(start), int(end))]
    for name in ("idle", "nominal", "recovered"):
        assert all(dev.gpu_available(t) and dev.slowdown(t) == 1.0 for t in seconds(name)), name
    # throttled: every second of it is capped below nominal, down to 306 MHz at the peak
    throttled = [dev.slowdown(t) for t in seconds("throttled")]
    assert min(throttled) == pytest.approx(624 / 408) and max(throttled) == pytest.approx(624 / 306)
    assert all(dev.gpu_available(t) for t in seconds("throttled"))
    assert not any(dev.gpu_available(t) for t in seconds("gpu-lost"))


def test_phase_lines_name_the_samples_after_them() -> None:
    lines = [_line(90, 624, 50.0), "# phase hot", _line(90, 408, 80.0), _line(90, 306, 90.0),
             "# a plain comment", "# phase gone", _line(None, 0, 70.0)]
    assert trace_phases(lines) == [("hot", 1.0, 3.0), ("gone", 3.0, 4.0)]
    dev = SimulatedDevice(SIM, lines, FakeClock())
    assert [dev.phase(t) for t in (0, 1, 2, 3)] == [None, "hot", "hot", "gone"]
    assert trace_phases([_line(90, 624, 50.0)]) == []


def test_committed_trace_is_marked_synthetic_and_fully_parseable() -> None:
    lines = load_trace_lines(SIM.trace)
    assert any("SYNTHETIC" in line for line in lines if line.startswith("#"))
    samples = parse_trace(lines)
    assert len(samples) == 180
    assert [t for t, _ in samples] == [float(i) for i in range(180)]  # from the timestamps


def test_telemetry_at_picks_the_sample_in_force_and_is_independent_of_the_clock() -> None:
    lines = [_line(90, 624, 50.0), _line(90, 408, 80.0), _line(None, 0, 70.0)]
    clock = FakeClock()
    dev = SimulatedDevice(SIM, lines, clock, interval_s=2.0)
    assert dev.telemetry_at(-5).temps_c["tj"] == 50.0
    assert dev.telemetry_at(1.999).temps_c["tj"] == 50.0
    assert dev.telemetry_at(2.0).temps_c["tj"] == 80.0
    assert dev.telemetry_at(4.5).gpu_present is False
    assert dev.slowdown(3.0) == pytest.approx(624 / 408)
    assert dev.telemetry().temps_c["tj"] == 50.0       # the clock has not moved
    clock.advance(3.0)
    assert dev.telemetry().temps_c["tj"] == 80.0


def test_clock_origin_is_creation_time() -> None:
    clock = FakeClock()
    clock.advance(500.0)
    dev = SimulatedDevice(SIM, [_line(90, 624, 50.0), _line(None, 0, 60.0)], clock)
    assert dev.elapsed_s() == 0.0 and dev.gpu_available()
    clock.advance(1.0)
    assert not dev.gpu_available()


def test_loop_restarts_the_trace() -> None:
    lines = [_line(90, 624, 50.0), _line(None, 0, 60.0)]
    dev = SimulatedDevice(SIM, lines, FakeClock(), loop=True)
    assert dev.gpu_available(0.5) and not dev.gpu_available(1.5)
    assert dev.gpu_available(2.5) and not dev.gpu_available(3.5)


def test_sample_without_gpu_field_keeps_the_last_known_gpu_state() -> None:
    lines = [_line(90, 624, 50.0), "RAM 1/2MB", _line(None, 0, 60.0), "RAM 1/2MB"]
    dev = SimulatedDevice(SIM, lines, FakeClock())
    assert [dev.gpu_available(t) for t in (0, 1, 2, 3)] == [True, True, False, False]


def test_idle_samples_do_not_count_as_throttling() -> None:
    lines = [_line(95, 510, 80.0), _line(1, 306, 60.0)]
    dev = SimulatedDevice(SIM, lines, FakeClock())
    assert dev.slowdown(1) == pytest.approx(624 / 510)          # last busy clock, not 306


def test_profile_without_gpu_reports_no_gpu() -> None:
    dev = SimulatedDevice(get_profile("x86-cpu"), [_line(90, 624, 50.0)], FakeClock())
    assert not dev.gpu_available() and dev.slowdown() == 1.0
    with pytest.raises(TraceError, match="latency model"):
        dev.predict_ttft_s(10)


def test_profile_without_trace_cannot_be_simulated() -> None:
    with pytest.raises(TraceError, match="no telemetry trace"):
        SimulatedDevice.from_profile(get_profile("orin-nano-8gb"), FakeClock())
    ghost = DeviceProfile(name="ghost", providers=("cpu",), model_memory_mb=1, llm_threads=1,
                          notes="", trace="no-such-trace.txt")
    with pytest.raises(TraceError, match="no-such-trace"):
        SimulatedDevice.from_profile(ghost, FakeClock())


@pytest.mark.parametrize("lines, match", [
    ([], "no samples"),
    (["# only a comment", ""], "no samples"),
    (["RAM 1/2MB", "garbage line"], "line 2"),
    ([_line(90, 624, 50, "01-01-2026 00:00:05"), _line(90, 624, 50, "01-01-2026 00:00:01")],
     "backwards"),
])
def test_bad_traces_are_rejected(lines, match) -> None:
    with pytest.raises(TraceError, match=match):
        SimulatedDevice(SIM, lines, FakeClock())


def test_timestamps_give_offsets_when_every_line_has_one() -> None:
    lines = [_line(90, 624, 50, "01-01-2026 00:00:00"), _line(90, 510, 60, "01-01-2026 00:00:05")]
    assert [t for t, _ in parse_trace(lines, interval_s=1.0)] == [0.0, 5.0]
    mixed = [lines[0], _line(90, 510, 60)]
    assert [t for t, _ in parse_trace(mixed, interval_s=0.5)] == [0.0, 0.5]


def test_committed_trace_is_what_the_generator_writes() -> None:
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, str(root / "jetson/tools/make_sim_trace.py")],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.splitlines() == load_trace_lines(SIM.trace)


def test_simulated_device_for_only_simulated_profiles_and_loops_by_default() -> None:
    from edge_runtime.device import simulated_device_for
    assert simulated_device_for(get_profile("x86-cpu"), FakeClock()) is None
    assert simulated_device_for(get_profile("orin-nano-8gb"), FakeClock()) is None
    clock = FakeClock()
    dev = simulated_device_for(SIM, clock)
    assert isinstance(dev, SimulatedDevice)
    clock.advance(160)
    assert not dev.gpu_available()
    clock.advance(180)                                 # t = 340 s = 160 s into the second lap
    assert not dev.gpu_available()
    clock.advance(40)                                  # t = 380 s = 20 s: warm-up again
    assert dev.gpu_available() and dev.slowdown() == 1.0


def test_device_monitor_for(monkeypatch) -> None:
    from edge_runtime.device import device_monitor_for
    monkeypatch.setenv("PATH", "/nonexistent")         # no tegrastats on this machine
    assert isinstance(device_monitor_for(SIM, FakeClock()), SimulatedDevice)
    assert device_monitor_for(get_profile("orin-nano-8gb"), FakeClock()) is None
    assert device_monitor_for(get_profile("x86-cpu"), FakeClock()) is None

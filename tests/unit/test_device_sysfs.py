"""The GPU's sysfs (a fake tree laid out as on an Orin Nano, JetPack 6) and the live
telemetry source feeding the scheduler the same signals as the simulated trace."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.device import (SimulatedDevice, SysfsGpu, TelemetrySource, get_profile,
                                 load_trace_lines)

SIM = get_profile("sim-orin-nano")
# tegrastats without root on some releases: no GR3D_FREQ field
NO_GR3D = ("11-30-2026 14:12:07 RAM 4911/7620MB (lfb 9x4MB) SWAP 0/3810MB (cached 0MB) "
           "CPU [48%@1344,45%@1344,41%@1344,47%@1344,43%@1344,44%@1344] EMC_FREQ 61%@2133 "
           "NVENC off NVDEC off APE 200 cpu@92.0C gpu@92.6C tj@93.2C "
           "VDD_IN 8120mW/9380mW VDD_CPU_GPU_CV 3460mW/4670mW")


def _orin_sysfs(root: Path, *, cur_hz: int, load_permille: int, max_hz: int = 624750000
                ) -> Path:
    """/sys/class/devfreq as an Orin Nano has it: the GPU node beside a non-GPU one."""
    other = root / "class/devfreq/3d00000.host1x"
    (other / "device/of_node").mkdir(parents=True)
    (other / "device/of_node/name").write_text("host1x\x00")
    gpu = root / "class/devfreq/17000000.gpu"
    (gpu / "device/of_node").mkdir(parents=True)
    (gpu / "device/of_node/name").write_text("ga10b\x00")      # device-tree strings end in NUL
    (gpu / "cur_freq").write_text(f"{cur_hz}\n")
    (gpu / "max_freq").write_text(f"{max_hz}\n")
    (gpu / "device/load").write_text(f"{load_permille}\n")
    return gpu


def test_find_and_read_the_orin_gpu_node(tmp_path) -> None:
    node = _orin_sysfs(tmp_path, cur_hz=408000000, load_permille=987, max_hz=408000000)
    gpu = SysfsGpu.find(tmp_path)
    assert gpu is not None and gpu.path == node
    r = gpu.read()
    assert (r.present, r.freq_mhz, r.util_pct, r.max_freq_mhz) == (True, 408, 99, 408)
    shutil.rmtree(node)                                   # driver unbound: the node is gone
    assert gpu.read().present is False


def test_no_gpu_node_means_no_sysfs_gpu(tmp_path) -> None:
    assert SysfsGpu.find(tmp_path) is None                # no /sys/class/devfreq at all
    (tmp_path / "class/devfreq/ff.thing/device/of_node").mkdir(parents=True)
    (tmp_path / "class/devfreq/ff.thing/device/of_node/name").write_text("vic\x00")
    assert SysfsGpu.find(tmp_path) is None


def test_a_line_without_gr3d_takes_the_gpu_from_sysfs_and_a_vanished_node_is_a_lost_gpu(
        tmp_path) -> None:
    node = _orin_sysfs(tmp_path, cur_hz=306000000, load_permille=950)
    src = TelemetrySource(FakeClock(), nominal_gpu_mhz=624.0, sysfs=SysfsGpu.find(tmp_path))
    assert src.feed(NO_GR3D)
    assert src.telemetry().gpu_freq_mhz == 306 and src.telemetry().gpu_util_pct == 95
    assert src.slowdown() == pytest.approx(624 / 306) and src.gpu_available()
    shutil.rmtree(node)
    assert src.feed(NO_GR3D)
    assert not src.gpu_available() and src.slowdown() == 1.0
    assert "gpu unavailable" in src.describe()


def test_tegrastats_gpu_fields_win_over_sysfs_while_the_node_is_there(tmp_path) -> None:
    _orin_sysfs(tmp_path, cur_hz=624750000, load_permille=10)
    src = TelemetrySource(FakeClock(), nominal_gpu_mhz=624.0, sysfs=SysfsGpu.find(tmp_path))
    src.feed(NO_GR3D.replace("EMC_FREQ 61%@2133 ", "EMC_FREQ 61%@2133 GR3D_FREQ 99%@[510] "))
    assert src.telemetry().gpu_freq_mhz == 510
    assert src.slowdown() == pytest.approx(624 / 510)


def test_live_source_gives_the_scheduler_the_same_signals_as_the_simulated_trace() -> None:
    """The committed trace, fed line by line to the live tegrastats reader on the same
    clock, yields the slowdown and GPU presence the simulated device replays, every second."""
    clock = FakeClock()
    sim = SimulatedDevice.from_profile(SIM, clock)
    live = TelemetrySource(clock, nominal_gpu_mhz=SIM.gpu_nominal_mhz)
    lines = [x for x in load_trace_lines(SIM.trace) if x.strip() and not x.startswith("#")]
    seen = set()
    for line in lines:
        assert live.feed(line)
        assert live.slowdown() == pytest.approx(sim.slowdown()), sim.elapsed_s()
        assert live.gpu_available() == sim.gpu_available(), sim.elapsed_s()
        assert live.describe() == sim.describe()
        seen.add((sim.phase(), sim.gpu_available(), sim.slowdown() > 1.0))
        clock.advance(1.0)
    assert {("throttled", True, True), ("recovered", True, False),
            ("gpu-lost", False, False)} <= seen

"""tegrastats parser on real-format lines from several Jetsons and releases."""
from __future__ import annotations

from datetime import datetime

import pytest

from edge_runtime.device import TegrastatsParseError, Telemetry, gpu_slowdown, parse_tegrastats

ORIN_NANO_JP6 = (
    "11-29-2026 16:00:01 RAM 2448/7620MB (lfb 2x4MB) SWAP 0/3810MB (cached 0MB) "
    "CPU [12%@1510,5%@1510,3%@1510,4%@1510,off,off] EMC_FREQ 0%@2133 GR3D_FREQ 45%@[624] "
    "NVENC off NVDEC off NVJPG off NVJPG1 off VIC off OFA off APE 200 "
    "cpu@48.5C soc2@47.2C soc0@47.031C gpu@47.9C tj@49.1C soc1@47.3C "
    "VDD_IN 5120mW/5120mW VDD_CPU_GPU_CV 600mW/610mW VDD_SOC 1400mW/1400mW")
# AGX Orin (two GPCs, a rail-gated GPU sensor at -256C, upper-case sensor names, NVENC busy).
AGX_ORIN = (
    "04-11-2025 10:36:27 RAM 4321/62801MB (lfb 1759x4MB) SWAP 19/31400MB (cached 0MB) "
    "CPU [0%@729,0%@729,3%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729,0%@729] "
    "EMC_FREQ 0%@2133 GR3D_FREQ 0%@[0,0] NVENC 79%@166 VIC_FREQ 729 APE 174 CV0@-256C "
    "CPU@44.562C Tboard@32C SOC2@40.093C GPU@-256C tj@44.343C "
    "VDD_GPU_SOC 2340mW/2340mW VDD_CPU_CV 390mW/390mW VIN_SYS_5V0 4025mW/4025mW")
# Jetson Nano, JetPack 4: no timestamp, no GPU clock, POM rails without mW.
NANO_JP4 = (
    "RAM 1766/3964MB (lfb 197x4MB) SWAP 0/2048MB (cached 0MB) "
    "CPU [24%@1224,15%@1224,13%@1224,10%@1224] EMC_FREQ 0% GR3D_FREQ 0% "
    "PLL@21C CPU@25C PMIC@100C GPU@23.5C AO@33.5C thermal@24.5C "
    "POM_5V_IN 2545/2547 POM_5V_GPU 0/0 POM_5V_CPU 549/529")
# TX1/TX2-era: one shared CPU clock after the bracket, GPU clock without brackets.
TX2_OLD = "RAM 1500/7851MB (lfb 1x4MB) CPU [10%,5%,off,off]@2035 EMC_FREQ 3%@1866 GR3D_FREQ 30%@1300"


def test_orin_nano_line_all_fields() -> None:
    t = parse_tegrastats(ORIN_NANO_JP6)
    assert t.timestamp == datetime(2026, 11, 29, 16, 0, 1)
    assert (t.ram_used_mb, t.ram_total_mb, t.swap_used_mb, t.swap_total_mb) == (2448, 7620, 0, 3810)
    assert t.cpu_util_pct == (12, 5, 3, 4, None, None)
    assert t.cpu_freq_mhz == (1510, 1510, 1510, 1510, None, None)
    assert (t.emc_util_pct, t.emc_freq_mhz) == (0, 2133)
    assert (t.gpu_util_pct, t.gpu_freq_mhz, t.gpu_present) == (45, 624, True)
    assert t.temps_c == {"cpu": 48.5, "soc2": 47.2, "soc0": 47.031, "gpu": 47.9, "tj": 49.1,
                         "soc1": 47.3}
    assert t.hottest_c == 49.1
    assert t.power_mw == {"VDD_IN": (5120, 5120), "VDD_CPU_GPU_CV": (600, 610),
                          "VDD_SOC": (1400, 1400)}
    assert t.gpu_freq_informative


def test_agx_orin_two_gpcs_and_invalid_sensors() -> None:
    t = parse_tegrastats(AGX_ORIN)
    assert t.gpu_freq_mhz == 0 and t.gpu_util_pct == 0 and t.gpu_present is True
    assert len(t.cpu_util_pct) == 12
    assert "gpu" not in t.temps_c and "cv0" not in t.temps_c        # -256C = sensor off
    assert t.temps_c["cpu"] == 44.562 and t.temps_c["tboard"] == 32.0
    assert t.power_mw["VIN_SYS_5V0"] == (4025, 4025)
    assert not t.gpu_freq_informative                                 # idle: clock says nothing


def test_jetson_nano_jp4_without_timestamp_or_gpu_clock() -> None:
    t = parse_tegrastats(NANO_JP4)
    assert t.timestamp is None
    assert (t.emc_util_pct, t.emc_freq_mhz) == (0, None)
    assert (t.gpu_util_pct, t.gpu_freq_mhz, t.gpu_present) == (0, None, True)
    assert t.temps_c["pmic"] == 100.0 and t.temps_c["gpu"] == 23.5
    assert t.power_mw == {"POM_5V_IN": (2545, 2547), "POM_5V_GPU": (0, 0), "POM_5V_CPU": (549, 529)}
    assert "RAM" not in t.power_mw and "SWAP" not in t.power_mw


def test_old_shared_cpu_clock_and_unbracketed_gpu_clock() -> None:
    t = parse_tegrastats(TX2_OLD)
    assert t.cpu_util_pct == (10, 5, None, None)
    assert t.cpu_freq_mhz == (2035, 2035, None, None)
    assert (t.gpu_util_pct, t.gpu_freq_mhz) == (30, 1300)
    assert t.swap_used_mb is None and t.temps_c == {} and t.power_mw == {}


@pytest.mark.parametrize("line, check", [
    ("RAM 2000/7620MB (lfb 2x4MB)", lambda t: t.ram_used_mb == 2000 and t.gpu_present is None
     and t.cpu_util_pct == () and t.temps_c == {}),
    ("GR3D_FREQ 88%@[510] tj@81.5C", lambda t: t.gpu_freq_mhz == 510 and t.temps_c == {"tj": 81.5}
     and t.ram_used_mb is None),
    ("12-01-2026 08:00:00 GR3D_FREQ off cpu@70.0C", lambda t: t.gpu_present is False
     and t.gpu_util_pct is None and t.gpu_freq_mhz is None and t.timestamp.day == 1),
    ("VDD_IN 4000mW/4100mW", lambda t: t.power_mw == {"VDD_IN": (4000, 4100)}),
    ("  RAM 1/2MB\n", lambda t: t.ram_total_mb == 2),
])
def test_lines_missing_fields_parse_what_is_there(line: str, check) -> None:
    assert check(parse_tegrastats(line))


@pytest.mark.parametrize("line", ["", "   ", "hello world", "Segmentation fault (core dumped)",
                                  "RAM lots/7620MB"])
def test_lines_without_any_field_are_errors(line: str) -> None:
    with pytest.raises(TegrastatsParseError) as info:
        parse_tegrastats(line)
    assert info.value.stage == "device"


def test_malformed_cpu_entry_is_an_error() -> None:
    with pytest.raises(TegrastatsParseError, match="CPU entry"):
        parse_tegrastats("RAM 1/2MB CPU [12%@1510,busy]")


def test_bad_timestamp_is_an_error() -> None:
    with pytest.raises(TegrastatsParseError, match="timestamp"):
        parse_tegrastats("13-45-2026 16:00:01 RAM 1/2MB")


def test_non_text_is_an_error() -> None:
    with pytest.raises(TegrastatsParseError):
        parse_tegrastats(b"RAM 1/2MB")  # type: ignore[arg-type]


def _gpu(util: int | None, mhz: int | None, present: bool | None = True) -> Telemetry:
    return Telemetry(gpu_util_pct=util, gpu_freq_mhz=mhz, gpu_present=present)


def test_gpu_slowdown_uses_newest_busy_sample() -> None:
    newest_first = [_gpu(2, 306), _gpu(95, 408), _gpu(95, 624)]
    assert gpu_slowdown(newest_first, 624.0) == pytest.approx(624 / 408)   # idle clock ignored
    assert gpu_slowdown([_gpu(95, 624)], 624.0) == 1.0
    assert gpu_slowdown([_gpu(95, 1020)], 624.0) == 1.0                    # Super mode: not < 1
    assert gpu_slowdown([_gpu(2, 306)], 624.0) == 1.0                      # nothing informative
    assert gpu_slowdown([_gpu(None, None, False), _gpu(95, 306)], 624.0) == 1.0
    assert gpu_slowdown([_gpu(95, 306)], None) == 1.0                      # no GPU in profile
    assert gpu_slowdown([], 624.0) == 1.0

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


# A throttling episode on an Orin Nano 8 GB (JetPack 6, 15 W mode, nominal GPU 624 MHz), one
# line a second: busy at nominal; the thermal cap steps the busy GPU down while tj passes
# 90 C and the CPU cluster drops to 1344 MHz; a moment of GPU idle inside it (the governor's
# 306 MHz says nothing); the cap released.
THROTTLING = [
    "11-30-2026 14:12:05 RAM 4890/7620MB (lfb 12x4MB) SWAP 0/3810MB (cached 0MB) "
    "CPU [41%@1510,38%@1510,35%@1510,40%@1510,37%@1510,39%@1510] EMC_FREQ 55%@2133 "
    "GR3D_FREQ 97%@[624] NVENC off NVDEC off NVJPG off NVJPG1 off VIC off OFA off APE 200 "
    "cpu@83.2C soc2@82.0C soc0@82.3C gpu@83.7C tj@84.3C soc1@82.2C "
    "VDD_IN 9860mW/9410mW VDD_CPU_GPU_CV 5020mW/4700mW VDD_SOC 1960mW/1940mW",
    "11-30-2026 14:12:06 RAM 4902/7620MB (lfb 10x4MB) SWAP 0/3810MB (cached 0MB) "
    "CPU [44%@1510,40%@1510,39%@1510,42%@1510,36%@1510,41%@1510] EMC_FREQ 58%@2133 "
    "GR3D_FREQ 99%@[510] NVENC off NVDEC off NVJPG off NVJPG1 off VIC off OFA off APE 200 "
    "cpu@86.9C soc2@85.6C soc0@85.9C gpu@87.5C tj@88.1C soc1@85.8C "
    "VDD_IN 8930mW/9400mW VDD_CPU_GPU_CV 4180mW/4690mW VDD_SOC 1950mW/1940mW",
    "11-30-2026 14:12:07 RAM 4911/7620MB (lfb 9x4MB) SWAP 0/3810MB (cached 0MB) "
    "CPU [48%@1344,45%@1344,41%@1344,47%@1344,43%@1344,44%@1344] EMC_FREQ 61%@2133 "
    "GR3D_FREQ 99%@[408] NVENC off NVDEC off NVJPG off NVJPG1 off VIC off OFA off APE 200 "
    "cpu@92.0C soc2@90.7C soc0@91.1C gpu@92.6C tj@93.2C soc1@90.9C "
    "VDD_IN 8120mW/9380mW VDD_CPU_GPU_CV 3460mW/4670mW VDD_SOC 1930mW/1940mW",
    "11-30-2026 14:12:08 RAM 4880/7620MB (lfb 9x4MB) SWAP 0/3810MB (cached 0MB) "
    "CPU [9%@1344,6%@1344,4%@1344,7%@1344,5%@1344,3%@1344] EMC_FREQ 4%@2133 "
    "GR3D_FREQ 3%@[306] NVENC off NVDEC off NVJPG off NVJPG1 off VIC off OFA off APE 200 "
    "cpu@91.1C soc2@89.8C soc0@90.2C gpu@91.6C tj@92.3C soc1@90.0C "
    "VDD_IN 5310mW/9290mW VDD_CPU_GPU_CV 940mW/4590mW VDD_SOC 1400mW/1930mW",
    "11-30-2026 14:12:09 RAM 4906/7620MB (lfb 9x4MB) SWAP 0/3810MB (cached 0MB) "
    "CPU [47%@1344,44%@1344,40%@1344,45%@1344,42%@1344,46%@1344] EMC_FREQ 60%@2133 "
    "GR3D_FREQ 98%@[306] NVENC off NVDEC off NVJPG off NVJPG1 off VIC off OFA off APE 200 "
    "cpu@94.6C soc2@93.3C soc0@93.7C gpu@95.1C tj@95.8C soc1@93.5C "
    "VDD_IN 7510mW/9200mW VDD_CPU_GPU_CV 2890mW/4500mW VDD_SOC 1920mW/1930mW",
    "11-30-2026 14:13:40 RAM 4895/7620MB (lfb 11x4MB) SWAP 0/3810MB (cached 0MB) "
    "CPU [40%@1510,37%@1510,36%@1510,41%@1510,38%@1510,40%@1510] EMC_FREQ 54%@2133 "
    "GR3D_FREQ 96%@[624] NVENC off NVDEC off NVJPG off NVJPG1 off VIC off OFA off APE 200 "
    "cpu@77.9C soc2@76.7C soc0@77.0C gpu@78.4C tj@79.0C soc1@76.9C "
    "VDD_IN 9790mW/9050mW VDD_CPU_GPU_CV 4960mW/4380mW VDD_SOC 1950mW/1930mW",
]


def test_a_throttling_episode_reads_as_clock_caps_and_heat() -> None:
    samples = [parse_tegrastats(line) for line in THROTTLING]
    assert [s.gpu_freq_mhz for s in samples] == [624, 510, 408, 306, 306, 624]
    assert [s.gpu_freq_informative for s in samples] == [True, True, True, False, True, True]
    assert [s.temps_c["tj"] for s in samples] == [84.3, 88.1, 93.2, 92.3, 95.8, 79.0]
    assert samples[2].cpu_freq_mhz == (1344,) * 6 and samples[0].cpu_freq_mhz == (1510,) * 6
    assert samples[4].power_mw["VDD_CPU_GPU_CV"] == (2890, 4500)
    assert all(s.gpu_present for s in samples) and samples[4].hottest_c == 95.8

    # the slowdown the scheduler prices after each line (newest busy clock vs 624 MHz)
    slowdowns = [gpu_slowdown(reversed(samples[:i + 1]), 624.0) for i in range(len(samples))]
    assert slowdowns == pytest.approx([1.0, 624 / 510, 624 / 408, 624 / 408,   # idle: held
                                       624 / 306, 1.0])


def test_tegrastats_without_root_may_leave_out_the_gpu() -> None:
    """Without root some releases print no GR3D_FREQ: the GPU is unknown, not lost (the
    sysfs devfreq node then gives its clock, see test_device_sysfs.py)."""
    line = THROTTLING[2].replace("GR3D_FREQ 99%@[408] ", "")
    t = parse_tegrastats(line)
    assert t.gpu_present is None and t.gpu_freq_mhz is None and t.temps_c["tj"] == 93.2

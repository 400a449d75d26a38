#!/usr/bin/env python3
"""Write the synthetic Orin Nano tegrastats trace used by the ``sim-orin-nano`` profile.

The trace is SYNTHETIC: no Jetson recorded it. Field layout follows real Orin
Nano 8 GB output on JetPack 6 (L4T r36.4): timestamp, RAM/SWAP, six CPU cores,
EMC, GR3D, engines, six thermal zones, three power rails. Values are plausible
but made up. Five phases, one line per second, each opened by a ``# phase NAME``
comment line (``SimulatedDevice.phases`` reads them; tegrastats parsing skips them):

  0-4 s     idle:      GPU idle at its lowest clock (306 MHz: the governor, not throttling)
  5-59 s    nominal:   busy at the nominal 624 MHz, tj 46 -> 84 C
  60-99 s   throttled: tj crosses the 85 C trip point, the thermal governor caps the busy
                       GPU at 408 MHz, 306 MHz above 90 C (peak 95 C); the fan catches up
                       and tj falls back to 80 C
  100-149 s recovered: tj below the 80 C release point, busy at 624 MHz again (tj 79-83 C)
  150-179 s gpu-lost:  ``GR3D_FREQ off`` (this project's marker, see
                       edge_runtime/device/tegrastats.py), no gpu@ sensor, GPU memory freed

Usage: python jetson/tools/make_sim_trace.py > edge_runtime/device/traces/sim-orin-nano.tegrastats.txt
"""
from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta

START = datetime(2026, 11, 29, 16, 0, 0)
HEADER = """\
# SYNTHETIC tegrastats trace of a Jetson Orin Nano 8 GB (JetPack 6 / L4T r36.4 line format).
# Not recorded on hardware: written by jetson/tools/make_sim_trace.py (seeded, reproducible).
# Phases (each opened by a "# phase NAME" line, read by SimulatedDevice.phases):
#   0-4 s idle (GPU idle at 306 MHz), 5-59 s nominal (busy at 624 MHz, tj 46 -> 84 C),
#   60-99 s throttled (tj past the 85 C trip: busy GPU capped at 408 MHz, 306 MHz above 90 C),
#   100-149 s recovered (tj below 80 C: busy at 624 MHz again),
#   150-179 s gpu-lost (GR3D_FREQ off, no gpu@ sensor).
# Used by the sim-orin-nano device profile (edge_runtime.device.SimulatedDevice).
"""
# (first second, name) of each phase, in order
PHASES = ((0, "idle"), (5, "nominal"), (60, "throttled"), (100, "recovered"), (150, "gpu-lost"))
DURATION_S = 180


def phase_of(t: int) -> str:
    return [name for start, name in PHASES if t >= start][-1]


def junction_c(t: int, phase: str) -> float:
    """The junction temperature (C) of second ``t`` (before noise)."""
    if phase in ("idle", "nominal"):
        return 46.0 + 38.0 * t / 59.0
    if phase == "throttled":                    # up to the 95 C peak, then the fan wins
        return 86.0 + 9.0 * (t - 60) / 20.0 if t < 80 else 95.0 - 15.0 * (t - 80) / 19.0
    if phase == "recovered":
        return 79.0 + 4.0 * (t - 100) / 49.0
    return 78.0 - 10.0 * (t - 150) / 29.0       # gpu-lost: the SoC cools


def throttled_clock(tj: float) -> int:
    """The thermal governor's cap (MHz) while throttled."""
    return 306 if tj >= 90.0 else 408


def line(t: int, rng: random.Random) -> str:
    phase = phase_of(t)
    tj = junction_c(t, phase) + rng.uniform(-0.4, 0.4)
    busy = phase in ("nominal", "throttled", "recovered")
    ram = (4890 if busy else (2448 if phase == "idle" else 3350)) + rng.randint(-40, 40)
    cpu_load = [rng.randint(18, 45) if busy else rng.randint(2, 30) for _ in range(6)]
    cpu_mhz = 1510 if tj < 90 else 1344
    cpus = ",".join(f"{u}%@{cpu_mhz}" for u in cpu_load)
    if phase == "idle":
        gr3d, gpu_w = f"GR3D_FREQ {rng.randint(0, 4)}%@[306]", 150
    elif phase == "gpu-lost":
        gr3d, gpu_w = "GR3D_FREQ off", 0
    else:
        mhz = throttled_clock(tj) if phase == "throttled" else 624
        gr3d, gpu_w = f"GR3D_FREQ {rng.randint(82, 99)}%@[{mhz}]", int(3200 * mhz / 624)
    temps = [("cpu", tj - 1.1), ("soc2", tj - 2.3), ("soc0", tj - 2.0)]
    if phase != "gpu-lost":
        temps.append(("gpu", tj - 0.6))
    temps += [("tj", tj), ("soc1", tj - 2.1)]
    temp_text = " ".join(f"{name}@{value:.3f}C" for name, value in temps)
    cv = gpu_w + 90 * sum(cpu_load) // 100 * 10
    soc = 1350 + rng.randint(-50, 50) + (600 if busy else 0)
    vin = 2900 + cv + soc
    stamp = (START + timedelta(seconds=t)).strftime("%m-%d-%Y %H:%M:%S")
    return (f"{stamp} RAM {ram}/7620MB (lfb {rng.randint(2, 40)}x4MB) SWAP 0/3810MB (cached 0MB) "
            f"CPU [{cpus}] EMC_FREQ {rng.randint(20, 60) if busy else 3}%@2133 {gr3d} "
            f"NVENC off NVDEC off NVJPG off NVJPG1 off VIC off OFA off APE 200 {temp_text} "
            f"VDD_IN {vin}mW/{vin}mW VDD_CPU_GPU_CV {cv}mW/{cv}mW VDD_SOC {soc}mW/{soc}mW")


def main() -> None:
    rng = random.Random(7)
    starts = {start: name for start, name in PHASES}
    sys.stdout.write(HEADER)
    for t in range(DURATION_S):
        if t in starts:
            sys.stdout.write(f"# phase {starts[t]}\n")
        sys.stdout.write(line(t, rng) + "\n")


if __name__ == "__main__":
    main()

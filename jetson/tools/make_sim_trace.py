#!/usr/bin/env python3
"""Write the synthetic Orin Nano tegrastats trace used by the ``sim-orin-nano`` profile.

The trace is SYNTHETIC: no Jetson recorded it. Field layout follows real Orin
Nano 8 GB output on JetPack 6 (L4T r36.4): timestamp, RAM/SWAP, six CPU cores,
EMC, GR3D, engines, six thermal zones, three power rails. Values are plausible
but made up. Three phases, one line per second:

  0-59 s    warm-up: GPU idle for 5 s, then busy at the nominal 624 MHz, tj 46 -> 68 C
  60-149 s  thermal throttling: tj 70 -> 96 C, GPU clock steps 624 -> 612 -> 510 -> 408 -> 306 MHz
  150-179 s GPU loss: ``GR3D_FREQ off`` (this project's marker, see edge_runtime/device/tegrastats.py),
            no gpu@ sensor, GPU memory freed, the SoC cools down

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
# Phases: 0-59 s warm-up (GPU at 624 MHz), 60-149 s thermal throttling (clock steps down to
# 306 MHz as tj reaches 96 C), 150-179 s GPU loss (GR3D_FREQ off, no gpu@ sensor).
# Used by the sim-orin-nano device profile (edge_runtime.device.SimulatedDevice).
"""


def gpu_clock(tj: float) -> int:
    """A stepped thermal-cap table (MHz) over the junction temperature (C)."""
    for limit, mhz in ((75.0, 624), (82.0, 612), (88.0, 510), (92.0, 408)):
        if tj < limit:
            return mhz
    return 306


def line(t: int, rng: random.Random) -> str:
    if t < 60:
        phase = "idle" if t < 5 else "warm"
        tj = 46.0 + 22.0 * t / 59.0
    elif t < 150:
        phase = "throttle"
        tj = 70.0 + 26.0 * (t - 60) / 89.0
    else:
        phase = "lost"
        tj = 90.0 - 20.0 * (t - 150) / 29.0
    tj += rng.uniform(-0.4, 0.4)
    busy = phase in ("warm", "throttle")
    ram = (4890 if busy else (2448 if phase == "idle" else 3350)) + rng.randint(-40, 40)
    cpu_load = [rng.randint(18, 45) if busy else rng.randint(2, 30) for _ in range(6)]
    cpu_mhz = 1510 if tj < 90 else 1344
    cpus = ",".join(f"{u}%@{cpu_mhz}" for u in cpu_load)
    if phase == "idle":
        gr3d, gpu_w = f"GR3D_FREQ {rng.randint(0, 4)}%@[306]", 150
    elif phase == "lost":
        gr3d, gpu_w = "GR3D_FREQ off", 0
    else:
        mhz = gpu_clock(tj)
        gr3d, gpu_w = f"GR3D_FREQ {rng.randint(82, 99)}%@[{mhz}]", int(3200 * mhz / 624)
    temps = [("cpu", tj - 1.1), ("soc2", tj - 2.3), ("soc0", tj - 2.0)]
    if phase != "lost":
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
    sys.stdout.write(HEADER)
    for t in range(180):
        sys.stdout.write(line(t, rng) + "\n")


if __name__ == "__main__":
    main()

"""Parse NVIDIA ``tegrastats`` output into ``Telemetry`` values.

One tegrastats line looks like this on an Orin Nano (JetPack 6, L4T r36.4)::

    11-29-2026 16:00:01 RAM 2448/7620MB (lfb 2x4MB) SWAP 0/3810MB (cached 0MB)
    CPU [12%@1510,5%@1510,3%@1510,4%@1510,off,off] EMC_FREQ 0%@2133
    GR3D_FREQ 45%@[624] NVENC off NVDEC off NVJPG off VIC off OFA off APE 200
    cpu@48.5C soc2@47.2C soc0@47.0C gpu@47.9C tj@49.1C soc1@47.3C
    VDD_IN 5120mW/5120mW VDD_CPU_GPU_CV 600mW/600mW VDD_SOC 1400mW/1400mW

(all on one line). Fields differ between modules and releases: the timestamp
is absent before JetPack 5, older boards print ``GR3D_FREQ 0%@921`` or
``GR3D_FREQ 0%`` and ``POM_5V_IN 2545/2547``, AGX Orin prints two GPC clocks
(``@[0,0]``), and a powered-down sensor reads ``-256C``. Every field is
optional here; a line with none of them is an error, not an empty sample.

``GR3D_FREQ off`` marks the GPU engine as gone (lost, powered off). Real
tegrastats prints ``off`` for idle engines such as NVENC; this project's
simulated traces use it for the GPU-loss phase.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from .errors import TegrastatsParseError

# A GPU busier than this (percent) runs at the clock DVFS and thermal limits
# allow; below it the governor lowers the clock because there is no work, so
# the clock says nothing about throttling.
BUSY_GPU_UTIL_PCT = 30.0

_TIMESTAMP = re.compile(r"^\s*(\d{2}-\d{2}-\d{4} \d{2}:\d{2}:\d{2})\s")
_RAM = re.compile(r"\bRAM (\d+)/(\d+)MB")
_SWAP = re.compile(r"\bSWAP (\d+)/(\d+)MB")
_CPU = re.compile(r"\bCPU \[([^\]]*)\](?:@(\d+))?")
_CPU_CORE = re.compile(r"^(\d+)%(?:@(\d+))?$")
_EMC = re.compile(r"\bEMC_FREQ (\d+)%(?:@(\d+))?")
_GR3D = re.compile(r"\bGR3D_FREQ (?:(off)\b|(\d+)%(?:@\[?([\d,]+)\]?)?)")
_TEMP = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_]*)@(-?\d+(?:\.\d+)?)C(?=\s|$)")
_POWER = re.compile(r"(?:^|\s)([A-Z][A-Z0-9_]*) (\d+)(?:mW)?/(\d+)(?:mW)?(?=\s|$)")
_INVALID_TEMP_C = -256.0          # what tegrastats prints for a sensor that is off


@dataclass(frozen=True)
class Telemetry:
    """One tegrastats sample. ``None`` means the line did not carry the field.

    Memory in MB, clocks in MHz, utilisation in percent (0-100), temperatures
    in degrees Celsius (lower-case sensor names: ``cpu``, ``gpu``, ``tj``, ...),
    power in milliwatts as (current, average) per rail.
    ``gpu_present`` is True when the GPU engine reports a load, False when it is
    reported ``off`` (lost), None when the line has no GR3D field.
    """

    timestamp: datetime | None = None
    ram_used_mb: int | None = None
    ram_total_mb: int | None = None
    swap_used_mb: int | None = None
    swap_total_mb: int | None = None
    cpu_util_pct: tuple[int | None, ...] = ()     # per core; None = core off
    cpu_freq_mhz: tuple[int | None, ...] = ()
    emc_util_pct: int | None = None
    emc_freq_mhz: int | None = None
    gpu_util_pct: int | None = None
    gpu_freq_mhz: int | None = None               # highest GPC clock
    gpu_present: bool | None = None
    temps_c: dict[str, float] = field(default_factory=dict)
    power_mw: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def hottest_c(self) -> float | None:
        """The highest valid temperature in the sample (°C), or None."""
        return max(self.temps_c.values()) if self.temps_c else None

    @property
    def gpu_freq_informative(self) -> bool:
        """True when the GPU clock reflects what the GPU can do (busy, clock known)."""
        return (self.gpu_present is True and bool(self.gpu_freq_mhz)
                and (self.gpu_util_pct or 0) >= BUSY_GPU_UTIL_PCT)


def parse_tegrastats(line: str) -> Telemetry:
    """Parse one tegrastats line; raise TegrastatsParseError if no field is recognisable."""
    if not isinstance(line, str):
        raise TegrastatsParseError(f"tegrastats line must be text, got {type(line).__name__}")
    values: dict = {}
    found = False
    m = _TIMESTAMP.match(line)
    if m:
        try:
            values["timestamp"] = datetime.strptime(m.group(1), "%m-%d-%Y %H:%M:%S")
        except ValueError:
            raise TegrastatsParseError(f"bad tegrastats timestamp {m.group(1)!r}") from None
    for regex, keys in ((_RAM, ("ram_used_mb", "ram_total_mb")),
                        (_SWAP, ("swap_used_mb", "swap_total_mb")),
                        (_EMC, ("emc_util_pct", "emc_freq_mhz"))):
        m = regex.search(line)
        if m:
            found = True
            for key, text in zip(keys, m.groups(), strict=True):
                values[key] = None if text is None else int(text)
    m = _CPU.search(line)
    if m:
        found = True
        values["cpu_util_pct"], values["cpu_freq_mhz"] = _parse_cpus(m.group(1), m.group(2), line)
    m = _GR3D.search(line)
    if m:
        found = True
        if m.group(1):
            values["gpu_present"] = False
        else:
            values["gpu_present"] = True
            values["gpu_util_pct"] = int(m.group(2))
            if m.group(3):
                values["gpu_freq_mhz"] = max(int(f) for f in m.group(3).split(",") if f)
    temps = {}
    for name, value in _TEMP.findall(line):
        found = True
        if float(value) > _INVALID_TEMP_C:
            temps[name.lower()] = float(value)
    power = {name: (int(cur), int(avg)) for name, cur, avg in _POWER.findall(line)
             if name not in ("RAM", "SWAP")}
    found = found or bool(power)
    if not found:
        raise TegrastatsParseError(f"not a tegrastats line: {line[:80]!r}",
                                   hint="expected fields such as RAM, CPU [..], GR3D_FREQ, tj@..C")
    return Telemetry(temps_c=temps, power_mw=power, **values)


def _parse_cpus(body: str, shared_freq: str | None, line: str
                ) -> tuple[tuple[int | None, ...], tuple[int | None, ...]]:
    utils: list[int | None] = []
    freqs: list[int | None] = []
    for item in (x.strip() for x in body.split(",")):
        if not item:
            continue
        if item == "off":
            utils.append(None)
            freqs.append(None)
            continue
        m = _CPU_CORE.match(item)
        if not m:
            raise TegrastatsParseError(f"bad CPU entry {item!r} in tegrastats line {line[:80]!r}")
        utils.append(int(m.group(1)))
        freq = m.group(2) or shared_freq
        freqs.append(int(freq) if freq else None)
    return tuple(utils), tuple(freqs)


def gpu_slowdown(samples_newest_first, nominal_mhz: float | None) -> float:
    """Factor >= 1 by which GPU compute is slower than at ``nominal_mhz``.

    Uses the newest sample whose GPU clock is informative (GPU present and
    busy); an idle GPU's low clock is the governor saving power, not
    throttling. Returns 1.0 when no sample is informative, when there is no
    GPU, or when the clock is at or above nominal.
    """
    if not nominal_mhz:
        return 1.0
    for sample in samples_newest_first:
        if sample.gpu_present is False:
            return 1.0
        if sample.gpu_freq_informative:
            return max(1.0, float(nominal_mhz) / float(sample.gpu_freq_mhz))
    return 1.0

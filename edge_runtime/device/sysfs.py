"""The Jetson GPU as sysfs shows it: its devfreq clock and load, and whether it is there.

The integrated GPU is a devfreq device whose device-tree node is named after the chip
(``ga10b`` on Orin, ``gv11b`` on Xavier, ``gp10b`` on TX2); on an Orin Nano, JetPack 6::

    /sys/class/devfreq/17000000.gpu/cur_freq        current clock, Hz   (e.g. 624750000)
    /sys/class/devfreq/17000000.gpu/max_freq        the cap in force, Hz
    /sys/class/devfreq/17000000.gpu/device/load     busy share, per mille (0-1000)
    /sys/class/devfreq/17000000.gpu/device/of_node/name   "ga10b"

These files are world-readable, while ``tegrastats`` run without root may leave out its
``GR3D_FREQ`` field, so :class:`~.telemetry_source.TelemetrySource` fills a sample's GPU
fields from here when the line has none. A GPU node that was found at start and can no
longer be read means the GPU is gone (driver unbound or crashed): the same "GPU lost" the
simulated trace marks with ``GR3D_FREQ off``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

GPU_NODE_NAMES = ("ga10b", "gv11b", "gp10b", "gpu")


@dataclass(frozen=True)
class GpuReading:
    """One read of the GPU's sysfs files; None where a file could not be read."""

    present: bool
    util_pct: int | None = None
    freq_mhz: int | None = None
    max_freq_mhz: int | None = None


class SysfsGpu:
    """Reads one devfreq GPU node (see the module docstring)."""

    def __init__(self, devfreq_dir: Path) -> None:
        self.path = Path(devfreq_dir)

    @classmethod
    def find(cls, root: Path | str = "/sys") -> SysfsGpu | None:
        """The integrated GPU's devfreq node under ``root``, or None (no Jetson GPU here)."""
        base = Path(root) / "class" / "devfreq"
        try:
            entries = sorted(base.iterdir())
        except OSError:
            return None
        for entry in entries:
            name = _read(entry / "device" / "of_node" / "name")
            if name is not None and name.strip("\x00\n ") in GPU_NODE_NAMES:
                log.info("GPU clock and load from %s", entry)
                return cls(entry)
        return None

    def read(self) -> GpuReading:
        """The clock (MHz), its cap and the load now; ``present`` False once the node's
        clock can no longer be read."""
        cur = _read_int(self.path / "cur_freq")
        if cur is None:
            return GpuReading(present=False)
        load = _read_int(self.path / "device" / "load")
        cap = _read_int(self.path / "max_freq")
        return GpuReading(present=True, util_pct=None if load is None else round(load / 10),
                          freq_mhz=round(cur / 1e6),
                          max_freq_mhz=None if cap is None else round(cap / 1e6))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None

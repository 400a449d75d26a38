"""Device layer: profiles (provider order, memory budget, latency prior), tegrastats
telemetry, a simulated Orin Nano for x86 tests, and live telemetry on a Jetson.

    profile = get_profile(cfg.device.profile)
    monitor = device_monitor_for(profile, clock)   # SimulatedDevice | TelemetrySource | None
    if monitor is not None:
        monitor.slowdown(); monitor.gpu_available(); monitor.describe()
"""
from __future__ import annotations

from .base import DeviceMonitor
from .errors import TegrastatsParseError, TraceError, UnknownProfileError
from .factory import device_monitor_for
from .profiles import DeviceProfile, LatencyModel, get_profile, profile_names
from .simulated import (SimulatedDevice, load_trace_lines, parse_trace, simulated_device_for,
                        trace_phases)
from .sysfs import GpuReading, SysfsGpu
from .tegrastats import Telemetry, gpu_slowdown, parse_tegrastats
from .telemetry_source import TelemetrySource

__all__ = [
    "DeviceMonitor", "DeviceProfile", "GpuReading", "LatencyModel", "SimulatedDevice",
    "SysfsGpu", "Telemetry",
    "TelemetrySource", "TegrastatsParseError", "TraceError", "UnknownProfileError",
    "get_profile", "gpu_slowdown", "load_trace_lines", "parse_tegrastats", "parse_trace",
    "device_monitor_for", "profile_names", "simulated_device_for", "trace_phases",
]

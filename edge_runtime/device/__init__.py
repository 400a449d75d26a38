"""Device layer: profiles (provider order, memory budget, latency prior), tegrastats
telemetry, a simulated Orin Nano for x86 tests, and live telemetry on a Jetson.

    profile = get_profile(cfg.device.profile)
    if profile.simulated:
        device = SimulatedDevice.from_profile(profile, clock)
    elif TelemetrySource.available():
        device = TelemetrySource(clock, nominal_gpu_mhz=profile.gpu_nominal_mhz); device.start()
"""
from __future__ import annotations

from .base import DeviceMonitor
from .errors import TegrastatsParseError, TraceError, UnknownProfileError
from .profiles import DeviceProfile, LatencyModel, get_profile, profile_names
from .simulated import SimulatedDevice, load_trace_lines, parse_trace
from .tegrastats import Telemetry, gpu_slowdown, parse_tegrastats
from .telemetry_source import TelemetrySource

__all__ = [
    "DeviceMonitor", "DeviceProfile", "LatencyModel", "SimulatedDevice", "Telemetry",
    "TelemetrySource", "TegrastatsParseError", "TraceError", "UnknownProfileError",
    "get_profile", "gpu_slowdown", "load_trace_lines", "parse_tegrastats", "parse_trace",
    "profile_names",
]

"""Pick the device monitor for a profile: simulated, live tegrastats, or none."""
from __future__ import annotations

import logging

from ..clock import Clock
from .base import DeviceMonitor
from .profiles import DeviceProfile
from .simulated import simulated_device_for
from .sysfs import SysfsGpu
from .telemetry_source import TelemetrySource

log = logging.getLogger(__name__)


def device_monitor_for(profile: DeviceProfile, clock: Clock) -> DeviceMonitor | None:
    """A SimulatedDevice for a simulated profile; a started TelemetrySource on a Jetson
    (GPU profile and ``tegrastats`` on PATH); otherwise None (no telemetry: slowdown 1.0).

    The caller owns a returned TelemetrySource and calls ``stop()`` at shutdown.
    """
    sim = simulated_device_for(profile, clock)
    if sim is not None:
        return sim
    if profile.has_gpu and TelemetrySource.available():
        source = TelemetrySource(clock, nominal_gpu_mhz=profile.gpu_nominal_mhz,
                                 sysfs=SysfsGpu.find())
        if source.start():
            return source
    if profile.has_gpu:
        log.info("profile %s: no tegrastats here, GPU throttling is not tracked", profile.name)
    return None

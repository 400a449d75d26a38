"""Errors of the device layer (profiles, telemetry, simulated device)."""
from __future__ import annotations

from ..errors import BadInputError, ConfigError


class UnknownProfileError(ConfigError):
    """``device.profile`` names no built-in profile."""

    code = "unknown_device_profile"


class TraceError(ConfigError):
    """A telemetry trace file is missing, empty or malformed."""

    code, stage = "bad_trace", "device"


class TegrastatsParseError(BadInputError):
    """A line is not tegrastats output (none of its fields could be read)."""

    code, stage = "bad_tegrastats_line", "device"

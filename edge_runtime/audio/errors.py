"""Typed errors of the audio stage (input format, length, devices)."""
from __future__ import annotations

from ..errors import BadInputError, EdgeError


class AudioFormatError(BadInputError):
    """The bytes are not audio this runtime can read (not WAV, truncated, odd encoding)."""

    code, stage = "bad_audio", "audio"


class AudioTooLongError(BadInputError):
    code, stage = "audio_too_long", "audio"


class AudioTooShortError(BadInputError):
    code, stage = "audio_too_short", "audio"


class NoSpeechError(BadInputError):
    """The audio holds no speech (silence, noise) or the recognizer heard no words."""

    code, stage = "no_speech", "audio"


class AudioDeviceError(EdgeError):
    """A sound device could not be opened (none present, busy, wrong index)."""

    code, stage, http_status = "audio_device", "audio", 503

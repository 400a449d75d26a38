"""VoiceSettings from the runtime Config, once it has [audio], [vad], [asr], [tts] sections.

Until those sections exist every field keeps its default; keys map one to one:
``audio.input_device`` -> ``input_device``, ``vad.backend`` -> ``vad_backend``,
``vad.end_silence_ms`` -> ``endpoint.end_silence_ms``, ``asr.beam_size`` ->
``asr_beam_size``, ``tts.cache_mb`` -> ``tts_cache_mb`` and so on.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ..vad import EndpointConfig
from .stack import VoiceSettings

_ENDPOINT_KEYS = {f.name for f in dataclasses.fields(EndpointConfig)}
_FIELDS = {f.name for f in dataclasses.fields(VoiceSettings)}


def settings_from_config(cfg: Any) -> VoiceSettings:
    values: dict[str, Any] = {}
    endpoint: dict[str, Any] = {}
    for section in ("audio", "vad", "asr", "tts", "voice"):
        sec = getattr(cfg, section, None)
        if sec is None or not dataclasses.is_dataclass(sec):
            continue
        for key, value in dataclasses.asdict(sec).items():
            if section == "vad" and key in _ENDPOINT_KEYS:
                endpoint[key] = value
            elif f"{section}_{key}" in _FIELDS:
                values[f"{section}_{key}"] = value
            elif key in _FIELDS:
                values[key] = value
    if endpoint:
        values["endpoint"] = EndpointConfig(**endpoint)
    return VoiceSettings(**values)

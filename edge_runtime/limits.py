"""The request-size and structure policy of the API edge, written once.

Every HTTP and WebSocket entrance (``/v1/ask``, ``/v1/audio``, ``/v1/stream``, and any
other route that takes JSON, e.g. an OpenAI-compatible one) checks what it receives with
these functions before any stage sees it:

================  ===========================================================  ========
what              limit                                                        status
================  ===========================================================  ========
body bytes        ``server.max_body_bytes`` (JSON); audio: ``audio.max_seconds``   400
                  of 48 kHz stereo 32-bit plus 4 KiB
content encoding  none (``identity``): compressed bodies are refused               415
JSON              UTF-8, nesting depth <= ``MAX_JSON_DEPTH``, finite numbers       400
text              a string of 1..``nlu.max_text_chars`` characters, no NUL, no     400
                  lone UTF-16 surrogate (it cannot be encoded; the tokenizer and
                  the cache key would fail on it)
budget_ms         a finite number, 0 < budget_ms <= ``MAX_BUDGET_MS``               400
audio             ``audio.max_seconds`` long at most (checked by the WAV parser)     400
stream start      ``sample_rate`` / ``channels`` integers in the parser's range      error
                                                                                   event
================  ===========================================================  ========

The functions take parsed values or raw bytes and return validated values, or raise a
typed error (``BadInputError`` -> 400, :class:`UnsupportedMediaError` -> 415), which the
daemon's error middleware turns into the JSON error object. Nothing here depends on
aiohttp, so any route module can call it.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import BadInputError

MAX_JSON_DEPTH = 32                 # {"messages": [{"content": [{...}]}]} is depth 4
MAX_BUDGET_MS = 60_000.0            # a time-to-first-token budget beyond a minute is a typo
MAX_SESSION_CHARS = 128
MAX_WS_MESSAGE_BYTES = 1 << 20      # one WebSocket message (PCM chunk or control JSON)


class UnsupportedMediaError(BadInputError):
    """The body is in an encoding or media type the API does not read (HTTP 415)."""

    code, http_status = "unsupported_media_type", 415


class RequestTimeoutError(BadInputError):
    """The client did not send the whole request in time (HTTP 408)."""

    code, http_status = "request_timeout", 408


@dataclass(frozen=True)
class RequestLimits:
    """The limits in force, from the config (see the module table)."""

    max_body_bytes: int = 1_000_000
    max_text_chars: int = 2000
    max_audio_seconds: float = 60.0
    max_json_depth: int = MAX_JSON_DEPTH
    max_budget_ms: float = MAX_BUDGET_MS
    max_ws_message_bytes: int = MAX_WS_MESSAGE_BYTES

    @classmethod
    def from_config(cls, cfg: Any) -> RequestLimits:
        return cls(max_body_bytes=cfg.server.max_body_bytes,
                   max_text_chars=cfg.nlu.max_text_chars,
                   max_audio_seconds=cfg.audio.max_seconds)

    @property
    def max_audio_bytes(self) -> int:
        """The largest audio upload that can be valid: 32-bit stereo 48 kHz plus headers."""
        return int(self.max_audio_seconds * 48_000 * 8) + 4096


# -- transport ---------------------------------------------------------------------------

def check_content_encoding(value: str | None) -> None:
    """Refuse compressed bodies (``Content-Encoding`` other than ``identity``): 415."""
    if value is None:
        return
    codings = [c.strip().lower() for c in value.split(",") if c.strip()]
    if any(c != "identity" for c in codings):
        shown = value.encode("ascii", "backslashreplace").decode("ascii")[:40]
        raise UnsupportedMediaError(f"Content-Encoding {shown!r} is not accepted",
                                    hint="send the body uncompressed (no Content-Encoding)")


def check_body_size(size: int | None, limit: int, *, what: str = "request body",
                    hint: str = "send less or raise server.max_body_bytes") -> None:
    """``size`` (a declared Content-Length, or the bytes read so far) must be <= ``limit``."""
    if size is not None and size > limit:
        raise BadInputError(f"{what} is {size} bytes, more than the {limit} allowed", hint=hint)


# -- JSON --------------------------------------------------------------------------------

def _reject_constant(name: str) -> Any:
    raise BadInputError(f"JSON number {name} is not allowed", hint="send finite numbers")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadInputError(f"JSON number {text[:40]} is out of range",
                            hint="send numbers within the range of a double")
    return value


def json_depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value (0 for a scalar), without recursion."""
    depth, level = 0, [(value, 1)]
    while level:
        node, d = level.pop()
        if not isinstance(node, (dict, list)):
            continue
        items = node.values() if isinstance(node, dict) else node
        depth = max(depth, d)
        level.extend((x, d + 1) for x in items if isinstance(x, (dict, list)))
    return depth


def parse_json(raw: bytes | bytearray | str, limits: RequestLimits, *,
               example: str = '{"text": "..."}') -> Any:
    """Bytes (UTF-8) or text -> the parsed JSON value, within the size and depth limits.

    NaN, Infinity and numbers beyond a double are refused; so is invalid UTF-8.
    """
    if isinstance(raw, (bytes, bytearray)):
        check_body_size(len(raw), limits.max_body_bytes)
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise BadInputError("request body is not UTF-8 JSON",
                                hint=f"send {example} as application/json") from None
    else:
        text = raw
    too_deep = BadInputError(f"JSON is nested more than the {limits.max_json_depth} levels "
                             "allowed", hint=f"send {example}")
    try:
        doc = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:         # the parser's own guard, far beyond the limit
        raise too_deep from None
    except json.JSONDecodeError as exc:
        raise BadInputError(f"request body is not valid JSON ({exc.msg} at {exc.pos})",
                            hint=f"send {example}") from None
    except ValueError as exc:      # e.g. an integer of more than 4300 digits
        raise BadInputError(f"request body is not usable JSON ({type(exc).__name__})",
                            hint=f"send {example}") from None
    if json_depth(doc) > limits.max_json_depth:
        raise too_deep
    return doc


def parse_json_object(raw: bytes | bytearray | str, limits: RequestLimits, *,
                      required: tuple[str, ...] = (), example: str = '{"text": "..."}'
                      ) -> dict[str, Any]:
    """:func:`parse_json` that must give an object with the ``required`` fields."""
    doc = parse_json(raw, limits, example=example)
    if not isinstance(doc, dict) or any(k not in doc for k in required):
        fields = ", ".join(f'"{k}"' for k in required)
        raise BadInputError("request body must be a JSON object" +
                            (f" with {fields}" if fields else ""), hint=f"send {example}")
    return doc


# -- fields ------------------------------------------------------------------------------

def _surrogate_at(text: str) -> int | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def check_text(value: Any, limits: RequestLimits, *, field: str = "text") -> str:
    """A request text: a non-empty string of at most ``max_text_chars`` characters,
    encodable as UTF-8 (no lone surrogate), without NUL. Returned unchanged."""
    if not isinstance(value, str):
        raise BadInputError(f'"{field}" must be a string, got {type(value).__name__}',
                            hint='send {"text": "..."}')
    if len(value) > limits.max_text_chars:
        raise BadInputError(f'"{field}" is {len(value)} characters, more than the '
                            f"{limits.max_text_chars} allowed",
                            hint="shorten the request or raise nlu.max_text_chars")
    pos = _surrogate_at(value)
    if pos is not None:
        raise BadInputError(f'"{field}" has a lone UTF-16 surrogate '
                            f"(U+{ord(value[pos]):04X}) at character {pos}",
                            hint="send valid Unicode text (pairs of \\ud8xx\\udcxx escapes "
                            "only as whole pairs)")
    if "\x00" in value:
        raise BadInputError(f'"{field}" contains NUL characters', hint="send plain text")
    if not value.strip():
        raise BadInputError(f'"{field}" is empty', hint="say or type a request")
    return value


def check_budget_ms(value: Any, limits: RequestLimits) -> float | None:
    """``budget_ms``: None (the configured budget) or a finite 0 < ms <= ``max_budget_ms``."""
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    # ints are compared exactly (10**400 must not reach float()); floats must be finite
    if ok and isinstance(value, float) and not math.isfinite(value):
        ok = False
    if not ok or not 0 < value <= limits.max_budget_ms:
        raise BadInputError(f'"budget_ms" must be a number of milliseconds within '
                            f"(0, {limits.max_budget_ms:g}]",
                            hint="send e.g. 150, or leave it out for the configured budget")
    return float(value)


def check_session(value: Any) -> str | None:
    """``session``: None or an id of 1..``MAX_SESSION_CHARS`` characters (UTF-8 encodable)."""
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= MAX_SESSION_CHARS \
            or _surrogate_at(value) is not None:
        raise BadInputError(f'"session" must be a string of 1..{MAX_SESSION_CHARS} characters',
                            hint="use a stable id per conversation, e.g. a UUID")
    return value


def check_stream_start(ctl: Mapping[str, Any], default_rate: int = 16_000
                       ) -> tuple[int, int]:
    """The ``{"type": "start"}`` control message of ``/v1/stream`` -> (sample_rate, channels).

    Only whole numbers are accepted (a float such as 16000.0 is fine; Infinity, 1e400,
    strings and booleans are not); the audio parser then checks the range.
    """
    out = []
    for name, default in (("sample_rate", default_rate), ("channels", 1)):
        value = ctl.get(name, default)
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or abs(value) > 1 << 31:
            raise BadInputError(f'"{name}" must be a whole number',
                                hint='send {"type": "start", "sample_rate": 16000, '
                                     '"channels": 1}')
        out.append(value)
    return out[0], out[1]


__all__ = ["MAX_BUDGET_MS", "MAX_JSON_DEPTH", "MAX_SESSION_CHARS", "MAX_WS_MESSAGE_BYTES",
           "RequestLimits", "RequestTimeoutError", "UnsupportedMediaError",
           "check_body_size", "check_budget_ms", "check_content_encoding", "check_session",
           "check_stream_start", "check_text", "json_depth", "parse_json",
           "parse_json_object"]

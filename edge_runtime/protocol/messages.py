"""The edge ⇄ cloud wire format: versioned msgpack envelopes over ZeroMQ.

One ZeroMQ frame carries one message. The frame is a msgpack array
``[PROTOCOL_VERSION, type_name, body]`` where ``type_name`` is the message's
wire name (``"request"``, ``"chunk"`` …) and ``body`` a map of its fields.
The DEALER (device) sends ``[frame]``; the ROUTER (gateway) sees
``[peer_identity, frame]``.

Conversation of one request (``id`` is chosen by the device, unique per request)::

    device                         gateway
    Request(id, deadline, …)  ─►
                              ◄─   Chunk(id, seq=0, text) … Chunk(id, seq=n, text)
                              ◄─   Done(id, usage…)      (or Error(id, code, …) at any point)
    Cancel(id)                ─►   (device gave up: the gateway stops generating)
    Ping(nonce)               ─►
                              ◄─   Pong(nonce)

Times on the wire are absolute unix seconds (``time.time()``), so both clocks must
agree to well under the deadlines in use (NTP does this).

``decode`` only ever raises :class:`ProtocolError` on bad input: wrong version,
not msgpack, unknown type, missing/unknown/mistyped fields, frames over
``MAX_FRAME_BYTES``.
"""
from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

import msgpack

from ..errors import EdgeError
from ..types import GenerationParams, Message

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1 << 20          # 1 MiB: a request with a long chat history fits easily


class ProtocolError(EdgeError):
    """Bytes that are not a valid message of this protocol version."""

    code, stage, retryable = "protocol_error", "protocol", False


# Error codes the gateway sends in :class:`Error`.
ERR_OVERLOADED = "overloaded"               # queue full; retry elsewhere (retryable)
ERR_DEADLINE = "deadline_exceeded"          # the deadline passed before/while generating
ERR_BACKEND = "backend_error"               # the model/backend failed (message says how)
ERR_BAD_REQUEST = "bad_request"             # e.g. a model this gateway does not serve
ERR_SHUTTING_DOWN = "shutting_down"         # the gateway is stopping (retryable)


@dataclass(frozen=True)
class Request:
    """Device → gateway: generate an answer for ``messages``.

    ``deadline``: absolute unix seconds after which the answer is useless.
    ``model``: the model name to use; "" = the gateway's default.
    """

    TYPE: ClassVar[str] = "request"
    id: str
    deadline: float
    messages: tuple[Message, ...]
    params: GenerationParams = field(default_factory=GenerationParams)
    model: str = ""


@dataclass(frozen=True)
class Chunk:
    """Gateway → device: the next text piece of answer ``id``; ``seq`` counts from 0."""

    TYPE: ClassVar[str] = "chunk"
    id: str
    seq: int
    text: str


@dataclass(frozen=True)
class Done:
    """Gateway → device: answer ``id`` is complete.

    ``prompt_tokens``/``completion_tokens`` are counts (0 when the backend does not know);
    ``finish_reason`` is "stop" (end of turn or sentence cap), "length" or "cancelled".
    """

    TYPE: ClassVar[str] = "done"
    id: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"


@dataclass(frozen=True)
class Error:
    """Gateway → device: answer ``id`` failed; nothing more will come for it.

    ``code`` is one of the ``ERR_*`` constants; ``retryable`` says whether another try
    (here or elsewhere) can help.
    """

    TYPE: ClassVar[str] = "error"
    id: str
    code: str
    message: str
    retryable: bool = False


@dataclass(frozen=True)
class Cancel:
    """Device → gateway: stop working on answer ``id`` (no reply is sent)."""

    TYPE: ClassVar[str] = "cancel"
    id: str


@dataclass(frozen=True)
class Ping:
    """Device → gateway heartbeat; answered by a :class:`Pong` with the same ``nonce``."""

    TYPE: ClassVar[str] = "ping"
    nonce: int


@dataclass(frozen=True)
class Pong:
    """Gateway → device: answer to :class:`Ping` ``nonce``."""

    TYPE: ClassVar[str] = "pong"
    nonce: int


WireMessage = Union[Request, Chunk, Done, Error, Cancel, Ping, Pong]
MESSAGE_TYPES: dict[str, type] = {cls.TYPE: cls for cls in typing.get_args(WireMessage)}
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        hints = typing.get_type_hints(cls)
        _HINTS[cls] = {f.name: hints[f.name] for f in dataclasses.fields(cls)}
    return _HINTS[cls]


def _to_wire(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _to_wire(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_to_wire(v) for v in value]
    return value


def encode(msg: WireMessage) -> bytes:
    """Serialize one message into one frame (bytes)."""
    cls = type(msg)
    if MESSAGE_TYPES.get(getattr(cls, "TYPE", None)) is not cls:
        raise TypeError(f"{cls.__name__} is not a protocol message")
    return msgpack.packb([PROTOCOL_VERSION, cls.TYPE, _to_wire(msg)], use_bin_type=True)


def decode(data: bytes) -> WireMessage:
    """Parse one frame. Raises :class:`ProtocolError` (only) for anything not a valid message."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ProtocolError(f"frame must be bytes, got {type(data).__name__}")
    if len(data) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(data)} bytes exceeds the {MAX_FRAME_BYTES}-byte limit")
    try:
        envelope = msgpack.unpackb(bytes(data), raw=False, strict_map_key=True,
                                   use_list=True)
    except Exception as exc:  # msgpack raises many types (ValueError, ExtraData, StackError …)
        raise ProtocolError(f"frame is not valid msgpack: {type(exc).__name__}: {exc}") from None
    if not isinstance(envelope, list) or len(envelope) != 3:
        raise ProtocolError("frame is not a [version, type, body] envelope")
    version, type_name, body = envelope
    if version != PROTOCOL_VERSION or isinstance(version, bool):
        raise ProtocolError(f"protocol version {version!r} is not supported (this side speaks "
                            f"{PROTOCOL_VERSION})", hint="run the same edge-runtime release "
                            "on the device and the gateway", code="protocol_version")
    cls = MESSAGE_TYPES.get(type_name) if isinstance(type_name, str) else None
    if cls is None:
        raise ProtocolError(f"unknown message type {type_name!r}")
    return _build(cls, body, type_name)


def _build(cls: type, body: Any, path: str) -> Any:
    if not isinstance(body, dict):
        raise ProtocolError(f"{path}: expected a map, got {type(body).__name__}")
    hints = _hints(cls)
    unknown = [k for k in body if k not in hints]
    if unknown:
        raise ProtocolError(f"{path}: unknown field(s) {unknown!r}")
    required = [f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [k for k in required if k not in body]
    if missing:
        raise ProtocolError(f"{path}: missing field(s) {missing!r}")
    return cls(**{k: _convert(v, hints[k], f"{path}.{k}") for k, v in body.items()})


def _convert(value: Any, typ: Any, path: str) -> Any:
    if typ is str:
        if isinstance(value, str):
            return value
    elif typ is bool:
        if isinstance(value, bool):
            return value
    elif typ is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif typ is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    elif typing.get_origin(typ) is typing.Literal:
        if isinstance(value, str) and value in typing.get_args(typ):
            return value
        raise ProtocolError(f"{path}: {value!r} is not one of {typing.get_args(typ)}")
    elif typing.get_origin(typ) is tuple:
        (item,) = [a for a in typing.get_args(typ) if a is not Ellipsis]
        if isinstance(value, list):
            return tuple(_convert(v, item, f"{path}[{i}]") for i, v in enumerate(value))
    elif dataclasses.is_dataclass(typ):
        return _build(typ, value, path)
    else:  # pragma: no cover - a field type this module does not know is a programming error
        raise TypeError(f"{path}: unsupported field type {typ!r}")
    raise ProtocolError(f"{path}: expected {getattr(typ, '__name__', typ)}, "
                        f"got {type(value).__name__}")

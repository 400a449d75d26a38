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
                              ◄─   Pong(nonce, queued, active, capacity, prefill_ms, service_ms)

The Pong carries the gateway's load (all optional; 0 = unknown): ``queued`` requests
waiting for a worker, ``active`` generating now, ``capacity`` concurrent generations it can
run, and EWMAs of ``prefill_ms`` (worker start → first piece) and ``service_ms`` (worker
start → whole answer, at the current concurrency). Compatibility both ways without a new
``PROTOCOL_VERSION``: a gateway fills the load in only when the Ping's nonce has the
:data:`PING_WANTS_LOAD` bit set, and fields at their default are not sent (``SPARSE``), so
a device of an older release (small nonces; its strict decoder would refuse the unknown
fields) still gets a bare ``{nonce}`` Pong; a Pong of an older gateway decodes with every
load field 0. The two load times may be NaN/inf on the wire (decoded as such): the
receiver validates load figures itself, so nonsense load never makes a heartbeat
unreadable.

Times on the wire are absolute unix seconds (``time.time()``), so both clocks must
agree to well under the deadlines in use (NTP does this).

``decode`` only ever raises :class:`ProtocolError` on bad input: wrong version,
not msgpack, unknown type, missing/unknown/mistyped fields, frames over
``MAX_FRAME_BYTES``. Floats must be finite, except fields marked ``Annotated[float,
NONFINITE_OK]`` (the Pong's load times).
"""
from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar
from collections.abc import Callable

import msgpack

from ..errors import EdgeError
from ..types import GenerationParams, Message

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1 << 20          # 1 MiB: a request with a long chat history fits easily
PING_WANTS_LOAD = 1 << 40          # Ping nonce bit: "put your load in the Pong" (see module doc)
NONFINITE_OK = "nonfinite_ok"      # Annotated[float, NONFINITE_OK]: NaN/inf decode as such


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
    """Gateway → device: answer to :class:`Ping` ``nonce``, with the gateway's load.

    ``queued``: requests waiting for a worker; ``active``: generating now; ``capacity``:
    concurrent generations it can run; ``prefill_ms``: EWMA of worker start → first piece;
    ``service_ms``: EWMA of worker start → whole answer. 0 = unknown (an older gateway, or
    nothing measured yet). The figures are as reported: the receiver validates them.
    """

    TYPE: ClassVar[str] = "pong"
    SPARSE: ClassVar[tuple[str, ...]] = ("queued", "active", "capacity", "prefill_ms",
                                         "service_ms")
    nonce: int
    queued: int = 0
    active: int = 0
    capacity: int = 0
    prefill_ms: Annotated[float, NONFINITE_OK] = 0.0
    service_ms: Annotated[float, NONFINITE_OK] = 0.0


WireMessage = Request | Chunk | Done | Error | Cancel | Ping | Pong
MESSAGE_TYPES: dict[str, type] = {cls.TYPE: cls for cls in typing.get_args(WireMessage)}
# Fields a class lists in ``SPARSE`` are left out of its frame while at their default, so a
# peer of an older release, whose decoder does not know them, still accepts the message.
_SPARSE_DEFAULTS: dict[str, dict[str, Any]] = {
    name: {f.name: f.default for f in dataclasses.fields(cls)
           if f.name in getattr(cls, "SPARSE", ())}
    for name, cls in MESSAGE_TYPES.items() if getattr(cls, "SPARSE", ())}


def _default(value: Any) -> Any:
    """msgpack hook: nested dataclasses (Message, GenerationParams) go as maps of fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value.__dict__
    raise TypeError(f"cannot encode {type(value).__name__}")


def encode(msg: WireMessage) -> bytes:
    """Serialize one message into one frame (bytes)."""
    cls = type(msg)
    if MESSAGE_TYPES.get(getattr(cls, "TYPE", "")) is not cls:
        raise TypeError(f"{cls.__name__} is not a protocol message")
    # A frozen dataclass's __dict__ holds exactly its fields: no per-field Python work here.
    body = msg.__dict__
    sparse = _SPARSE_DEFAULTS.get(cls.TYPE)
    if sparse:
        body = {k: v for k, v in body.items() if k not in sparse or v != sparse[k]}
    return msgpack.packb([PROTOCOL_VERSION, cls.TYPE, body], default=_default,
                         use_bin_type=True)


def decode(data: bytes) -> WireMessage:
    """Parse one frame. Raises :class:`ProtocolError` (only) for anything not a valid message."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ProtocolError(f"frame must be bytes, got {type(data).__name__}")
    if len(data) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(data)} bytes exceeds the {MAX_FRAME_BYTES}-byte limit")
    try:
        envelope = msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True)
    except Exception as exc:  # msgpack raises many types (ValueError, ExtraData, StackError …)
        raise ProtocolError(f"frame is not valid msgpack: {type(exc).__name__}: {exc}") from None
    if type(envelope) is not list or len(envelope) != 3:
        raise ProtocolError("frame is not a [version, type, body] envelope")
    version, type_name, body = envelope
    if type(version) is not int or version != PROTOCOL_VERSION:   # not 1.0, not True
        raise ProtocolError(f"protocol version {version!r} is not supported (this side speaks "
                            f"{PROTOCOL_VERSION})", hint="run the same edge-runtime release "
                            "on the device and the gateway", code="protocol_version")
    spec = _SPECS.get(type_name) if type(type_name) is str else None
    if spec is None:
        raise ProtocolError(f"unknown message type {type_name!r}")
    try:
        return spec.build(body)
    except _Bad as bad:
        raise ProtocolError(f"{type_name}{bad.where}: {bad.what}") from None


# -- decoding: one precompiled converter per field type (built once, at import) -------------
# Converters raise _Bad (no path); the path is assembled only on the way out of a failure.

class _Bad(Exception):
    def __init__(self, what: str, where: str = "") -> None:
        self.what, self.where = what, where


_Conv = Callable[[Any], Any]


def _expected(name: str, v: Any) -> _Bad:
    return _Bad(f"expected {name}, got {type(v).__name__}")


def _conv_str(v: Any) -> str:
    if type(v) is str:
        return v
    raise _expected("str", v)


def _conv_bool(v: Any) -> bool:
    if type(v) is bool:
        return v
    raise _expected("bool", v)


def _conv_int(v: Any) -> int:
    if type(v) is int:
        return v
    raise _expected("int", v)


def _conv_float(v: Any) -> float:
    if (type(v) is float or type(v) is int) and math.isfinite(v):
        return float(v)
    raise _expected("float", v)


def _conv_any_float(v: Any) -> float:
    """A float that may be NaN or ±inf (msgpack ints up to 2**64 convert exactly enough)."""
    if type(v) is float or type(v) is int:
        return float(v)
    raise _expected("float", v)


class _Spec:
    """How to build one frozen dataclass from a decoded map: a converter per field. Objects
    are made with ``__new__`` + their ``__dict__`` (what the generated ``__init__`` does, at a
    fraction of the cost); classes with ``__post_init__`` are not supported."""

    def __init__(self, cls: type) -> None:
        if hasattr(cls, "__post_init__"):
            raise TypeError(f"{cls.__name__}: wire classes must not define __post_init__")
        hints = typing.get_type_hints(cls, include_extras=True)
        fields = dataclasses.fields(cls)
        self.cls = cls
        self.convs: dict[str, _Conv] = {f.name: _converter(hints[f.name]) for f in fields}
        self.names = frozenset(self.convs)
        self.required = frozenset(
            f.name for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        self.defaults = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}
        self.factories = {f.name: f.default_factory for f in fields
                          if f.default_factory is not dataclasses.MISSING}

    def build(self, body: Any) -> Any:
        if type(body) is not dict:
            raise _Bad(f"expected a map, got {type(body).__name__}")
        keys = body.keys()
        if not keys <= self.names:
            raise _Bad(f"unknown field(s) {[k for k in body if k not in self.names]!r}")
        if not self.required <= keys:
            raise _Bad(f"missing field(s) {sorted(self.required - keys)!r}")
        values = dict(self.defaults)
        for name, factory in self.factories.items():
            if name not in body:
                values[name] = factory()
        convs = self.convs
        for k, v in body.items():
            try:
                values[k] = convs[k](v)
            except _Bad as bad:
                bad.where = f".{k}{bad.where}"
                raise
        obj: Any = object.__new__(self.cls)
        obj.__dict__.update(values)
        return obj


def _converter(typ: Any) -> _Conv:
    simple = {str: _conv_str, bool: _conv_bool, int: _conv_int, float: _conv_float}
    if typ in simple:
        return simple[typ]
    origin = typing.get_origin(typ)
    if origin is Annotated:
        base, *marks = typing.get_args(typ)
        if base is float and NONFINITE_OK in marks:
            return _conv_any_float
        return _converter(base)
    if origin is typing.Literal:
        allowed = typing.get_args(typ)

        def conv_literal(v: Any) -> str:
            if type(v) is str and v in allowed:
                return v
            raise _Bad(f"{v!r} is not one of {allowed}")
        return conv_literal
    if origin is tuple:
        (item_typ,) = [a for a in typing.get_args(typ) if a is not Ellipsis]
        item = _converter(item_typ)

        def conv_tuple(v: Any) -> tuple:
            if type(v) is not list:
                raise _expected("tuple", v)
            out = []
            for i, x in enumerate(v):
                try:
                    out.append(item(x))
                except _Bad as bad:
                    bad.where = f"[{i}]{bad.where}"
                    raise
            return tuple(out)
        return conv_tuple
    if isinstance(typ, type) and dataclasses.is_dataclass(typ):
        return _Spec(typ).build
    raise TypeError(f"unsupported field type {typ!r}")  # a programming error, at import


_SPECS: dict[str, _Spec] = {name: _Spec(cls) for name, cls in MESSAGE_TYPES.items()}

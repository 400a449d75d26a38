"""The edge ⇄ cloud wire format shared by the device (cloud_link) and the gateway
(cloud_fallback)."""
from .messages import (ERR_BACKEND, ERR_BAD_REQUEST, ERR_DEADLINE, ERR_OVERLOADED,
                       ERR_SHUTTING_DOWN, MAX_FRAME_BYTES, MESSAGE_TYPES, PROTOCOL_VERSION, Cancel,
                       Chunk, Done, Error, Ping, Pong, ProtocolError, Request, WireMessage, decode,
                       encode)

__all__ = ["ERR_BACKEND", "ERR_BAD_REQUEST", "ERR_DEADLINE", "ERR_OVERLOADED", "ERR_SHUTTING_DOWN",
           "MAX_FRAME_BYTES", "MESSAGE_TYPES", "PROTOCOL_VERSION", "Cancel", "Chunk", "Done",
           "Error", "Ping", "Pong", "ProtocolError", "Request", "WireMessage", "decode", "encode"]

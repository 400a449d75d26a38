"""Entity aliases from Home Assistant's WebSocket API (its REST API does not carry them).

One short exchange on ``/api/websocket`` (RFC 6455 over the stdlib socket, text frames
only): ``auth_required`` -> ``{"type": "auth", "access_token": ...}`` -> ``auth_ok``, then
``config/entity_registry/get_entries`` for the entity ids read over REST, whose entries
carry ``aliases``. ``entity_aliases(url, token, ids)`` returns entity id -> aliases; any
failure (no WebSocket, refused, timeout, an old Home Assistant without the command) is a
``WebSocketError``: the caller goes on without aliases.
"""
from __future__ import annotations

import base64
import json
import os
import socket
import ssl
import struct
from typing import Any
from urllib.parse import urlsplit


class WebSocketError(Exception):
    """The WebSocket exchange failed (the message says how; never the token)."""


class _Conn:
    def __init__(self, url: str, timeout_s: float) -> None:
        parts = urlsplit(url)
        secure = parts.scheme == "https"
        host = parts.hostname or "127.0.0.1"
        port = parts.port or (443 if secure else 80)
        try:
            sock = socket.create_connection((host, port), timeout=timeout_s)
            if secure:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        except OSError as exc:
            raise WebSocketError(f"cannot connect: {exc}") from None
        self.sock = sock
        self._buf = b""
        key = base64.b64encode(os.urandom(16)).decode()
        path = (parts.path.rstrip("/") or "") + "/api/websocket"
        self._send_raw((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        status = self._until(b"\r\n\r\n").split(b"\r\n", 1)[0]
        if not status.startswith(b"HTTP/1.1 101"):
            raise WebSocketError(f"no WebSocket: {status!r}")

    def _send_raw(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise WebSocketError(f"send failed: {exc}") from None

    def _more(self) -> None:
        try:
            chunk = self.sock.recv(65536)
        except OSError as exc:
            raise WebSocketError(f"receive failed: {exc}") from None
        if not chunk:
            raise WebSocketError("connection closed")
        self._buf += chunk

    def _read(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._more()
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def _until(self, marker: bytes) -> bytes:
        while marker not in self._buf:
            if len(self._buf) > 65536:
                raise WebSocketError("an HTTP answer without an end")
            self._more()
        head, _, self._buf = self._buf.partition(marker)
        return head

    def send(self, message: dict[str, Any]) -> None:
        payload = json.dumps(message).encode()
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                struct.pack("!BH", 0x80 | 126, n) if n < 65536 else
                                struct.pack("!BQ", 0x80 | 127, n))
        self._send_raw(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def receive(self) -> dict[str, Any]:
        """The next text message (fragments joined; pings and pongs skipped)."""
        parts: list[bytes] = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else b""
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise WebSocketError("closed by Home Assistant")
            if opcode in (0x9, 0xA):
                continue
            parts.append(data)
            if b0 & 0x80:
                try:
                    reply = json.loads(b"".join(parts))
                except ValueError:
                    raise WebSocketError("a reply that is not JSON") from None
                if not isinstance(reply, dict):
                    raise WebSocketError("a reply that is not a JSON object")
                return reply

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def entity_aliases(url: str, token: str, entity_ids: list[str],
                   timeout_s: float = 5.0) -> dict[str, list[str]]:
    """Entity id -> its aliases (entities without any are left out)."""
    conn = _Conn(url, timeout_s)
    try:
        if conn.receive().get("type") != "auth_required":
            raise WebSocketError("no auth_required greeting")
        conn.send({"type": "auth", "access_token": token})
        if conn.receive().get("type") != "auth_ok":
            raise WebSocketError("the token was refused")
        conn.send({"id": 1, "type": "config/entity_registry/get_entries",
                   "entity_ids": entity_ids})
        reply = conn.receive()
        while reply.get("id") != 1:
            reply = conn.receive()
        result = reply.get("result")
        if not reply.get("success") or not isinstance(result, dict):
            error = reply.get("error")
            code = error.get("code", "no result") if isinstance(error, dict) else "no result"
            raise WebSocketError(f"get_entries failed: {code}")
        out: dict[str, list[str]] = {}
        for eid, entry in result.items():
            aliases = entry.get("aliases") if isinstance(entry, dict) else None
            if isinstance(aliases, list):
                names = [str(a) for a in aliases if isinstance(a, str) and a.strip()]
                if names:
                    out[str(eid)] = names
        return out
    finally:
        conn.close()

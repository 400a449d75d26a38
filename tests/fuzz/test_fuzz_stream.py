"""Generated WebSocket messages and raw frames against ``/v1/stream``."""
import asyncio
import base64
import json
import os
import socket

import aiohttp
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.fuzz_support import REPLY_WITHIN_S, assert_no_errors, fuzz_settings

numbers = st.one_of(st.integers(), st.floats(), st.sampled_from([16000, 44100, 1, 2, 8]),
                    st.sampled_from([10 ** 400, 2 ** 64]), st.text(max_size=5), st.none(),
                    st.booleans())
controls = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["start", "end", "stop", ""])},
                          optional={"sample_rate": numbers, "channels": numbers,
                                    "x": st.recursive(numbers, st.lists, max_leaves=5)}),
    st.integers(1, 5000).map(lambda n: {"type": "start", "x": json.loads("[" * 30 + "]" * 30)}
                             if n < 10 else {"type": "start", "sample_rate": n}))


def _control_text(doc) -> str:
    return json.dumps(doc, allow_nan=True)


messages = st.lists(st.one_of(
    controls.filter(lambda d: d.get("type") != "end").map(lambda d: ("text", _control_text(d))),
    st.text(max_size=50).map(lambda t: ("text", t)),
    st.integers(1, 3000).map(lambda n: ("text", "[" * n)),          # deep or unterminated
    st.binary(max_size=5000).map(lambda b: ("bytes", b))), max_size=6)


async def _session(port: int, script) -> list[dict]:
    events = []
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(f"http://127.0.0.1:{port}/v1/stream") as ws:
            for kind, payload in script:
                if kind == "text":
                    await ws.send_str(payload)
                else:
                    await ws.send_bytes(payload)
            await ws.send_json({"type": "end"})
            while True:
                msg = await asyncio.wait_for(ws.receive(), REPLY_WITHIN_S)
                assert msg.type == aiohttp.WSMsgType.TEXT, (msg, ws.close_code, events)
                events.append(msg.json())
                if events[-1]["type"] == "end":
                    return events


@fuzz_settings(60)
@given(script=messages)
def test_generated_messages_get_events_and_the_stream_ends_cleanly(server, caplog, script):
    events = asyncio.run(_session(server.port, script))
    for ev in events:
        if ev["type"] == "error":
            assert ev["error"]["code"] and ev["error"]["message"]
    assert events[-1] == {"type": "end"}
    assert_no_errors(caplog)


def _handshake(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=REPLY_WITHIN_S)
    key = base64.b64encode(os.urandom(16))
    sock.sendall(b"GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                 b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                 b"Sec-WebSocket-Key: " + key + b"\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


@st.composite
def frames(draw) -> bytes:
    """One WebSocket frame with generated flags, opcode, length field, mask and payload."""
    b0 = draw(st.integers(0, 255)) if draw(st.booleans()) else 0x80 | draw(
        st.sampled_from([0x0, 0x1, 0x2, 0x8, 0x9, 0xA, 0x3, 0xF]))
    payload = draw(st.binary(max_size=300))
    masked = draw(st.sampled_from([True, True, True, False]))   # clients must mask
    n = len(payload)
    if n < 126 and draw(st.booleans()):
        head = bytes([b0, (0x80 if masked else 0) | n])
    else:
        head = bytes([b0, (0x80 if masked else 0) | 126]) + n.to_bytes(2, "big")
    mask = draw(st.binary(min_size=4, max_size=4))
    body = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
    return head + (mask if masked else b"") + body


@fuzz_settings(60)
@given(raw=st.lists(frames(), min_size=1, max_size=4))
def test_generated_raw_frames_never_break_the_server(server, caplog, raw):
    sock = _handshake(server.port)
    try:
        sock.sendall(b"".join(raw))
        sock.settimeout(0.2)
        try:
            while sock.recv(4096):
                pass
        except (TimeoutError, ConnectionResetError):
            pass
    finally:
        sock.close()
    assert asyncio.run(_session(server.port, []))[-1] == {"type": "end"}
    assert_no_errors(caplog)

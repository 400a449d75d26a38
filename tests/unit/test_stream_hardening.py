"""Regressions of issue 16 on the voice routes (fake voice engines): bad control messages on
``/v1/stream`` are error events on a socket that keeps working, a failure after the 101 is an
error event and a clean close (never an HTTP 500 written into the WebSocket), and
``/v1/audio`` refuses compressed bodies."""
import asyncio
import logging

import aiohttp
import pytest

from tests.hardening_fixtures import fake_voice_stack, make_runtime, start_client
from tests.voice_fixtures import EnergyVad


@pytest.fixture
async def client(tmp_path):
    c = await start_client(make_runtime(tmp_path), voice_stack=fake_voice_stack())
    yield c
    await c.close()


async def _end(ws):
    await ws.send_json({"type": "end"})
    while True:
        msg = await asyncio.wait_for(ws.receive(), 20)
        assert msg.type == aiohttp.WSMsgType.TEXT, msg
        if msg.json()["type"] == "end":
            return


@pytest.mark.parametrize("text", [
    '{"type": "start", "sample_rate": Infinity}',
    '{"type": "start", "sample_rate": 1e400}',
    '{"type": "start", "sample_rate": NaN}',
    '{"type": "start", "channels": -Infinity}',
    '{"type": "start", "sample_rate": "16000"}',
    '{"type": "start", "sample_rate": 1' + "0" * 400 + "}",
    '{"type": "start", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "[" * 100_000,
])
async def test_bad_start_messages_are_error_events_and_the_stream_goes_on(client, text,
                                                                          caplog):
    async with client.ws_connect("/v1/stream") as ws:
        await ws.send_str(text)
        msg = await asyncio.wait_for(ws.receive(), 20)
        assert msg.type == aiohttp.WSMsgType.TEXT, msg
        event = msg.json()
        assert event["type"] == "error" and event["error"]["code"] in ("bad_input", "bad_audio")
        await ws.send_json({"type": "start", "sample_rate": 16000, "channels": 1})
        await _end(ws)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


class _BrokenVad(EnergyVad):
    def prob(self, frame):
        raise ValueError("the VAD engine broke")

    def fork(self):
        return _BrokenVad()


async def test_an_internal_error_after_the_handshake_is_an_event_and_a_clean_close(tmp_path):
    c = await start_client(make_runtime(tmp_path), voice_stack=fake_voice_stack(_BrokenVad()))
    try:
        async with c.ws_connect("/v1/stream") as ws:
            await ws.send_bytes(b"\x00\x10" * 8000)
            msg = await asyncio.wait_for(ws.receive(), 20)
            assert msg.type == aiohttp.WSMsgType.TEXT
            assert msg.json()["type"] == "error"
            msg = await asyncio.wait_for(ws.receive(), 20)
            assert msg.type == aiohttp.WSMsgType.CLOSE
            assert ws.close_code == aiohttp.WSCloseCode.INTERNAL_ERROR   # not 1002
        ok = await c.post("/v1/ask", json={"text": "what time is it"})
        assert ok.status == 200
    finally:
        await c.close()


async def test_a_stream_client_that_leaves_after_end_is_not_an_error(client, caplog):
    caplog.set_level(logging.DEBUG)
    ws = await client.ws_connect("/v1/stream")
    await ws.send_bytes(b"\x00\x10" * 16000)
    await ws.send_json({"type": "end"})
    ws._response.connection.transport.abort()        # gone without a close frame
    for _ in range(500):                               # until the server is done with it
        if any(r.levelno >= logging.ERROR or r.getMessage() == "stream session closed"
               for r in caplog.records):
            break
        await asyncio.sleep(0.02)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not [r for r in caplog.records if r.levelno >= logging.INFO and r.exc_info]
    async with client.ws_connect("/v1/stream") as again:
        await _end(again)


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
async def test_a_compressed_audio_upload_is_refused_with_415(client, coding, caplog):
    r = await client.post("/v1/audio", data=b"RIFF\x00\x00\x00\x00WAVE",
                          headers={"Content-Encoding": coding})
    assert r.status == 415
    assert (await r.json())["error"]["code"] == "unsupported_media_type"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    r = await client.post("/v1/audio", data=b"not a wav")
    assert r.status == 400 and (await r.json())["error"]["code"] == "bad_audio"

"""A client that vanishes mid-stream, against the app served as `serve` serves it: the answer
is cancelled, the daemon logs it without a traceback and keeps serving."""
import json
import logging

import aiohttp
import pytest

from tests.api_fixtures import GatedEngine, RealServer, drop_client_and_drain

BODIES = {
    "/v1/chat/completions": {"model": "edge-runtime", "stream": True,
                             "messages": [{"role": "user", "content": "why is the sky blue"}]},
    "/v1/ask": {"text": "why is the sky blue", "stream": True},
}


@pytest.mark.parametrize("path", sorted(BODIES))
async def test_a_client_gone_mid_stream(path, caplog):
    caplog.set_level(logging.DEBUG)
    engine = GatedEngine(pieces=tuple(f"piece{i} " for i in range(60)))
    async with RealServer(engine) as server:
        reader, writer = await server.raw_post(path, json.dumps(BODIES[path]).encode())
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        first = await reader.readuntil(b"\n")          # the chunk-size line of the first piece
        assert first.strip()
        writer.transport.abort()                       # the client vanishes
        await drop_client_and_drain(engine, server.pipeline, caplog.records)
        assert engine.cancelled and engine.yielded < 60
        async with aiohttp.ClientSession() as s:
            r = await s.post(f"http://127.0.0.1:{server.port}/v1/ask",
                             json={"text": "what time is it"})
            assert r.status == 200 and (await r.json())["answer"] == "It is noon."
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert any("went away" in r.getMessage() for r in caplog.records)

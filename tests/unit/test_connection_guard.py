"""Regressions of issue 16: clients that connect and say nothing, trickle their headers or
send part of a body are closed after the configured timeouts; connections beyond the cap
are refused at once; all of it is counted in the metrics. (Timeouts are set small; the
assertions are about what happens, not how fast.)"""
import asyncio

import pytest

from edge_runtime.config import load_config
from edge_runtime.errors import ConfigError
from tests.hardening_fixtures import guard_of, make_runtime, raw_exchange, start_client

FAST = {"header_timeout_s": 0.3, "body_timeout_s": 0.3, "idle_timeout_s": 0.3}


@pytest.fixture
async def client():
    c = await start_client(make_runtime(server=FAST))
    yield c
    await c.close()


async def _metrics(client) -> str:
    return await (await client.get("/metrics")).text()


async def test_a_silent_connection_is_closed_after_the_idle_timeout(client):
    assert await raw_exchange(client, b"") == b""           # the server hung up
    assert guard_of(client).timeouts["idle"] == 1
    assert 'edge_http_timeouts_total{kind="idle"} 1.0' in await _metrics(client)


async def test_trickled_headers_get_a_408_after_the_header_timeout(client):
    reader, writer = await asyncio.open_connection(client.host, client.port)
    try:
        writer.write(b"POST /v1/ask HTTP/1.1\r\nHost: x\r\n")
        for _ in range(200):                    # one header line at a time, never finishing
            writer.write(b"X-Slow: 1\r\n")
            await writer.drain()
            if reader.at_eof():
                break
            await asyncio.sleep(0.05)
        reply = await asyncio.wait_for(reader.read(), 20)
    except ConnectionResetError:
        reply = b"HTTP/1.1 408 (reset after the reply)"
    finally:
        writer.close()
    assert reply.startswith(b"HTTP/1.1 408")
    assert guard_of(client).timeouts["header"] == 1


async def test_a_body_that_never_arrives_gets_a_408(client):
    reply = await raw_exchange(client, b"POST /v1/ask HTTP/1.1\r\nHost: x\r\n"
                                       b"Content-Type: application/json\r\n"
                                       b"Content-Length: 100\r\n\r\n{")
    assert reply.startswith(b"HTTP/1.1 408"), reply[:80]
    assert b'"request_timeout"' in reply and b"Connection: close" in reply
    assert guard_of(client).timeouts["body"] == 1
    r = await client.post("/v1/ask", json={"text": "what time is it"})
    assert r.status == 200


async def test_connections_beyond_the_cap_are_refused_and_counted():
    c = await start_client(make_runtime(server={"max_connections": 2}))
    try:
        held = [await asyncio.open_connection(c.host, c.port) for _ in range(2)]
        for _ in range(100):
            if guard_of(c).open == 2:
                break
            await asyncio.sleep(0.01)
        reply = await raw_exchange(c, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in reply
        assert guard_of(c).rejected == 1
        for _, writer in held:
            writer.close()
        for _ in range(100):
            if guard_of(c).open == 0:
                break
            await asyncio.sleep(0.01)
        r = await c.get("/metrics")
        text = await r.text()
        assert "edge_http_connections_rejected_total 1.0" in text
        assert "edge_http_connections_open 1.0" in text       # this request's own
    finally:
        await c.close()


@pytest.mark.parametrize("key,value", [("header_timeout_s", 0), ("body_timeout_s", -1),
                                       ("idle_timeout_s", "nan"), ("idle_timeout_s", 7200),
                                       ("max_connections", 0)])
def test_timeouts_and_the_cap_are_validated_at_load(key, value):
    with pytest.raises(ConfigError, match=f"server.{key}"):
        load_config(env={}, overrides={"server": {key: value}})


def test_the_timeouts_are_read_from_the_server_section():
    cfg = load_config(env={"EDGE_RUNTIME_SERVER__HEADER_TIMEOUT_S": "2.5"})
    assert cfg.server.header_timeout_s == 2.5 and cfg.server.max_connections == 256

"""The daemon's HTTP API on a real loopback server with fake pipeline stages (and fake
voice engines) behind it, served the way ``edge-runtime serve`` serves it: through the
``GuardedRunner`` (read timeouts, connection cap, quiet server logs)."""
from __future__ import annotations

import asyncio

from aiohttp.test_utils import TestClient, TestServer

from edge_runtime.config import load_config
from edge_runtime.daemon import make_app
from edge_runtime.http_guard import GUARD_KEY, GuardedRunner
from edge_runtime.runtime import Runtime
from edge_runtime.voice.api import VOICE_KEY
from edge_runtime.voice.stack import VoiceStack
from tests.pipeline_fakes import make_pipeline
from tests.voice_fixtures import EnergyVad, FakeAsr, FakeTts


class GuardedTestServer(TestServer):
    """aiohttp's TestServer on the daemon's own runner, with its settings."""

    async def _make_runner(self, **kwargs):
        kwargs.pop("handler_cancellation", None)     # as `serve` runs it, not as tests do
        return GuardedRunner(self.app, **kwargs)


def make_runtime(tmp_path=None, **sections) -> Runtime:
    base = {"paths": {"home": str(tmp_path)}} if tmp_path is not None else {}
    cfg = load_config(env={}).with_overrides(**{**base, **sections})
    p = make_pipeline(cfg=cfg)
    return Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p)


def fake_voice_stack(vad=None) -> VoiceStack:
    return VoiceStack(load_config(env={}), vad or EnergyVad(), FakeAsr(), FakeTts())


async def start_client(rt: Runtime, *, voice_stack: VoiceStack | None = None) -> TestClient:
    app = make_app(rt, voice=voice_stack is not None)
    if voice_stack is not None:
        app[VOICE_KEY].stack = voice_stack
    client = TestClient(GuardedTestServer(app))
    await client.start_server()
    return client


def guard_of(client: TestClient):
    return client.server.app[GUARD_KEY]


async def raw_exchange(client: TestClient, data: bytes, *, close_after: bool = False,
                       limit_s: float = 20.0) -> bytes:
    """Write ``data`` on a fresh TCP connection and read until the server closes it
    (``limit_s`` only guards the test against a hang)."""
    reader, writer = await asyncio.open_connection(client.host, client.port)
    try:
        writer.write(data)
        await writer.drain()
        if close_after:
            writer.close()
            return b""
        return await asyncio.wait_for(reader.read(), limit_s)
    finally:
        writer.close()

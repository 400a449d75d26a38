"""A real daemon app (aiohttp, loopback) over fake pipeline stages, for the API tests."""
from __future__ import annotations

import asyncio
import threading

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from edge_runtime.config import load_config
from edge_runtime.daemon import make_app
from edge_runtime.http_guard import GuardedRunner
from edge_runtime.runtime import Runtime
from tests.pipeline_fakes import FakeEngine, make_pipeline


class GatedEngine(FakeEngine):
    """Yields its first piece, then holds each further one until ``steps`` is released once
    for it, or ``gate`` is set for all (records prompts)."""

    def __init__(self, pieces=("Light ", "scatters.")):
        super().__init__(pieces)
        self.gate = threading.Event()
        self.steps = threading.Semaphore(0)
        self.prompts: list = []
        self.yielded = 0

    def _hold(self) -> None:
        for _ in range(1000):
            if self.gate.is_set() or self.steps.acquire(timeout=0.01):
                return

    def generate(self, messages, params, cancel=None):
        self.prompts.append(list(messages))
        for i, piece in enumerate(self.pieces):
            if i >= 1:
                self._hold()
            if cancel is not None and cancel.cancelled:
                self.cancelled = True
                return
            self.yielded += 1
            yield piece


async def start_client(*, token: str = "", engine="default", cloud=None, budget_ms=150.0,
                       max_body_bytes: int = 200_000) -> TestClient:
    cfg = load_config(env={}).with_overrides(
        server={"token": token, "max_body_bytes": max_body_bytes})
    p = make_pipeline(cfg=cfg, engine=engine, cloud=cloud, budget_ms=budget_ms)
    rt = Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p)
    client = TestClient(TestServer(make_app(rt, voice=False)))
    await client.start_server()
    return client


class RealServer:
    """The app under the daemon's ``GuardedRunner`` + ``TCPSite`` as ``serve`` runs it, on a
    free loopback port."""

    def __init__(self, engine) -> None:
        cfg = load_config(env={})
        self.pipeline = make_pipeline(cfg=cfg, engine=engine)
        p = self.pipeline
        self.runtime = Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p)
        self.runner = GuardedRunner(make_app(self.runtime, voice=False))
        self.port = 0

    async def __aenter__(self) -> RealServer:
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        await self.runner.cleanup()

    async def raw_post(self, path: str, body: bytes):
        """POST over a bare socket: (reader, writer) after the request is sent."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     f"application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
        return reader, writer


async def drop_client_and_drain(engine: GatedEngine, pipeline, records) -> None:
    """Feed the held generation piece by piece until the server logs that the client went
    away (it notices on a write), then let it run out; returns when the request is done."""
    def went_away():
        return any("went away" in r.getMessage() for r in records)
    for _ in range(len(engine.pieces)):
        if went_away():
            break
        engine.steps.release()
        await asyncio.sleep(0.02)
    engine.gate.set()
    for _ in range(1000):
        if pipeline.in_flight == 0:
            break
        await asyncio.sleep(0.01)

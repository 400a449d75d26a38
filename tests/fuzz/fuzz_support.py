"""Shared parts of the fuzz layer (see conftest.py): hypothesis settings, a server thread,
a raw HTTP client."""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading

from aiohttp import web
from hypothesis import HealthCheck, settings

from edge_runtime.daemon import make_app
from edge_runtime.http_guard import GuardedRunner
from edge_runtime.voice.api import VOICE_KEY
from tests.hardening_fixtures import fake_voice_stack, make_runtime

FUZZ_EXAMPLES = int(os.environ.get("EDGE_FUZZ_EXAMPLES", "100"))


def fuzz_settings(examples: int = FUZZ_EXAMPLES) -> settings:
    return settings(max_examples=examples, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])


# short, so a hang would show quickly; the test's own socket timeout is above these
TIMEOUTS = {"header_timeout_s": 2.0, "body_timeout_s": 2.0, "idle_timeout_s": 5.0}
REPLY_WITHIN_S = 15.0


class ServerThread:
    """The daemon's app (fake stages, fake voice engines) on a guarded runner, served on
    loopback from its own event loop thread, so synchronous hypothesis tests can drive it."""

    def __init__(self, tmp_path) -> None:
        self.rt = make_runtime(tmp_path, server={**TIMEOUTS, "max_body_bytes": 200_000})
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="fuzz-server", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        app = make_app(self.rt, voice=True)
        app[VOICE_KEY].stack = fake_voice_stack()
        self.app = app
        runner = GuardedRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def __enter__(self) -> ServerThread:
        self._thread.start()
        assert self._ready.wait(30), "the fuzz server did not start"
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def assert_no_errors(caplog) -> None:
    """No log line at ERROR or above, and none above DEBUG with a traceback."""
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR
           or (r.levelno > logging.DEBUG and r.exc_info)]
    assert not bad, [f"{r.levelname} {r.name}: {r.getMessage()}" for r in bad]


def http_exchange(port: int, data: bytes) -> bytes:
    """Send raw request bytes on a new connection; the reply bytes up to the server's
    close (``REPLY_WITHIN_S`` bounds the wait: a hang fails the property)."""
    with socket.create_connection(("127.0.0.1", port), timeout=REPLY_WITHIN_S) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass                   # the server may answer and close before reading it all
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def status_of(reply: bytes) -> int:
    """The status code of a raw HTTP reply (0 if there is no status line)."""
    parts = reply.split(b"\r\n", 1)[0].split(b" ")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def request(method: str, path: str, body: bytes = b"", headers=()) -> bytes:
    head = [f"{method} {path} HTTP/1.1".encode(), b"Host: 127.0.0.1",
            b"Connection: close", b"Content-Length: " + str(len(body)).encode()]
    head += [k + b": " + v for k, v in headers]
    return b"\r\n".join(head) + b"\r\n\r\n" + body

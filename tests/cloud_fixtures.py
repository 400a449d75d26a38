"""Shared helpers for the cloud-link tests: a scriptable in-process ROUTER and gateway helpers."""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Awaitable, Callable

import zmq
import zmq.asyncio

from edge_runtime.config import CloudConfig
from edge_runtime.protocol import Chunk, Done, Error, Ping, Pong, Request, decode, encode

READY_RE = re.compile(r"edge-cloud ready on (tcp://\S+)")



def stop_process(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``; nothing when it has already exited."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()

def free_tcp_endpoint() -> str:
    """A loopback endpoint with nothing listening on it (the port was free a moment ago)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def fast_cloud_config(endpoint: str, **changes) -> CloudConfig:
    """Timeouts short enough for tests (seconds of waiting would slow the suite, not fix it)."""
    base = CloudConfig(endpoint=endpoint, deadline_ms=3000.0, first_token_timeout_ms=1000.0,
                       connect_timeout_ms=1000.0, health_interval_s=0.5)
    return replace(base, **changes)


class Peer:
    """A synchronous DEALER speaking the wire protocol (for gateway tests)."""

    def __init__(self, endpoint: str) -> None:
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)

    def send(self, msg) -> None:
        self.sock.send(encode(msg))

    def recv(self, timeout_s: float = 5.0):
        if not self.sock.poll(int(timeout_s * 1000)):
            raise AssertionError(f"no message within {timeout_s} s")
        return decode(self.sock.recv())

    def answer(self, rid: str) -> list:
        """Every message of request ``rid`` up to and including its Done/Error."""
        out = []
        while True:
            msg = self.recv()
            if getattr(msg, "id", None) == rid:
                out.append(msg)
                if isinstance(msg, (Done, Error)):
                    return out

    def close(self) -> None:
        self.sock.close(0)
        self.ctx.term()



Handler = Callable[["FakeGateway", bytes, Request], Awaitable[None]]


async def stream_words(gw: "FakeGateway", peer: bytes, req: Request) -> None:
    """Default fake behaviour: answer "hello cloud world" in three chunks, then Done."""
    for i, word in enumerate(["hello", " cloud", " world"]):
        await gw.send(peer, Chunk(req.id, i, word))
    await gw.send(peer, Done(req.id, 3, 3, "stop"))


class FakeGateway:
    """A scriptable ROUTER on loopback that speaks the wire protocol (an asyncio task).

    ``on_request`` decides how each Request is answered; ``answer_pings`` can be switched
    off to simulate a hung gateway; ``received`` records every decoded message.
    """

    def __init__(self, on_request: Handler = stream_words, endpoint: str = "tcp://127.0.0.1:0"):
        self.on_request = on_request
        self.answer_pings = True
        self.received: list[object] = []
        self._bind = endpoint
        self.endpoint = ""
        self._ctx = zmq.asyncio.Context()
        self._sock: zmq.asyncio.Socket | None = None
        self._task: asyncio.Task | None = None
        self._handlers: set[asyncio.Task] = set()

    async def __aenter__(self) -> "FakeGateway":
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.bind(self._bind)
        self.endpoint = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._task = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        for t in [self._task, *self._handlers]:
            if t is not None:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
        if self._sock is not None:
            self._sock.close(0)
            self._sock = None
        self._ctx.destroy(linger=0)

    async def send(self, peer: bytes, msg: object) -> None:
        await self._sock.send_multipart([peer, encode(msg)])

    async def send_raw(self, peer: bytes, data: bytes) -> None:
        await self._sock.send_multipart([peer, data])

    def of_type(self, cls: type) -> list:
        return [m for m in self.received if isinstance(m, cls)]

    async def _loop(self) -> None:
        while True:
            peer, data = await self._sock.recv_multipart()
            msg = decode(data)
            self.received.append(msg)
            if isinstance(msg, Ping) and self.answer_pings:
                await self.send(peer, Pong(msg.nonce))
            elif isinstance(msg, Request):
                task = asyncio.create_task(self.on_request(self, peer, msg))
                self._handlers.add(task)
                task.add_done_callback(self._handlers.discard)


async def wait_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Poll ``predicate`` (every 10 ms) until it holds; fail the test after ``timeout_s``."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while not predicate():
        if loop.time() > end:
            raise AssertionError(f"condition not reached within {timeout_s} s")
        await asyncio.sleep(0.01)


class GatewayProcess:
    """A running ``edge-cloud serve`` subprocess; ``output`` collects its stdout+stderr lines."""

    def __init__(self, proc: subprocess.Popen, endpoint: str, output: list[str]) -> None:
        self.proc, self.endpoint, self.output = proc, endpoint, output

    def log(self) -> str:
        return "".join(self.output)


@contextlib.contextmanager
def gateway_process(*args: str, bind: str = "tcp://127.0.0.1:0", timeout_s: float = 60.0):
    """Run ``edge-cloud serve --bind BIND ARGS`` as a subprocess; yield a :class:`GatewayProcess`.

    The endpoint is read from the readiness line, so port 0 (a free port) works. Output is
    drained by a thread so the child never blocks on a full pipe.
    """
    cmd = [sys.executable, "-m", "cloud_fallback.cli", "serve", "--bind", bind, *args]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=Path(__file__).resolve().parents[1])
    output: list[str] = []
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        for line in proc.stdout:
            output.append(line)
            m = READY_RE.search(line)
            if m and not found:
                found.append(m.group(1))
                ready.set()
        ready.set()   # EOF: the process is gone

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        ready.wait(timeout_s)
        if not found:
            raise AssertionError(f"edge-cloud not ready (exit code {proc.poll()}):\n"
                                 + "".join(output))
        yield GatewayProcess(proc, found[0], output)
    finally:
        stop_process(proc)
        reader.join(5)


# -- a real OpenAI-compatible server: llama-cpp-python's, on the SmolLM2 GGUF ----------------

LLAMA_MODEL_ALIAS = "smollm2"


def smollm2_gguf() -> Path:
    """The GGUF `edge-runtime models pull` stores (EDGE_TEST_GGUF overrides)."""
    env = os.environ.get("EDGE_TEST_GGUF")
    if env:
        return Path(env)
    from edge_runtime.config import PathsConfig
    return (PathsConfig().models_dir / "smollm2-135m-instruct" / "files"
            / "SmolLM2-135M-Instruct.Q4_1.gguf")


@contextlib.contextmanager
def llama_server(threads: int = 2, timeout_s: float = 60.0):
    """Run ``python -m llama_cpp.server`` on the SmolLM2 GGUF on a free loopback port; yield
    its OpenAI base URL (``http://127.0.0.1:PORT/v1``, model name ``smollm2``).

    Skips only when llama_cpp is not importable; a missing GGUF or server extra fails."""
    import importlib.util
    import time
    import urllib.request

    import pytest
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not importable: pip install llama-cpp-python==0.3.36 "
                    "uvicorn fastapi sse-starlette starlette-context pydantic-settings")
    gguf = smollm2_gguf()
    if not gguf.is_file():
        pytest.fail(f"no GGUF at {gguf}: run `edge-runtime models pull` (or set EDGE_TEST_GGUF)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # (llama_cpp.server, with llama.cpp's AMX weight path off on an AMX CPU: llama.cpp#20824)
    cmd = [sys.executable, "-c", "from edge_runtime.llm.llama_cpp_engine import without_amx; "
           "without_amx(); import runpy; runpy.run_module('llama_cpp.server', "
           "run_name='__main__', alter_sys=True)", "--model", str(gguf), "--host",
           "127.0.0.1", "--port", str(port), "--n_threads", str(threads), "--n_ctx", "1024",
           "--model_alias", LLAMA_MODEL_ALIAS, "--interrupt_requests", "false"]
    log_file = open(os.devnull if os.environ.get("EDGE_TEST_QUIET") else
                    Path(os.environ.get("TMPDIR", "/tmp")) / f"llama-server-{port}.log", "w")
    proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        end = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode} (log: "
                            f"{log_file.name}); are its extras installed?")
            try:
                with urllib.request.urlopen(url + "/models", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > end:
                pytest.fail(f"llama_cpp.server not ready within {timeout_s} s (log: "
                            f"{log_file.name})")
            time.sleep(0.2)
        yield url
    finally:
        stop_process(proc)
        log_file.close()

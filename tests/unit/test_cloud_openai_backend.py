"""OpenAI-compatible backend against a tiny scripted HTTP server on loopback."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cloud_fallback.backends.base import BackendError
from cloud_fallback.backends.openai_http import OpenAIBackend
from cloud_fallback.gateway import Gateway
from edge_runtime.protocol import Chunk, Done, Error, Request
from edge_runtime.types import CancelToken, GenerationParams, Message
from tests.cloud_fixtures import Peer

pytestmark = pytest.mark.timeout(30)

ASK = [Message("system", "be brief"), Message("user", "hi")]


def sse(*events) -> bytes:
    return b"".join(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n"
                    for e in events)


def delta(text: str, finish=None) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


class FakeOpenAI:
    """Serves ``mode``: "ok", "http500", "hang" (headers then silence), "garbage", "cut"."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self.barrier: threading.Barrier | None = None   # set: hold each answer until N meet
        self.open_now = self.open_max = 0               # requests being answered at once
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                with fake._lock:
                    fake.open_now += 1
                    fake.open_max = max(fake.open_max, fake.open_now)
                try:
                    self.answer()
                finally:
                    with fake._lock:
                        fake.open_now -= 1

            def answer(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.bodies.append(body)
                fake.headers.append(dict(self.headers))
                if fake.barrier is not None:
                    fake.barrier.wait()       # BrokenBarrierError: requests were serialized
                if fake.mode == "http500":
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b'{"error": "CUDA out of memory"}')
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                if fake.mode == "hang":
                    self.wfile.write(sse(delta("Hel")))
                    self.wfile.flush()
                    time.sleep(3)
                    return
                if fake.mode == "garbage":
                    self.wfile.write(sse(b"{not json"))
                    return
                self.wfile.write(b": keep-alive comment\n\n")
                self.wfile.write(sse(delta("Hel"), delta("lo"), {"choices": []}, delta("!")))
                if fake.mode == "cut":
                    return
                if fake.mode == "interrupted":        # llama.cpp's server, interrupted
                    self.wfile.write(sse(b"[DONE]"))
                    return
                self.wfile.write(sse(delta("", "stop"), b"[DONE]"))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_openai():
    server = FakeOpenAI()
    yield server
    server.close()


def test_streams_deltas_and_sends_standard_fields(fake_openai):
    backend = OpenAIBackend(fake_openai.url, "tiny", api_key="sk-test")
    pieces = list(backend.generate(ASK, GenerationParams(max_new_tokens=7, seed=3), CancelToken()))
    assert pieces == ["Hel", "lo", "!"]
    body = fake_openai.bodies[0]
    assert body["model"] == "tiny" and body["stream"] is True and body["max_tokens"] == 7
    assert body["messages"] == [{"role": "system", "content": "be brief"},
                                {"role": "user", "content": "hi"}]
    assert fake_openai.headers[0]["Authorization"] == "Bearer sk-test"


@pytest.mark.parametrize("mode, fragment", [("http500", "HTTP 500"), ("garbage", "unreadable"),
                                            ("cut", "closed the stream"), ("hang", "sent nothing"),
                                            ("interrupted", "without a finish_reason")])
def test_failures_raise_backend_error_with_a_clear_message(fake_openai, mode, fragment):
    fake_openai.mode = mode
    backend = OpenAIBackend(fake_openai.url, "tiny", timeout_s=0.5)
    with pytest.raises(BackendError, match=fragment):
        list(backend.generate(ASK, GenerationParams(), CancelToken()))


def test_unreachable_server_raises_backend_error():
    server = FakeOpenAI()
    url = server.url
    server.close()
    with pytest.raises(BackendError, match="cannot reach"):
        list(OpenAIBackend(url, "tiny", timeout_s=1).generate(ASK, GenerationParams(), CancelToken()))


def test_bad_settings_are_refused():
    with pytest.raises(BackendError, match="not an http"):
        OpenAIBackend("ftp://x/v1", "m")
    with pytest.raises(BackendError, match="model name") as err:
        OpenAIBackend("http://127.0.0.1:1/v1", "")
    assert "--openai-model" in err.value.hint


def test_gateway_turns_http_500_into_an_error_reply(fake_openai):
    fake_openai.mode = "http500"
    with Gateway(OpenAIBackend(fake_openai.url, "tiny"), "tcp://127.0.0.1:0") as gw:
        peer = Peer(gw.endpoint)
        peer.send(Request("r", time.time() + 5, tuple(ASK)))
        (err,) = peer.answer("r")
        assert isinstance(err, Error) and err.code == "backend_error"
        assert "HTTP 500" in err.message and "CUDA out of memory" in err.message
        fake_openai.mode = "ok"
        peer.send(Request("r2", time.time() + 5, tuple(ASK)))
        assert peer.answer("r2") == [Chunk("r2", 0, "Hel"), Chunk("r2", 1, "lo"),
                                     Chunk("r2", 2, "!"), Done("r2", 0, 3, "stop")]
        peer.close()


def test_concurrent_requests_reach_the_server_concurrently(fake_openai):
    """One connection per generate and no lock: N gateway workers = N requests at once."""
    n = 4
    fake_openai.barrier = threading.Barrier(n, timeout=5.0)
    backend = OpenAIBackend(fake_openai.url, "tiny", parallel=n)
    assert backend.capacity == n
    with Gateway(backend, "tcp://127.0.0.1:0", workers=backend.capacity) as gw:
        peer = Peer(gw.endpoint)
        for i in range(n):
            peer.send(Request(f"r{i}", time.time() + 10, tuple(ASK)))
        done = []
        while len(done) < n:
            msg = peer.recv(10.0)
            assert not isinstance(msg, Error), msg
            if isinstance(msg, Done):
                done.append(msg.id)
        peer.close()
    assert sorted(done) == [f"r{i}" for i in range(n)]
    assert fake_openai.open_max == n


def test_parallel_must_be_positive():
    with pytest.raises(BackendError, match="openai-parallel"):
        OpenAIBackend("http://127.0.0.1:1/v1", "m", parallel=0)

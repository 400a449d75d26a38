"""Failure drills for the cloud link, shared by ``edge-runtime bench cloud`` and the tests.

Every drill sends ``n`` requests through :class:`FailoverCloudClient` + :func:`hedged_answer`
with a stand-in local model (answers ``"local:<i>"`` after ``LOCAL_DELAY_S``) and counts, per
request, what reached the sink: ``answered`` (exactly one whole answer, from a gateway or
local), ``lost`` (an error, nothing, or a wrong/partial answer), ``duplicated`` (two answers
or pieces of two answers), ``late`` (answered after deadline + 1 s), and who won.
The echo backend answers the request text, so a cloud answer is checked word for word.
"""
from __future__ import annotations

import asyncio
import dataclasses
import random
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Callable, Sequence
from typing import Any

import msgpack
import zmq

from edge_runtime.cloud_link.failover import FailoverCloudClient
from edge_runtime.cloud_link.hedge import hedged_answer
from edge_runtime.config import CloudConfig
from edge_runtime.protocol import Request, encode
from edge_runtime.types import CancelToken, GenerationParams, Message

LOCAL_DELAY_S = 0.05
PARAMS = GenerationParams(max_new_tokens=256, temperature=0.0)


@dataclass
class Tally:
    answered: int = 0
    lost: int = 0
    duplicated: int = 0
    late: int = 0
    reset: int = 0                 # cloud pieces voided mid-stream (then answered locally)
    winners: dict[str, int] = field(default_factory=lambda: {"cloud": 0, "local": 0})
    latencies_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cloud_errors: list[str] = field(default_factory=list)   # why the cloud lost (first few)

    def summary(self, **extra: Any) -> dict[str, Any]:
        lat = sorted(self.latencies_s)
        worst = round(lat[-1] * 1000, 1) if lat else None
        return {"answered": self.answered, "lost": self.lost, "duplicated": self.duplicated,
                "late": self.late, "reset_mid_stream": self.reset,
                "winners": dict(self.winners), "max_ms": worst,
                "errors": self.errors[:3],
                "cloud_errors": self.cloud_errors[:3], **extra}


class _Sink:
    def __init__(self, progress: asyncio.Event | None = None) -> None:
        self.pieces: list[str] = []
        self.resets = 0
        self._progress = progress

    def piece(self, text: str) -> None:
        self.pieces.append(text)
        if self._progress is not None:
            self._progress.set()

    def reset(self) -> None:
        self.pieces.clear()
        self.resets += 1


def local_answer(i: int) -> str:
    return f"local:{i}"


def fake_local(i: int, delay_s: float = LOCAL_DELAY_S) -> Callable[[CancelToken], Any]:
    """A stand-in local model: ``local:<i>`` after ``delay_s`` unless cancelled."""
    async def gen(token: CancelToken):
        await asyncio.sleep(delay_s)
        if not token.cancelled:
            yield local_answer(i)
    return gen


def request_text(i: int, words: int = 4) -> str:
    return " ".join([f"req{i}"] + [f"w{k}" for k in range(words - 1)])


def echo_answer(repeat: int = 1) -> Callable[[int], str]:
    """What the echo backend (``--echo-repeat repeat``) answers to ``request_text(i)``."""
    return lambda i: " ".join(request_text(i).split() * repeat)


def classify(tally: Tally, heard: str, winner: str, i: int, expected_cloud: str | None) -> None:
    """``expected_cloud`` None = any non-empty cloud text is right (a real model)."""
    local = local_answer(i)
    if winner == "local":
        ok = heard == local
        dup = heard != local and local in heard
    else:
        ok = (heard == expected_cloud) if expected_cloud is not None else (
            bool(heard) and "local:" not in heard)
        dup = (expected_cloud is not None and heard.count(expected_cloud) > 1) or (
            "local:" in heard)
    if ok:
        tally.answered += 1
        tally.winners[winner] += 1
    elif dup:
        tally.duplicated += 1
    else:
        tally.lost += 1
        tally.errors.append(f"request {i}: {winner} gave {heard[:60]!r}")


async def ask(client: Any, tally: Tally, i: int, *, deadline_s: float, hedge_after_s: float,
              expected_cloud: Callable[[int], str] | None = None, text: str | None = None,
              progress: asyncio.Event | None = None,
              params: GenerationParams = PARAMS) -> None:
    """One hedged request; its outcome goes into ``tally``. ``expected_cloud(i)`` is the
    exact cloud answer (None: any non-empty text, a real model); ``progress`` is set when
    the first piece reaches the sink."""
    text = text if text is not None else request_text(i)
    messages = [Message("user", text)]
    sink = _Sink(progress)
    start = time.monotonic()
    try:
        out = await hedged_answer(lambda: client.stream(messages, params, deadline_s),
                                  fake_local(i), hedge_after_s=hedge_after_s, sink=sink)
    except Exception as exc:  # counted, never raised: a drill measures
        tally.lost += 1
        tally.errors.append(f"request {i}: {type(exc).__name__}: {exc}")
        return
    elapsed = time.monotonic() - start
    tally.latencies_s.append(elapsed)
    if elapsed > deadline_s + 1.0:
        tally.late += 1
    heard = "".join(sink.pieces).strip()
    if sink.resets:
        tally.reset += 1
    if out.cloud_error and len(tally.cloud_errors) < 10:
        tally.cloud_errors.append(f"request {i}: {out.cloud_error}")
    if heard != out.answer:
        tally.duplicated += 1
        tally.errors.append(f"request {i}: sink {heard[:40]!r} != answer {out.answer[:40]!r}")
        return
    classify(tally, heard, out.winner, i, None if expected_cloud is None else expected_cloud(i))


def make_client(endpoints: Sequence[str], cfg: CloudConfig | None = None,
                **kw: Any) -> FailoverCloudClient:
    """A failover client over ``endpoints`` with heartbeats every 0.5 s at most."""
    cfg = cfg or CloudConfig(endpoint=endpoints[0])
    cfg = dataclasses.replace(cfg, health_interval_s=min(cfg.health_interval_s, 0.5))
    return FailoverCloudClient.from_config(cfg, endpoints, **kw)


async def run_batch(client: Any, n: int, concurrency: int, **kw: Any) -> Tally:
    """``n`` hedged requests, at most ``concurrency`` at a time."""
    tally = Tally()
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await ask(client, tally, i, **kw)
    await asyncio.gather(*(one(i) for i in range(n)))
    return tally


# -- garbage frames ------------------------------------------------------------------------

_WRONG_SHAPES: list[Any] = [
    [1, "request", {"id": 3}], {"a": 1}, [1, "chunk"], [1, "pong", {"nonce": 1}],
    [1, "request", {"id": "y", "deadline": "soon", "messages": []}], 2**63, [1, "ping", {}],
    [1, "cancel", {"id": "nobody"}], [1, "request", {"id": "z", "deadline": 1e300,
                                                     "messages": [{"role": 5}]}]]


def garbage_frames(rng: random.Random) -> list[bytes]:
    """One multipart message of junk: random bytes, near-valid msgpack, wrong versions,
    empty frames, extra frames, oversized fields."""
    kind = rng.randrange(7)
    if kind == 0:
        return [rng.randbytes(rng.randrange(0, 300))]
    if kind == 1:
        return [rng.randbytes(rng.randrange(1, 50)) for _ in range(rng.randrange(2, 6))]
    if kind == 2:
        return [b""]
    if kind == 3:     # a valid request in the wrong version / with a truncated tail
        good = encode(Request("x", time.time() + 5, (Message("user", "hi"),)))
        return [good[:-rng.randrange(1, 10)]] if rng.random() < 0.5 else [b"\x93\x02" + good[2:]]
    if kind == 4:     # msgpack of the wrong shape
        return [msgpack.packb(rng.choice(_WRONG_SHAPES))]
    if kind == 5:     # a valid frame followed by junk frames
        return [encode(Request("y", time.time() + 5, (Message("user", "hi"),))),
                rng.randbytes(8)]
    return [b"\xc1" * rng.randrange(1, 64)]   # 0xc1: never valid msgpack


def fuzz_gateway(endpoint: str, messages: int = 500, seed: int = 7) -> int:
    """Send ``messages`` junk multipart messages to ``endpoint`` over a real DEALER plus a raw
    TCP connection that speaks no ZMTP at all; returns how many replies came back (only
    Errors for the near-valid requests are acceptable, nothing may crash)."""
    rng = random.Random(seed)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    replies = 0
    try:
        for _ in range(messages):
            sock.send_multipart(garbage_frames(rng))
        _raw_tcp_junk(endpoint, rng)
        while sock.poll(300):
            sock.recv_multipart()
            replies += 1
    finally:
        sock.close(0)
        ctx.term()
    return replies


def _raw_tcp_junk(endpoint: str, rng: random.Random) -> None:
    import socket
    host, port = endpoint.rsplit("//", 1)[1].rsplit(":", 1)
    for payload in (rng.randbytes(4096), b"\xff" + b"\x00" * 8 + b"\x7f" + rng.randbytes(64),
                    b"GET / HTTP/1.1\r\n\r\n"):
        with socket.create_connection((host, int(port)), timeout=2) as s:
            try:
                s.sendall(payload)
                s.settimeout(0.2)
                s.recv(64)
            except OSError:
                pass


# -- a misbehaving OpenAI-compatible server --------------------------------------------------

class BrokenOpenAIServer:
    """Loopback HTTP server for the backend drills: ``mode`` "http500" answers every chat
    completion with HTTP 500; "hang" sends headers then nothing (until ``stop``)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.requests = 0
        self._release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                outer.requests += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if outer.mode == "http500":
                    body = b'{"error": {"message": "model crashed"}}'
                    self.send_response(500)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.flush()
                outer._release.wait(30)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> BrokenOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


def free_endpoint() -> str:
    """A loopback TCP endpoint nothing listens on (the port was free a moment ago)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"

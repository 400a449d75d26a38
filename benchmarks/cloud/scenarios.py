"""The failure drills as runnable scenarios (real ``edge-cloud serve`` processes on loopback).

Each ``drill_*`` coroutine returns :meth:`drills.Tally.summary` plus drill-specific counts.
The target for every drill: ``lost == 0`` and ``duplicated == 0`` (each request gets exactly
one whole answer, from a gateway or from the local stand-in).
"""
from __future__ import annotations

import asyncio
import dataclasses
import tempfile
import time
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import zmq

from edge_runtime.cloud_link.keys import generate_keypair, load_keypair, load_public_key
from edge_runtime.config import CloudConfig
from edge_runtime.protocol import Request, encode
from edge_runtime.types import GenerationParams, Message

from .drills import (PARAMS, BrokenOpenAIServer, echo_answer, fuzz_gateway, make_client, run_batch,
                     ask, Tally)
from .fleet import GatewayFleet

ECHO = ("--backend", "echo", "--workers", "2", "--queue-size", "256", "--log-level", "WARNING")


def _cfg(endpoint: str, **kw: Any) -> CloudConfig:
    base = CloudConfig(endpoint=endpoint, deadline_ms=3000.0, first_token_timeout_ms=1500.0,
                       connect_timeout_ms=500.0, health_interval_s=0.25)
    return dataclasses.replace(base, **kw)


async def _wait(pred, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > end:
            return False
        await asyncio.sleep(0.02)
    return True


async def drill_cloud_down_at_start(n: int = 20) -> dict:
    """No gateway listening on any endpoint: every request is answered locally, at once."""
    from .drills import free_endpoint
    eps = [free_endpoint(), free_endpoint()]
    async with make_client(eps, _cfg(eps[0])) as client:
        t = await run_batch(client, n, 10, deadline_s=3.0, hedge_after_s=0.5)
        return t.summary(link=client.state)


async def drill_killed_mid_stream(n: int = 20, gateway_args: Sequence[str] | None = None, *,
                                  text: str | None = None, deadline_s: float = 6.0,
                                  ready_timeout_s: float = 60.0,
                                  params: GenerationParams = PARAMS) -> dict:
    """Two gateways; the one with the most requests in flight is SIGKILLed once answers
    are streaming (the client spreads requests by predicted first-token time, so on a busy
    box they may all go to one). Its requests are voided mid-stream and answered locally;
    the others finish from the other gateway.
    ``gateway_args`` None = echo answering each word 20 times, 20 ms per piece (~1.6 s)."""
    args = list(gateway_args) if gateway_args is not None else [
        *ECHO, "--workers", "16", "--echo-delay-ms", "20", "--echo-repeat", "20"]
    expected = echo_answer(20) if gateway_args is None else None
    with GatewayFleet(2, args, ready_timeout_s=ready_timeout_s) as fleet:
        cfg = _cfg(fleet.endpoints[0], first_token_timeout_ms=deadline_s * 1000)
        async with make_client(fleet.endpoints, cfg) as client:
            progress = asyncio.Event()
            tally = Tally()
            sem = asyncio.Semaphore(n)

            async def one(i: int) -> None:
                async with sem:
                    await ask(client, tally, i, deadline_s=deadline_s, hedge_after_s=deadline_s,
                              expected_cloud=expected, text=text, progress=progress,
                              params=params)
            batch = asyncio.gather(*(one(i) for i in range(n)))
            await asyncio.wait_for(progress.wait(), deadline_s)
            await asyncio.sleep(0.1)
            busy = client.in_flight()
            victim = max(range(len(fleet.endpoints)), key=lambda k: busy[fleet.endpoints[k]])
            await asyncio.to_thread(fleet.kill, victim)
            await batch
            return tally.summary(affected=tally.reset, killed=fleet.gateways[victim].endpoint,
                                 in_flight_at_kill=busy)


async def drill_slow_cloud(n: int = 20) -> dict:
    """The first cloud piece comes 600 ms after the request, the budget is 150 ms: the local
    model starts at 150 ms, wins, and the cloud request is cancelled."""
    with GatewayFleet(1, [*ECHO, "--echo-delay-ms", "600"]) as fleet:
        async with make_client(fleet.endpoints, _cfg(fleet.endpoints[0])) as client:
            t = await run_batch(client, n, 10, deadline_s=3.0, hedge_after_s=0.15,
                                expected_cloud=echo_answer())
            return t.summary()


async def drill_wrong_key(n: int = 20) -> dict:
    """A CURVE gateway with an allow-list; the device's key is not on it. The device sees
    the link down and answers locally; a raw client with that key never gets a reply."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        server_pub, server_secret = generate_keypair(d, "server")
        allowed_pub, _ = generate_keypair(d, "allowed")
        _, stranger_secret = generate_keypair(d, "stranger")
        allow = d / "allow"
        allow.write_text(load_public_key(str(allowed_pub)).decode() + "  allowed\n")
        with GatewayFleet(1, [*ECHO, "--curve-secret-key-file", str(server_secret),
                              "--allow-client-keys-file", str(allow)]) as fleet:
            ep = fleet.endpoints[0]
            cfg = _cfg(ep, server_public_key=str(server_pub),
                       client_secret_key_file=str(stranger_secret))
            async with make_client([ep], cfg) as client:
                t = await run_batch(client, n, 10, deadline_s=3.0, hedge_after_s=0.3)
            replies = await asyncio.to_thread(stranger_replies, ep, server_pub, stranger_secret)
            return t.summary(replies_to_stranger=replies,
                             refused_logged="refused a CURVE client" in fleet.gateways[0].log())


def stranger_replies(endpoint: str, server_public: Path, client_secret: Path,
                     wait_s: float = 1.0) -> int:
    """Messages a CURVE client with ``client_secret`` receives after sending a Request."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.curve_serverkey = load_public_key(str(server_public))
    sock.curve_publickey, sock.curve_secretkey = load_keypair(client_secret)
    sock.connect(endpoint)
    try:
        sock.send(encode(Request("stranger", time.time() + 5, (Message("user", "let me in"),))),
                  zmq.NOBLOCK)
    except zmq.Again:
        pass                   # not even queued: nothing can come back
    got = 0
    end = time.monotonic() + wait_s
    while (left := end - time.monotonic()) > 0:
        if sock.poll(int(left * 1000)):
            sock.recv()
            got += 1
    sock.close(0)
    ctx.term()
    return got


async def drill_garbage_frames(n: int = 20, junk: int = 2000) -> dict:
    """Junk multipart messages and raw non-ZMTP TCP bytes hit the gateway while real requests
    run; the real requests are all answered by the gateway, which stays up."""
    with GatewayFleet(1, ECHO) as fleet:
        ep = fleet.endpoints[0]
        async with make_client([ep], _cfg(ep)) as client:
            fuzz = asyncio.to_thread(fuzz_gateway, ep, junk)
            t, replies = await asyncio.gather(
                run_batch(client, n, 5, deadline_s=3.0, hedge_after_s=1.0,
                          expected_cloud=echo_answer()), fuzz)
            alive = fleet.gateways[0].proc.poll() is None
            return t.summary(junk_messages=junk, replies_to_junk=replies, gateway_alive=alive)


async def drill_gateway_restarted(n: int = 30) -> dict:
    """One gateway is SIGKILLed after a third of the requests and restarted on its port; the
    requests in between are answered locally, and the client reconnects on its own
    (libzmq reconnect backoff + a half-open breaker probe)."""
    with GatewayFleet(1, [*ECHO, "--echo-delay-ms", "5"]) as fleet:
        ep = fleet.endpoints[0]
        async with make_client([ep], _cfg(ep), breaker_reset_s=0.3) as client:
            t = Tally()
            for i in range(n):
                if i == n // 3:
                    await asyncio.to_thread(fleet.kill, 0)
                if i == 2 * n // 3:
                    await asyncio.to_thread(fleet.restart, 0)
                    back = await _wait(lambda: client.state == "up", 10.0)
                await ask(client, t, i, deadline_s=2.0, hedge_after_s=0.5,
                          expected_cloud=echo_answer())
            return t.summary(reconnected=back)


async def drill_backend_http(mode: str, n: int = 10) -> dict:
    """The OpenAI-compatible server behind the gateway answers HTTP 500 ("http500") or
    hangs after the headers ("hang"): requests are answered locally; the gateway survives."""
    with BrokenOpenAIServer(mode) as http:
        args = ["--backend", "openai", "--openai-url", http.url, "--openai-model", "m",
                "--openai-timeout-s", "1", "--workers", "2", "--queue-size", "64",
                "--log-level", "WARNING"]
        with GatewayFleet(1, args) as fleet:
            ep = fleet.endpoints[0]
            async with make_client([ep], _cfg(ep)) as client:
                t = await run_batch(client, n, 5, deadline_s=3.0, hedge_after_s=0.3)
            alive = fleet.gateways[0].proc.poll() is None
            return t.summary(http_requests=http.requests, gateway_alive=alive)


DRILLS = {
    "cloud_down_at_start": drill_cloud_down_at_start,
    "killed_mid_stream": drill_killed_mid_stream,
    "slow_cloud": drill_slow_cloud,
    "wrong_curve_key": drill_wrong_key,
    "garbage_frames": drill_garbage_frames,
    "gateway_restarted": drill_gateway_restarted,
    "backend_http_500": lambda n=10: drill_backend_http("http500", n),
    "backend_http_hang": lambda n=10: drill_backend_http("hang", n),
}

"""``python -m benchmarks.cloud_bench`` (or ``edge-runtime bench cloud`` from a checkout):
protocol overhead, throughput through 1 and N gateways, and
the failure drills (lost/duplicated answers), all on loopback.

    edge-runtime bench cloud [--json] [--quick] [--levels 1,10,100,200] [--gateways 1,3]
                             [--drills NAME,...|none] [--overhead-iters N]

Throughput uses the echo backend (no model: a 2-core box cannot run 200 real generations),
so it measures the link, the gateways and the client, not a model. ``--json`` prints one
object: ``overhead_ratio`` (our envelope round trip / a raw zmq echo of the same bytes,
medians), ``overhead`` (all the medians, including the full gateway and asyncio client),
``levels`` [{concurrency, gateways, requests, rps, p50_ms, p99_ms, lost, duplicated}] and
``drills`` {name: {answered, lost, duplicated, late, winners, max_ms, …}}.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import zmq

from benchmarks.cloud.drills import echo_answer, request_text
from benchmarks.cloud.fleet import GatewayFleet
from benchmarks.cloud.scenarios import DRILLS, ECHO
from edge_runtime.cloud_link.failover import FailoverCloudClient
from edge_runtime.config import CloudConfig
from edge_runtime.protocol import Chunk, Done, Request, decode, encode
from edge_runtime.types import GenerationParams, Message

log = logging.getLogger(__name__)
_LEVEL_TIMEOUT_S = 60.0
_PARAMS = GenerationParams(max_new_tokens=64, temperature=0.0)


# -- protocol overhead -----------------------------------------------------------------------

def _echo_server(ctx: zmq.Context, mode: str, ready: threading.Event,
                 stop: threading.Event, out: list[str]) -> None:
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind("tcp://127.0.0.1:0")
    out.append(sock.getsockopt_string(zmq.LAST_ENDPOINT))
    ready.set()
    while not stop.is_set():
        if not sock.poll(50):
            continue
        peer, data = sock.recv_multipart()
        if mode == "raw":
            sock.send_multipart([peer, data])
        else:                                   # decode + validate, answer one Chunk
            req = decode(data)
            sock.send_multipart([peer, encode(Chunk(req.id, 0, req.messages[-1].content))])
    sock.close(0)


def _round_trips(iters: int) -> dict[str, list[float]]:
    """Raw echo and envelope round trips, interleaved (raw, envelope, raw, …) so that both
    see the same machine load; the first 10 % of each are warm-up and dropped."""
    ctx = zmq.Context()
    stop = threading.Event()
    dealers, threads = {}, []
    for mode in ("raw", "envelope"):
        ready, out = threading.Event(), []
        t = threading.Thread(target=_echo_server, args=(ctx, mode, ready, stop, out), daemon=True)
        t.start()
        ready.wait(5)
        d = ctx.socket(zmq.DEALER)
        d.setsockopt(zmq.LINGER, 0)
        d.connect(out[0])
        dealers[mode], threads = d, threads + [t]
    msgs = (Message("user", request_text(0)),)
    frame = encode(Request("0" * 32, time.time() + 60, msgs, _PARAMS))
    samples: dict[str, list[float]] = {"raw": [], "envelope": []}
    try:
        for i in range(iters + iters // 10):
            t0 = time.perf_counter()
            dealers["raw"].send(frame)
            dealers["raw"].recv()
            t1 = time.perf_counter()
            dealers["envelope"].send(encode(Request(f"{i:032d}", time.time() + 60, msgs,
                                                    _PARAMS)))
            decode(dealers["envelope"].recv())
            t2 = time.perf_counter()
            if i >= iters // 10:
                samples["raw"].append(t1 - t0)
                samples["envelope"].append(t2 - t1)
    finally:
        stop.set()
        for t in threads:
            t.join(2)
        for d in dealers.values():
            d.close(0)
        ctx.term()
    return samples


def _gateway_round_trips(iters: int) -> tuple[list[float], list[float]]:
    """(sync DEALER through a real Gateway: Request -> Chunk + Done,
    the asyncio ZmqCloudClient through the same Gateway)."""
    from cloud_fallback.backends.echo import EchoBackend
    from cloud_fallback.gateway import Gateway

    from edge_runtime.cloud_link.zmq_client import ZmqCloudClient
    msgs = (Message("user", "pong"),)
    sync_s: list[float] = []
    with Gateway(EchoBackend(), "tcp://127.0.0.1:0", workers=1, queue_size=8) as gw:
        ctx = zmq.Context()
        d = ctx.socket(zmq.DEALER)
        d.setsockopt(zmq.LINGER, 0)
        d.connect(gw.endpoint)
        for i in range(iters + iters // 10):
            t0 = time.perf_counter()
            d.send(encode(Request(f"{i:032d}", time.time() + 60, msgs, _PARAMS)))
            while not isinstance(decode(d.recv()), Done):
                pass
            if i >= iters // 10:
                sync_s.append(time.perf_counter() - t0)
        d.close(0)
        ctx.term()

        async def client_loop() -> list[float]:
            out = []
            cfg = CloudConfig(endpoint=gw.endpoint, health_interval_s=5.0)
            async with ZmqCloudClient(cfg) as client:
                for i in range(iters + iters // 10):
                    t0 = time.perf_counter()
                    async for _ in client.stream(msgs, _PARAMS, 5.0):
                        pass
                    if i >= iters // 10:
                        out.append(time.perf_counter() - t0)
            return out
        async_s = asyncio.run(client_loop())
    return sync_s, async_s


def measure_overhead(iters: int = 2000) -> dict[str, Any]:
    trips = _round_trips(iters)
    raw, env = statistics.median(trips["raw"]), statistics.median(trips["envelope"])
    gw_sync, gw_async = _gateway_round_trips(max(200, iters // 4))
    med = statistics.median
    return {"raw_echo_us": round(raw * 1e6, 1), "envelope_echo_us": round(env * 1e6, 1),
            "gateway_sync_us": round(med(gw_sync) * 1e6, 1),
            "gateway_client_us": round(med(gw_async) * 1e6, 1),
            "overhead_ratio": round(env / raw, 3),
            "gateway_ratio": round(med(gw_sync) / raw, 3),
            "client_ratio": round(med(gw_async) / raw, 3), "iters": iters}


# -- throughput ------------------------------------------------------------------------------

async def _level(client: FailoverCloudClient, concurrency: int, requests: int) -> dict[str, Any]:
    expected = echo_answer()
    lat: list[float] = []
    lost = dup = 0
    errors: list[str] = []
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        nonlocal lost, dup
        async with sem:
            t0 = time.perf_counter()
            try:
                text = "".join([p async for p in client.stream(
                    [Message("user", request_text(i))], _PARAMS, 10.0)])
            except Exception as exc:   # counted as lost
                lost += 1
                if len(errors) < 3:
                    errors.append(f"{type(exc).__name__}: {exc}")
                return
            lat.append(time.perf_counter() - t0)
            if text == expected(i):
                return
            if text.count(expected(i)) > 1:
                dup += 1
            else:
                lost += 1

    start = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(requests))), _LEVEL_TIMEOUT_S)
    elapsed = time.perf_counter() - start
    lat.sort()
    pct = (lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 2)) if lat else (
        lambda q: None)
    return {"concurrency": concurrency, "requests": requests,
            "rps": round(requests / elapsed, 1), "p50_ms": pct(0.5), "p99_ms": pct(0.99),
            "lost": lost, "duplicated": dup, "errors": errors}


async def measure_levels(levels: Sequence[int], gateways: Sequence[int],
                         quick: bool) -> list[dict[str, Any]]:
    rows = []
    for g in gateways:
        args = [*ECHO, "--workers", "4", "--queue-size", "512"]
        with GatewayFleet(g, args) as fleet:
            cfg = CloudConfig(endpoint=fleet.endpoints[0], health_interval_s=1.0,
                              first_token_timeout_ms=5000.0)
            async with FailoverCloudClient.from_config(cfg, fleet.endpoints) as client:
                await _level(client, 4, 20)                               # warm up
                for c in levels:
                    n = min(max(50 if quick else 200, (1 if quick else 3) * c), 600)
                    row = await _level(client, c, n)
                    row["gateways"] = g
                    row["retries"] = client.retries
                    rows.append(row)
    return rows


# -- entry point -----------------------------------------------------------------------------

async def run_drills(names: Sequence[str]) -> dict[str, Any]:
    out = {}
    for name in names:
        t0 = time.perf_counter()
        result = await DRILLS[name]()
        result["seconds"] = round(time.perf_counter() - t0, 1)
        out[name] = result
    return out


async def _real_model_drill(url: str, model: str) -> dict[str, Any]:
    from benchmarks.cloud.scenarios import drill_killed_mid_stream
    t0 = time.perf_counter()
    result = await drill_killed_mid_stream(
        4, ["--backend", "openai", "--openai-url", url, "--openai-model", model,
            "--openai-timeout-s", "20", "--workers", "2", "--log-level", "WARNING"],
        text="Tell me a long story about a lighthouse keeper and the sea.", deadline_s=20.0,
        params=GenerationParams(max_new_tokens=48, temperature=0.0))
    result["seconds"] = round(time.perf_counter() - t0, 1)
    return result


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="edge-runtime bench cloud", description=__doc__.split(
        "\n\n")[0])
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quick", action="store_true", help="fewer requests and round trips")
    p.add_argument("--levels", default="1,10,100,200", help="concurrency levels")
    p.add_argument("--gateways", default="1,3", help="gateway counts (processes)")
    p.add_argument("--drills", default="all",
                   help="comma-separated drill names, 'all' or 'none': " + ",".join(DRILLS))
    p.add_argument("--overhead-iters", type=int, default=2000, help="round trips per mode")
    p.add_argument("--openai-url", default="", help="also run the killed-mid-stream drill "
                   "with gateways in front of this OpenAI-compatible server (a real model)")
    p.add_argument("--openai-model", default="", help="model name for --openai-url")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print a table (or ``--json``); return 0, or 2 on bad arguments."""
    args = build_parser().parse_args(argv)
    names = list(DRILLS) if args.drills == "all" else (
        [] if args.drills == "none" else [d for d in args.drills.split(",") if d])
    unknown = [d for d in names if d not in DRILLS]
    if unknown:
        print(f"edge-runtime bench cloud: unknown drill(s) {unknown}; choose from "
              f"{', '.join(DRILLS)}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    iters = min(args.overhead_iters, 500) if args.quick else args.overhead_iters
    overhead = measure_overhead(iters)
    levels = asyncio.run(measure_levels(_ints(args.levels), _ints(args.gateways), args.quick))
    drills = asyncio.run(run_drills(names))
    if args.openai_url:
        drills["killed_mid_stream_real_model"] = asyncio.run(_real_model_drill(
            args.openai_url, args.openai_model))
    result = {"overhead_ratio": overhead["overhead_ratio"], "overhead": overhead,
              "backend": "echo (no model) for overhead and levels", "levels": levels,
              "drills": drills}
    if args.json:
        print(json.dumps(result))
    else:
        _print_table(result)
    return 0


def _print_table(r: dict[str, Any]) -> None:
    o = r["overhead"]
    print(f"round trip (median): raw zmq echo {o['raw_echo_us']} us, envelope "
          f"{o['envelope_echo_us']} us (x{o['overhead_ratio']}), gateway sync "
          f"{o['gateway_sync_us']} us (x{o['gateway_ratio']}), asyncio client "
          f"{o['gateway_client_us']} us (x{o['client_ratio']})")
    print("gateways concurrency requests     rps   p50_ms   p99_ms lost dup")
    for x in r["levels"]:
        print(f"{x['gateways']:8} {x['concurrency']:11} {x['requests']:8} {x['rps']:7} "
              f"{x['p50_ms']!s:>8} {x['p99_ms']!s:>8} {x['lost']:4} {x['duplicated']:3}")
    for name, d in r["drills"].items():
        print(f"drill {name}: answered {d['answered']} lost {d['lost']} duplicated "
              f"{d['duplicated']} late {d['late']} winners {d['winners']} max {d['max_ms']} ms")


if __name__ == "__main__":
    sys.exit(main())

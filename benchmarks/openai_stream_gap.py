"""What streaming adds: ``/v1/chat/completions`` first SSE chunk vs the pipeline's own first
token, in the same request.

    python -m benchmarks.openai_stream_gap --model-dir DIR [-n 20]   # starts `serve` itself
    python -m benchmarks.openai_stream_gap --url http://127.0.0.1:8080 [-n 20]

Each request is a distinct open question (no cache hits), streamed with the official
``openai`` client. The last chunk's ``edge_runtime`` field carries, measured in the daemon on
one clock, ``first_token_ms`` (the pipeline's first answer piece) and ``first_chunk_ms``
(the first content chunk written to the socket); their difference is the server-side gap.
The client-side figure (request sent -> first content chunk parsed by the client, minus the
server's first token) adds HTTP and the client's own parsing. Prints medians (JSON with
``--json``).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

QUESTIONS = ("why is the sky blue", "how do rainbows form", "why do cats purr",
             "what makes the sea salty", "how do bees make honey", "why do leaves fall",
             "how does a rocket fly", "why is snow white", "how do birds migrate",
             "what is a black hole")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(model_dir: str, threads: int) -> tuple[subprocess.Popen, str, str]:
    port = _free_port()
    home = tempfile.mkdtemp(prefix="edge-gap-")
    env = dict(os.environ, EDGE_RUNTIME_PATHS__HOME=home)
    log = os.path.join(home, "daemon.log")
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_runtime.cli", "serve", "--port", str(port),
         "--set", f"llm.model_dir={model_dir}", "--set", f"llm.threads={threads}",
         "--set", "cloud.enabled=false", "--set", "voice.enabled=false",
         "--set", "cache.enabled=false"],
        env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    end = time.monotonic() + 180
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"the daemon exited ({proc.returncode}); see {log}")
        try:
            urllib.request.urlopen(base + "/healthz", timeout=5).read()
            return proc, base, log
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit(f"the daemon did not become ready; see {log}")


def measure(base: str, n: int, warmup: int = 2) -> dict:
    import openai
    oa = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=120)
    rows = []
    for i in range(warmup + n):
        question = f"{QUESTIONS[i % len(QUESTIONS)]} (question {i})"
        t0 = time.perf_counter()
        t_first = None
        ext: dict = {}
        for chunk in oa.chat.completions.create(
                model="edge-runtime", stream=True,
                messages=[{"role": "user", "content": question}]):
            if t_first is None and chunk.choices and chunk.choices[0].delta.content:
                t_first = time.perf_counter()
            ext = (chunk.model_extra or {}).get("edge_runtime") or ext
        if i < warmup or ext.get("route") not in ("local", "cloud") or t_first is None:
            continue
        rows.append({"route": ext["route"], "first_token_ms": ext["first_token_ms"],
                     "first_chunk_ms": ext["first_chunk_ms"],
                     "server_gap_ms": ext["first_chunk_ms"] - ext["first_token_ms"],
                     "client_first_chunk_ms": (t_first - t0) * 1e3})
    if not rows:
        raise SystemExit("no request was answered by a model (all skills?)")

    def med(key: str) -> float:
        return round(statistics.median(r[key] for r in rows), 3)

    return {"requests": len(rows), "routes": sorted({r["route"] for r in rows}),
            "median_first_token_ms": med("first_token_ms"),
            "median_first_chunk_ms": med("first_chunk_ms"),
            "median_server_gap_ms": med("server_gap_ms"),
            "max_server_gap_ms": round(max(r["server_gap_ms"] for r in rows), 3),
            "median_client_first_chunk_ms": med("client_first_chunk_ms"),
            "median_client_gap_ms": round(statistics.median(
                r["client_first_chunk_ms"] - r["first_token_ms"] for r in rows), 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="a running daemon (else one is started)")
    ap.add_argument("--model-dir", help="the built LLM for the daemon this starts")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-n", type=int, default=20, help="measured requests")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    proc = None
    base = args.url
    if base is None:
        if not args.model_dir:
            ap.error("give --url of a running daemon or --model-dir to start one")
        proc, base, _ = _start(args.model_dir, args.threads)
    try:
        out = measure(base.rstrip("/"), args.n)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
    if args.json:
        print(json.dumps(out))
    else:
        for key, value in out.items():
            print(f"{key:30s} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

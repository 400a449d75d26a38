"""Reproduce issue 16's defects against a real ``edge-runtime serve`` on loopback and print
what each gets now: ``python -m benchmarks.hardening_repro [--port 18090]``.

Starts the daemon (embedded models, no cloud), sends each bad input of the issue, then a
normal request after each, and prints one line per case: status / outcome, and whether the
next normal request was answered. ERROR lines in the daemon's log are counted at the end.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import aiohttp


def _post(port: int, body: bytes, headers: dict[str, str] | None = None,
          path: str = "/v1/ask") -> tuple[int, str]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8", "replace")


def _raw(port: int, data: bytes, wait_s: float) -> str:
    """Send raw bytes, then wait for the server to answer or close (or give up)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(wait_s)
    start = time.monotonic()
    try:
        s.sendall(data)
        got = s.recv(200)
        first = got.split(b"\r\n")[0].decode("latin-1") or "closed"
        return f"{first} after {time.monotonic() - start:.1f} s"
    except TimeoutError:
        return f"still open after {wait_s:.0f} s"
    finally:
        s.close()


async def _ws(port: int, text: str, headers: dict[str, str]) -> str:
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(f"http://127.0.0.1:{port}/v1/stream",
                                      headers=headers) as ws:
            await ws.send_str(text)
            msg = await ws.receive(timeout=10)
            if msg.type == aiohttp.WSMsgType.TEXT:
                return "event " + json.loads(msg.data).get("type", "?")
            return f"{msg.type.name} code {ws.close_code}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=18090)
    args = ap.parse_args(argv)
    port = args.port
    home = os.environ.get("EDGE_RUNTIME_PATHS__HOME", "")
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    env = {**os.environ, "EDGE_RUNTIME_CLOUD__ENABLED": "false"}
    cmd = [sys.executable, "-m", "edge_runtime.cli", "serve", "--port", str(port),
           "--set", "server.token=sekret", "--set", "server.header_timeout_s=3",
           "--set", "server.body_timeout_s=3", "--set", "server.idle_timeout_s=5"]
    if home:
        cmd += ["--set", f"paths.home={home}"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    auth = {"Authorization": "Bearer sekret"}
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        ok = b'{"text": "what time is it"}'
        cases = [
            ("1 ws start sample_rate Infinity", lambda: asyncio.run(
                _ws(port, '{"type":"start","sample_rate":Infinity}', auth))),
            ("2 lone surrogate", lambda: _post(port, b'{"text": "why is \\ud800 the sky blue"}',
                                               auth)[0]),
            ("3 non-UTF-8 Authorization", lambda: _raw(
                port, b"POST /v1/ask HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", 10)),
            ("4 JSON nested 1000 deep", lambda: _post(
                port, b'{"text": ' + b"[" * 1000 + b"]" * 1000 + b"}", auth)[0]),
            ("5 budget_ms 1e400 digits", lambda: _post(
                port, b'{"text": "why is the sky blue", "budget_ms": 1' + b"0" * 400 + b"}",
                auth)[0]),
            ("5 budget_ms NaN", lambda: _post(
                port, b'{"text": "why is the sky blue", "budget_ms": NaN}', auth)[0]),
            ("6 Content-Encoding gzip on a plain body", lambda: _post(
                port, ok, {**auth, "Content-Encoding": "gzip"})[0]),
            ("7 1 byte of a 100-byte body", lambda: _raw(
                port, b"POST /v1/ask HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekret\r\n"
                      b"Content-Length: 100\r\n\r\n{", 20)),
            ("7 connect and say nothing", lambda: _raw(port, b"", 20)),
        ]
        for name, run in cases:
            try:
                got = run()
            except Exception as exc:  # noqa: BLE001 - a harness reports, never stops
                got = f"{type(exc).__name__}: {exc}"
            status, _ = _post(port, ok, auth)
            print(f"{name:42s} -> {got}; next normal request: {status}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    log.seek(0)
    errors = [line for line in log.read().splitlines() if " ERROR " in line]
    print(f"ERROR lines in the daemon log: {len(errors)} ({log.name})")
    for line in errors[:5]:
        print("  " + line[:200])
    return 0


if __name__ == "__main__":
    sys.exit(main())

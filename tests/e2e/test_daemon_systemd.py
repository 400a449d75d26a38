"""`edge-runtime serve` under a stand-in for systemd's notify socket: the start extends the
start timeout while models load, readiness follows, and the watchdog keeps being pinged
while the daemon is alive, even degraded (no model built: a restart would not mend that)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port

pytestmark = [pytest.mark.e2e]


def test_serve_extends_the_start_then_is_ready_then_pings_while_alive(tmp_path) -> None:
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(60)
    port = free_port()
    env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC="1000000",
               EDGE_RUNTIME_PATHS__HOME=str(tmp_path / "home"),
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_runtime.cli", "serve", "--port", str(port),
         "--set", "cloud.enabled=false", "--set", "voice.enabled=false"],
        env=env, stdout=open(tmp_path / "daemon.log", "ab"), stderr=subprocess.STDOUT)
    try:
        got = []
        while sum(m == "WATCHDOG=1" for m in got) < 2:
            got.append(sock.recv(4096).decode())
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            health = json.loads(r.read())
    finally:
        proc.terminate()
        proc.wait(30)
        sock.close()
    assert got[0].startswith("STATUS=starting: loading models"), got
    assert got[1].startswith("EXTEND_TIMEOUT_USEC="), got
    ready = next(i for i, m in enumerate(got) if m.startswith("READY=1"))
    assert all(m.startswith("EXTEND_TIMEOUT_USEC=") for m in got[1:ready]), got
    assert all(m == "WATCHDOG=1" for m in got[ready + 1:]), got
    assert health["status"] == "degraded"             # no model: degraded, still alive
    assert proc.returncode == 0

"""Run several ``edge-cloud serve`` processes on loopback (benchmarks and failure drills).

Each gateway is a real process (``python -m cloud_fallback.cli serve``) so a drill can
SIGKILL one mid-stream and restart it on the same port, as an operator or a crash would.
"""
from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from collections.abc import Sequence

from edge_runtime.errors import EdgeError

log = logging.getLogger(__name__)

READY_RE = re.compile(r"edge-cloud ready on (tcp://\S+)")
_MAX_LOG_LINES = 2000


class FleetError(EdgeError):
    code, stage = "gateway_start_failed", "cloud_bench"


class GatewayProc:
    """One ``edge-cloud serve`` child; ``output`` keeps its last stdout+stderr lines."""

    def __init__(self, args: Sequence[str], bind: str) -> None:
        self.args = list(args)
        self.bind = bind
        self.endpoint = ""
        self.output: list[str] = []
        self.proc: subprocess.Popen | None = None
        self._ready = threading.Event()
        self._reader: threading.Thread | None = None

    def spawn(self) -> None:
        cmd = [sys.executable, "-m", "cloud_fallback.cli", "serve", "--bind", self.bind,
               *self.args]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._ready.clear()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env, cwd=Path(__file__).resolve().parents[2])
        self._reader = threading.Thread(target=self._drain, args=(self.proc,), daemon=True)
        self._reader.start()

    def _drain(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.output.append(line)
            del self.output[:-_MAX_LOG_LINES]
            m = READY_RE.search(line)
            if m and not self._ready.is_set():
                self.endpoint = m.group(1)
                self._ready.set()
        self._ready.set()          # EOF: the process is gone

    def wait_ready(self, timeout_s: float) -> str:
        self._ready.wait(timeout_s)
        if self.proc is None or self.proc.poll() is not None or not self.endpoint:
            code = None if self.proc is None else self.proc.poll()
            raise FleetError(f"edge-cloud serve {' '.join(self.args)} did not become ready "
                             f"within {timeout_s:g} s (exit code {code}): "
                             + "".join(self.output[-20:]).strip(),
                             hint="run the same command by hand to see why")
        self.bind = self.endpoint          # a restart binds the same port
        return self.endpoint

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._reader is not None:
            self._reader.join(5)

    def log(self) -> str:
        return "".join(self.output)


class GatewayFleet:
    """``n`` gateways started with the same ``args`` on free loopback ports."""

    def __init__(self, n: int, args: Sequence[str], *, ready_timeout_s: float = 60.0,
                 bind: str = "tcp://127.0.0.1:0") -> None:
        self.gateways = [GatewayProc(args, bind) for _ in range(n)]
        self._timeout_s = ready_timeout_s

    @property
    def endpoints(self) -> list[str]:
        return [g.endpoint for g in self.gateways]

    def start(self) -> list[str]:
        """Spawn all, then wait for each readiness line; returns the endpoints."""
        try:
            for g in self.gateways:
                g.spawn()
            for g in self.gateways:
                g.wait_ready(self._timeout_s)
        except BaseException:
            self.stop()
            raise
        return self.endpoints

    def kill(self, i: int, sig: int = signal.SIGKILL) -> None:
        self.gateways[i].kill(sig)

    def restart(self, i: int) -> str:
        """Start gateway ``i`` again on its previous port (after ``kill``)."""
        g = self.gateways[i]
        g.kill()
        g.spawn()
        return g.wait_ready(self._timeout_s)

    def stop(self) -> None:
        for g in self.gateways:
            g.kill(signal.SIGTERM)

    def __enter__(self) -> GatewayFleet:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

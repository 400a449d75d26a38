"""The processes of a load run: start (pinned to a core), wait for readiness, measure
(CPU from /proc/PID/stat, RSS and open descriptors from /proc/PID), stop cleanly."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[2]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def venv_bin(name: str) -> str:
    """``name`` next to this interpreter (the venv's console scripts), else on PATH."""
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else name


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process (all its threads), or None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK      # utime, stime


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except FileNotFoundError:
        return None
    return None


def open_fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, PermissionError):
        return None


def machine_cpu() -> dict[str, tuple[int, int]]:
    """(busy, total) jiffies per CPU line of /proc/stat ("cpu", "cpu0", ...)."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        if not line.startswith("cpu"):
            break
        name, *vals = line.split()
        v = [int(x) for x in vals]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        total = sum(v[:8])
        out[name] = (total - idle, total)
    return out


def busy_share(before: dict, after: dict) -> dict[str, float]:
    """Per CPU: share of time busy (all processes of the machine) between two samples."""
    out = {}
    for name, (b1, t1) in after.items():
        b0, t0 = before.get(name, (0, 0))
        out[name] = round((b1 - b0) / (t1 - t0), 3) if t1 > t0 else 0.0
    return out


class Proc:
    """One child process, pinned to ``cpu`` (None: not pinned), output to ``log``."""

    def __init__(self, name: str, argv: Sequence[str], log: Path, ready_text: str,
                 cpu: int | None = None, env: dict | None = None) -> None:
        self.name, self.argv, self.log, self.ready_text = name, list(argv), log, ready_text
        self.cpu, self.env = cpu, env
        self.proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> "Proc":
        self.log.parent.mkdir(parents=True, exist_ok=True)
        cpu = self.cpu
        self._log_start = self.log.stat().st_size if self.log.exists() else 0

        def pin() -> None:       # in the child, before exec: it and all its threads
            if cpu is not None:
                os.sched_setaffinity(0, {cpu})
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, preexec_fn=pin,
                                         env=self.env, cwd=str(REPO))
        return self

    def log_text(self) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(self._log_start)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def tail(self, n: int = 5) -> str:
        return "\n".join(self.log_text().strip().splitlines()[-n:])

    def wait_ready(self, timeout_s: float = 180.0, http: str | None = None) -> None:
        """Until the ready line is in the log (and ``http``/healthz answers)."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} before it "
                                   f"was ready; its log ({self.log}) ends:\n{self.tail()}")
            if self.ready_text in self.log_text():
                if http is None or get_json(http + "/healthz", 2.0) is not None:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} was not ready after {timeout_s:.0f} s; log {self.log}:"
                           f"\n{self.tail()}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 15.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout_s``; the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def kill9(self) -> None:
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def cpu_s(self) -> float | None:
        return cpu_seconds(self.pid) if self.alive() else None


def get_json(url: str, timeout_s: float = 5.0) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return json.loads(r.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


def get_text(url: str, timeout_s: float = 5.0) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return r.read().decode("utf-8", "replace")
    except (OSError, urllib.error.URLError):
        return None


def post_json(url: str, body: dict, timeout_s: float = 60.0) -> tuple[int, dict | None]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read())
        except ValueError:
            return exc.code, None
    except (OSError, ValueError):
        return 0, None


def cloud_proc(port: int, log: Path, cpu: int | None, threads: int = 1) -> Proc:
    argv = [venv_bin("edge-cloud"), "serve", "--bind", f"tcp://127.0.0.1:{port}",
            "--backend", "embedded", "--threads", str(threads)]
    return Proc("edge-cloud", argv, log, "edge-cloud ready on", cpu)


def daemon_proc(port: int, log: Path, cpu: int | None, sets: Sequence[str]) -> Proc:
    argv = [venv_bin("edge-runtime"), "serve", "--host", "127.0.0.1", "--port", str(port)]
    for s in sets:
        argv += ["--set", s]
    return Proc("edge-runtime", argv, log, "edge-runtime ready on", cpu)


def redis_proc(port: int, log: Path, cpu: int | None) -> Proc | None:
    import shutil
    exe = shutil.which("redis-server")
    if exe is None:
        return None
    argv = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    return Proc("redis-server", argv, log, "Ready to accept connections", cpu)


def parse_metrics(text: str | None) -> dict[str, float]:
    """Prometheus text -> {"name{labels}": value} (comments dropped)."""
    out: dict[str, float] = {}
    for line in (text or "").splitlines():
        if not line or line.startswith("#"):
            continue
        try:
            key, val = line.rsplit(" ", 1)
            out[key] = float(val)
        except ValueError:
            continue
    return out


def metric_delta(before: dict[str, float], after: dict[str, float], prefix: str) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0.0) for k in after if k.startswith(prefix)}

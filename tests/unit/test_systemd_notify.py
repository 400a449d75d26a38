"""sd_notify against a real unix datagram socket (path and abstract namespace)."""
from __future__ import annotations

import asyncio
import os
import socket
import uuid

import pytest

from edge_runtime import systemd


@pytest.fixture
def path_socket(tmp_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = str(tmp_path / "notify.sock")
    sock.bind(path)
    sock.settimeout(5)
    yield sock, {"NOTIFY_SOCKET": path}
    sock.close()


@pytest.fixture
def abstract_socket():
    name = f"edge-runtime-test-{uuid.uuid4().hex}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(5)
    yield sock, {"NOTIFY_SOCKET": "@" + name}
    sock.close()


def _recv(sock: socket.socket) -> str:
    return sock.recv(4096).decode("utf-8")


def test_ready_with_status_over_a_path_socket(path_socket) -> None:
    sock, env = path_socket
    assert systemd.ready("serving on 127.0.0.1:8080", env=env) is True
    assert _recv(sock) == "READY=1\nSTATUS=serving on 127.0.0.1:8080"


def test_each_helper_sends_its_assignment_over_an_abstract_socket(abstract_socket) -> None:
    sock, env = abstract_socket
    assert systemd.ready(env=env)
    assert _recv(sock) == "READY=1"
    assert systemd.watchdog_ping(env=env)
    assert _recv(sock) == "WATCHDOG=1"
    assert systemd.status("loading models", env=env)
    assert _recv(sock) == "STATUS=loading models"
    assert systemd.extend_timeout(90, env=env)
    assert _recv(sock) == "EXTEND_TIMEOUT_USEC=90000000"
    assert systemd.stopping(env=env)
    assert _recv(sock) == "STOPPING=1"


def test_reads_notify_socket_from_the_process_environment(path_socket, monkeypatch) -> None:
    sock, env = path_socket
    monkeypatch.setenv("NOTIFY_SOCKET", env["NOTIFY_SOCKET"])
    assert systemd.watchdog_ping() is True
    assert _recv(sock) == "WATCHDOG=1"


def test_not_under_systemd_is_a_quiet_no_op(monkeypatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert systemd.ready() is False
    assert systemd.notify("READY=1", env={"NOTIFY_SOCKET": ""}) is False


def test_unreachable_or_unsupported_socket_returns_false_without_raising(tmp_path, caplog) -> None:
    assert systemd.ready(env={"NOTIFY_SOCKET": str(tmp_path / "missing.sock")}) is False
    assert "sd_notify" in caplog.text
    assert systemd.ready(env={"NOTIFY_SOCKET": "vsock:2:1234"}) is False
    assert "unsupported NOTIFY_SOCKET" in caplog.text


def test_empty_state_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        systemd.notify("", env={})


@pytest.mark.parametrize("env, expected", [
    ({}, None),
    ({"WATCHDOG_USEC": "30000000"}, 30.0),
    ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 30.0),
    ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),          # meant for another pid
    ({"WATCHDOG_USEC": "0"}, None),
    ({"WATCHDOG_USEC": "soon"}, None),
    ({"WATCHDOG_USEC": "500000", "WATCHDOG_PID": "x"}, None),
])
def test_watchdog_interval(env, expected) -> None:
    assert systemd.watchdog_interval_s(env=env) == expected


async def test_watchdog_loop_pings_at_half_interval_while_healthy(path_socket) -> None:
    sock, env = path_socket
    env = {**env, "WATCHDOG_USEC": "10000000"}
    sleeps: list[float] = []
    health = iter([True, False, True])

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await systemd.watchdog_loop(lambda: next(health), env=env, sleep=fake_sleep)
    assert sleeps == [5.0, 5.0, 5.0]
    assert [_recv(sock), _recv(sock)] == ["WATCHDOG=1", "WATCHDOG=1"]   # the unhealthy turn sent none
    sock.settimeout(0.05)
    with pytest.raises(socket.timeout):
        sock.recv(4096)


async def test_watchdog_loop_returns_without_a_watchdog() -> None:
    async def never(_: float) -> None:
        raise AssertionError("should not sleep")
    await systemd.watchdog_loop(env={}, sleep=never)


def test_watchdog_beat_pings_only_without_a_liveness_problem(path_socket, caplog) -> None:
    sock, env = path_socket
    assert systemd.watchdog_beat(None, env=env) is True
    assert _recv(sock) == "WATCHDOG=1"
    assert systemd.watchdog_beat("a local LLM generation has run for 400 s", env=env) is False
    assert "withholding the systemd watchdog ping" in caplog.text and "400 s" in caplog.text
    sock.settimeout(0.05)
    with pytest.raises(socket.timeout):
        sock.recv(4096)


async def test_extending_start_extends_every_step_until_its_ceiling(path_socket) -> None:
    from edge_runtime.clock import FakeClock
    sock, env = path_socket
    clock = FakeClock()
    steps: list[float] = []
    done = asyncio.Event()

    async def fake_sleep(seconds: float) -> None:    # time passes only through the helper
        steps.append(seconds)
        clock.advance(seconds)
        if clock.monotonic() >= 1000.0 + 100.0:
            done.set()
        await asyncio.sleep(0)

    async with systemd.extending_start(100.0, step_s=30.0, status_text="starting: models",
                                       env=env, clock=clock, sleep=fake_sleep):
        await asyncio.wait_for(done.wait(), 5)     # a start that outlasts the ceiling
        await asyncio.sleep(0)
    got = []
    sock.settimeout(0.2)
    with pytest.raises(socket.timeout):
        while True:
            got.append(_recv(sock))
    assert got[0] == "STATUS=starting: models"
    # 3 steps' grace each time, never past the ceiling (100 s from entry), then it stops
    assert got[1:] == ["EXTEND_TIMEOUT_USEC=90000000", "EXTEND_TIMEOUT_USEC=70000000",
                       "EXTEND_TIMEOUT_USEC=40000000", "EXTEND_TIMEOUT_USEC=10000000"]
    assert steps == [30.0, 30.0, 30.0, 10.0]


async def test_extending_start_stops_when_the_start_is_done(path_socket) -> None:
    sock, env = path_socket
    async with systemd.extending_start(600.0, step_s=0.01, env=env):
        await asyncio.sleep(0.05)
    sock.settimeout(0.2)
    got = []
    with pytest.raises(socket.timeout):
        while True:
            got.append(_recv(sock))
    assert got[0].startswith("STATUS=") and len(got) >= 2
    assert all(m.startswith("EXTEND_TIMEOUT_USEC=") for m in got[1:])
    n = len(got)
    await asyncio.sleep(0.05)                     # the extender task is gone with the block
    with pytest.raises(socket.timeout):
        _recv(sock)
    assert n == len(got)


async def test_extending_start_is_a_no_op_outside_systemd_or_when_off(path_socket) -> None:
    async def never(_: float) -> None:
        raise AssertionError("should not sleep")
    async with systemd.extending_start(600.0, env={}, sleep=never):
        pass
    sock, env = path_socket
    async with systemd.extending_start(0.0, env=env, sleep=never):   # device.start_timeout_s 0
        pass
    sock.settimeout(0.05)
    with pytest.raises(socket.timeout):
        sock.recv(4096)

"""systemd readiness and watchdog (the sd_notify protocol), without libsystemd.

systemd passes a unix datagram socket in ``$NOTIFY_SOCKET`` (a path, or an
abstract-namespace name written with a leading ``@``); the service sends
newline-separated ``KEY=VALUE`` assignments to it: ``READY=1`` once it serves,
``WATCHDOG=1`` at least every ``$WATCHDOG_USEC`` microseconds, ``STOPPING=1``
when shutting down, ``STATUS=...`` free text shown by ``systemctl status``,
``EXTEND_TIMEOUT_USEC=...`` to ask for more start-up time (model loading).

Outside systemd (no ``$NOTIFY_SOCKET``) every call is a no-op that returns
False, so the daemon calls these helpers unconditionally. A failed send is
logged and returns False; it never raises into the daemon.

Unit file side: ``Type=notify``, ``WatchdogSec=30``, ``TimeoutStartSec=300`` (see
jetson/edge-runtime.service); :func:`extending_start` keeps a slow first start (TensorRT
engine builds) from being killed at ``TimeoutStartSec``, up to a ceiling of its own.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from .clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)


def _address(env: Mapping[str, str]) -> str | None:
    addr = env.get("NOTIFY_SOCKET", "")
    if not addr:
        return None
    if addr.startswith("@"):
        return "\0" + addr[1:]
    if addr.startswith("/"):
        return addr
    log.warning("unsupported NOTIFY_SOCKET %r (only unix paths and @abstract names); "
                "systemd will not see readiness", addr)
    return None


def notify(state: str, *, env: Mapping[str, str] | None = None) -> bool:
    """Send ``state`` (e.g. ``"READY=1\\nSTATUS=serving"``) to systemd.

    Returns True when the datagram was sent, False when not under systemd
    (no ``$NOTIFY_SOCKET``) or when sending failed (logged at WARNING).
    """
    if not state:
        raise ValueError("sd_notify state must not be empty")
    addr = _address(os.environ if env is None else env)
    if addr is None:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(state.encode("utf-8"), addr)
    except OSError as exc:
        log.warning("sd_notify %r to %r failed: %s", state.split("\n", 1)[0],
                    addr.replace("\0", "@"), exc)
        return False
    return True


def ready(status: str | None = None, *, env: Mapping[str, str] | None = None) -> bool:
    """Tell systemd the service is up (``READY=1``), with an optional status line."""
    return notify("READY=1" + (f"\nSTATUS={status}" if status else ""), env=env)


def stopping(status: str | None = None, *, env: Mapping[str, str] | None = None) -> bool:
    """Tell systemd the service is shutting down (``STOPPING=1``)."""
    return notify("STOPPING=1" + (f"\nSTATUS={status}" if status else ""), env=env)


def status(text: str, *, env: Mapping[str, str] | None = None) -> bool:
    """Set the one-line status ``systemctl status`` shows."""
    return notify(f"STATUS={text}", env=env)


def watchdog_ping(*, env: Mapping[str, str] | None = None) -> bool:
    """Reset the watchdog timer (``WATCHDOG=1``)."""
    return notify("WATCHDOG=1", env=env)


def extend_timeout(seconds: float, *, env: Mapping[str, str] | None = None) -> bool:
    """Ask for ``seconds`` more before the start (or stop) times out (``EXTEND_TIMEOUT_USEC``)."""
    return notify(f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}", env=env)


def under_systemd(*, env: Mapping[str, str] | None = None) -> bool:
    """True when ``$NOTIFY_SOCKET`` names a socket this module can send to."""
    return _address(os.environ if env is None else env) is not None


async def _extend_loop(limit_s: float, step_s: float, status_text: str,
                       env: Mapping[str, str] | None, clock: Clock,
                       sleep: Callable[[float], Awaitable[object]]) -> None:
    start = clock.monotonic()
    status(status_text, env=env)
    while True:
        left = limit_s - (clock.monotonic() - start)
        if left <= 0:
            log.warning("start-up still running after %.0f s (device.start_timeout_s); no "
                        "longer extending the systemd start timeout", limit_s)
            return
        # each message allows 3 steps, so one late wake-up does not end the start
        extend_timeout(min(3 * step_s, left), env=env)
        await sleep(min(step_s, left))


@contextlib.asynccontextmanager
async def extending_start(limit_s: float, *, step_s: float = 20.0,
                          status_text: str = "starting: loading models",
                          env: Mapping[str, str] | None = None, clock: Clock = SYSTEM_CLOCK,
                          sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
                          ) -> AsyncIterator[None]:
    """While the body runs (models loading off the event loop), send
    ``EXTEND_TIMEOUT_USEC`` every ``step_s``, so systemd waits past ``TimeoutStartSec``
    for as long as the start makes progress, but never past ``limit_s`` from entry: a
    start that hangs is still killed (and restarted) then. A no-op outside systemd."""
    if limit_s <= 0 or not under_systemd(env=env):
        yield
        return
    task = asyncio.create_task(_extend_loop(limit_s, step_s, status_text, env, clock, sleep))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def watchdog_beat(problem: str | None, *, env: Mapping[str, str] | None = None) -> bool:
    """One watchdog turn: ping when the liveness check found no ``problem``, else withhold
    the ping (logged), so systemd restarts the daemon after ``WatchdogSec`` of failures.
    Returns True when a ping was sent."""
    if problem is not None:
        log.warning("liveness check failed (%s); withholding the systemd watchdog ping",
                    problem)
        return False
    return watchdog_ping(env=env)


def watchdog_interval_s(*, env: Mapping[str, str] | None = None) -> float | None:
    """The watchdog timeout in seconds, or None when no watchdog applies to this process.

    Read from ``$WATCHDOG_USEC``; ignored when ``$WATCHDOG_PID`` names another
    process. Ping at half this interval.
    """
    env = os.environ if env is None else env
    usec = env.get("WATCHDOG_USEC", "")
    if not usec:
        return None
    pid = env.get("WATCHDOG_PID", "")
    if pid:
        try:
            if int(pid) != os.getpid():
                return None
        except ValueError:
            log.warning("ignoring bad WATCHDOG_PID %r", pid)
            return None
    try:
        value = int(usec)
    except ValueError:
        log.warning("ignoring bad WATCHDOG_USEC %r", usec)
        return None
    return value / 1_000_000 if value > 0 else None


async def watchdog_loop(is_healthy: Callable[[], bool] = lambda: True, *,
                        env: Mapping[str, str] | None = None,
                        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
    """Ping the watchdog every half interval while ``is_healthy()``; returns at once without one.

    Running on the event loop, a ping proves the loop is not blocked; when
    ``is_healthy()`` is False the ping is skipped, so systemd restarts a stuck
    daemon after ``WatchdogSec``. Cancel the task to stop it.
    """
    interval = watchdog_interval_s(env=env)
    if interval is None:
        return
    log.info("systemd watchdog every %.1f s (timeout %.1f s)", interval / 2, interval)
    while True:
        if is_healthy():
            watchdog_ping(env=env)
        else:
            log.warning("health check failed; withholding the systemd watchdog ping")
        await sleep(interval / 2)

"""Keeping the lists read from Home Assistant fresh (``home.backend = "home_assistant"``).

The areas and entity names feed the understanding and the recognizer's bias, so a daemon
that started while Home Assistant was down (empty lists), or one whose home changed since
(an entity renamed, removed, added), must read them again. ``HomeRefresher``:

- after a failed read, tries again in the background with the one backoff
  (``breaker.CircuitBreaker``: ``home.retry_s``, doubling while it stays down, at most
  ``home.refresh_s``);
- after a good read, reads again every ``home.refresh_s`` (0 = never);
- ``request()``: soon, when a request named an entity Home Assistant no longer has or one
  the lists lack (at most once per ``home.retry_s``).

Each good read updates the shared ``HAHome`` in place (the skill sees it at once) and
calls every listener with it (``on_change``: the home understanding's lists, the ASR
prompt). ``step()`` does what is due now and returns the seconds until the next thing is
due, so tests drive it with a ``FakeClock``; ``start()`` runs it in a daemon thread.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..breaker import CircuitBreaker
from ..clock import SYSTEM_CLOCK, Clock
from .ha_client import HAHome, HomeAssistantClient, HomeAssistantError

log = logging.getLogger(__name__)

Listener = Callable[[HAHome], None]


class HomeRefresher:
    def __init__(self, client: HomeAssistantClient, home: HAHome, *, refresh_s: float = 600.0,
                 retry_s: float = 5.0, clock: Clock = SYSTEM_CLOCK) -> None:
        self.client, self.home, self.clock = client, home, clock
        self.refresh_s, self.retry_s = refresh_s, max(0.1, retry_s)
        self._breaker = CircuitBreaker("home assistant lists", failure_threshold=1,
                                       reset_timeout_s=self.retry_s,
                                       max_reset_timeout_s=max(self.retry_s, refresh_s or 300.0),
                                       clock=clock, logger=None)
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()          # one read at a time
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        now = clock.monotonic()
        self._read_at = now if home.by_name else None     # last good read
        self._asked_at: float | None = None               # a pending request()
        self._last_request = -1e18
        self.reads = self.failures = 0

    def on_change(self, listener: Listener) -> None:
        """Call ``listener(home)`` after every good read."""
        self._listeners.append(listener)

    @property
    def fresh(self) -> bool:
        """Lists were read since start (Home Assistant answered once)."""
        return self._read_at is not None

    def request(self) -> None:
        """Read again soon (a name the lists do not know, or one Home Assistant lost)."""
        now = self.clock.monotonic()
        if now - self._last_request < self.retry_s:
            return
        self._last_request = now
        self._asked_at = now
        self._wake.set()

    def _due_in(self) -> float:
        now = self.clock.monotonic()
        if self._read_at is None or self._breaker.state != "closed":    # down: back off
            return self._breaker.retry_in_s()
        if self._asked_at is not None:
            return 0.0
        if self.refresh_s <= 0:
            return float("inf")
        return max(0.0, self._read_at + self.refresh_s - now)

    def refresh(self) -> bool:
        """Read the lists now; True when Home Assistant answered (listeners called)."""
        with self._lock:
            self._asked_at = None
            try:
                fresh = HAHome.read(self.client)
            except HomeAssistantError as exc:
                self.failures += 1
                self._breaker.failure()
                log.warning("Home Assistant lists not read (%s): next try in %.0f s",
                            exc.message, self._breaker.retry_in_s())
                return False
        self.publish(fresh)
        return True

    def publish(self, fresh: HAHome) -> None:
        """Take lists just read (here, or by the skill on a request): update the shared
        home in place and tell the listeners."""
        with self._lock:
            self._breaker.success()
            self.reads += 1
            self._read_at = self.clock.monotonic()
            self._asked_at = None
            changed = (fresh.areas, fresh.by_name) != (self.home.areas, self.home.by_name)
            self.home.areas, self.home.by_name = fresh.areas, fresh.by_name
        if changed:
            log.info("Home Assistant lists read: %d areas, %d entities", len(fresh.areas),
                     len(fresh.by_name))
        for listener in self._listeners:
            try:
                listener(self.home)
            except Exception:                   # a listener must not stop the refreshes
                log.exception("a Home Assistant list listener failed")

    def step(self) -> float:
        """Do what is due now; seconds until the next thing is due."""
        if self._due_in() <= 0:
            self.refresh()
        return self._due_in()

    # -- the background thread ---------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ha-lists", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            wait = self.step()
            self._wake.wait(timeout=min(max(wait, 0.05), 60.0))
            self._wake.clear()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None

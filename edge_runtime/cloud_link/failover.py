"""Several gateways behind one ``CloudClient``: spread load, skip sick gateways, retry elsewhere.

Each endpoint gets its own :class:`ZmqCloudClient` (its own socket, heartbeats and libzmq
reconnect with exponential backoff from 100 ms to 2 s) and its own
:class:`~.breaker.CircuitBreaker`. ``stream`` picks the available gateway with the lowest
predicted first-piece time (:meth:`FailoverCloudClient.predict_ttft_s`; then the fewest
requests in flight, then round robin) and, when it fails **before the first
piece** with a retryable error (down, refused, overloaded, no first token in time, backend
error), tries another gateway inside the same deadline. Once a piece has been yielded, a
failure is raised to the caller (who voids the pieces and answers locally): pieces of two
different answers are never mixed, and an abandoned attempt's late pieces are dropped by
its client (each attempt has its own request id and is cancelled at the gateway), so a
request never gets two answers.

Prediction, per usable gateway, for a request sent now::

    ttft = rtt + prefill + queue_wait
    queue_wait = max(0, backlog - capacity + 1) / capacity * service
    backlog = max(reported queued + active, this device's requests in flight there)

from the gateway's heartbeat load (:class:`~.zmq_client.GatewayLoad`; a measure it does
not know yet is replaced by this client's own observation). Without a usable report (an
older gateway, a stale or nonsense one) it is ``observed first piece + queue_wait`` with
capacity 1 and ``service`` = the observed whole-answer time: EWMAs of what this client saw
from that gateway (starting at ``FIRST_PIECE_PRIOR_S`` and ``ANSWER_PRIOR_S``). The device's
own count matters because many requests can leave between two heartbeats.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
from dataclasses import dataclass, field
from typing import Any
from collections.abc import AsyncGenerator, Sequence

from ..clock import SYSTEM_CLOCK, Clock
from ..config import CloudConfig
from ..errors import CloudUnavailableError, ConfigError
from ..types import GenerationParams, Message
from ..breaker import OPEN, CircuitBreaker
from .base import GatewayLink
from .zmq_client import CONGESTED, ZmqCloudClient

log = logging.getLogger(__name__)


FIRST_PIECE_PRIOR_S = 0.3     # observed first-piece time before any observation
ANSWER_PRIOR_S = 1.0          # observed whole-answer time before any observation
OBSERVED_ALPHA = 0.2          # weight of the newest observation in those EWMAs
TIE_S = 0.005                 # predictions in the same 5 ms bucket tie (then: fewest in flight)


class Ewma:
    """An exponentially weighted moving average that starts at ``start``."""

    def __init__(self, start: float, alpha: float = OBSERVED_ALPHA) -> None:
        self.value = start
        self._alpha = alpha

    def add(self, sample: float) -> None:
        self.value += self._alpha * (sample - self.value)


@dataclass
class _Member:
    endpoint: str
    client: GatewayLink           # ZmqCloudClient in production
    breaker: CircuitBreaker
    in_flight: int = 0
    first_piece_s: Ewma = field(default_factory=lambda: Ewma(FIRST_PIECE_PRIOR_S))
    answer_s: Ewma = field(default_factory=lambda: Ewma(ANSWER_PRIOR_S))

    @property
    def usable(self) -> bool:
        return self.client.available and self.breaker.state != OPEN

    def predict(self, pending: int = 0) -> tuple[float, str]:
        """(seconds to the first piece of a request sent here now, what it rests on);
        ``pending``: requests already decided for the cloud but not sent yet."""
        load = self.client.fresh_load()
        in_flight = self.in_flight + max(0, pending)
        if load is None or load.capacity <= 0:
            wait = queue_wait_s(in_flight, 1, self.answer_s.value)
            return (self.first_piece_s.value + wait,
                    f"{self.endpoint}: no load report, {in_flight} in flight from here, "
                    f"first piece ~{self.first_piece_s.value * 1e3:.0f} ms observed")
        rtt_ms = self.client.rtt_ms
        backlog = max(load.queued + load.active, in_flight)
        prefill = load.prefill_s if load.prefill_s > 0 else self.first_piece_s.value
        service = load.service_s if load.service_s > 0 else self.answer_s.value
        ttft = ((rtt_ms or 0.0) / 1000.0 + prefill
                + queue_wait_s(backlog, load.capacity, service))
        mine = (f", {in_flight} in flight from here"
                if in_flight > load.queued + load.active else "")
        rtt = f"{rtt_ms:.1f} ms" if rtt_ms is not None else "unknown"
        return ttft, (f"{self.endpoint}: {load.queued} queued, {load.active}/{load.capacity} "
                      f"busy{mine}, rtt {rtt}")


def queue_wait_s(backlog: int, capacity: int, service_s: float) -> float:
    """Expected wait for a worker with ``backlog`` requests ahead (queued or running) on
    ``capacity`` workers that each finish one every ``service_s``: none while a worker is
    free, else one ``service_s / capacity`` per request ahead of us beyond the workers."""
    capacity = max(1, capacity)
    return max(0, backlog - capacity + 1) / capacity * service_s


class FailoverCloudClient:
    """``CloudClient`` over several gateways (see module doc).

    ``members``: ``(endpoint, client)`` pairs; ``max_attempts``: gateways tried per request
    (the same one again only after all were tried, after ``retry_backoff_s`` seconds,
    doubled per round); ``breaker_*``: see :class:`CircuitBreaker`.
    """

    def __init__(self, members: Sequence[tuple[str, GatewayLink]], clock: Clock = SYSTEM_CLOCK, *,
                 max_attempts: int = 3, retry_backoff_s: float = 0.05,
                 breaker_failures: int = 3, breaker_reset_s: float = 2.0) -> None:
        if not members:
            raise ConfigError("no cloud endpoints configured",
                              hint="set cloud.endpoint or cloud.endpoints")
        self._clock = clock
        self._members = [_Member(ep, client, CircuitBreaker(
            ep, failure_threshold=breaker_failures, reset_timeout_s=breaker_reset_s,
            clock=clock)) for ep, client in members]
        self._max_attempts = max(1, max_attempts)
        self._backoff_s = max(0.0, retry_backoff_s)
        self._next = 0
        self.retries = 0            # attempts beyond the first (metrics, benchmarks)

    @classmethod
    def from_config(cls, cfg: CloudConfig, endpoints: Sequence[str] = (),
                    clock: Clock = SYSTEM_CLOCK, *, model: str = "",
                    stall_timeout_ms: float | None = None, **kwargs: Any) -> FailoverCloudClient:
        """One :class:`ZmqCloudClient` per endpoint (``endpoints`` empty = ``cfg.endpoint``);
        every other setting (keys, timeouts) comes from ``cfg``."""
        eps = list(dict.fromkeys(e.strip() for e in (endpoints or [cfg.endpoint]) if e.strip()))
        return cls([(ep, ZmqCloudClient(dataclasses.replace(cfg, endpoint=ep), clock,
                                        model=model, stall_timeout_ms=stall_timeout_ms))
                    for ep in eps], clock, **kwargs)

    # -- state -------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        """"up" when any gateway is up and usable, "down" when none is usable, else "unknown"."""
        if any(m.client.state == "up" and m.usable for m in self._members):
            return "up"
        if not any(m.usable for m in self._members):
            return "down"
        return "unknown"

    @property
    def available(self) -> bool:
        return any(m.usable for m in self._members)

    def in_flight(self) -> dict[str, int]:
        """Requests in flight from here, per gateway endpoint (status, drills)."""
        return {m.endpoint: m.in_flight for m in self._members}

    @property
    def down_reason(self) -> str:
        return "; ".join(f"{m.endpoint}: " + (f"circuit open ({m.breaker.retry_in_s():.1f} s left)"
                                              if m.breaker.state == OPEN else
                                              m.client.down_reason)
                         for m in self._members)

    @property
    def rtt_ms(self) -> float | None:
        """The best last heartbeat round trip among gateways that are up (None: none known)."""
        rtts = [m.client.rtt_ms for m in self._members
                if m.client.state == "up" and m.client.rtt_ms is not None]
        return min(rtts) if rtts else None

    def predict_ttft_s(self, pending: int = 0) -> tuple[float, str]:
        """(predicted seconds to the first cloud piece of a request sent now, a short reason
        for the answer), from the best gateway a request could go to (see the module doc),
        e.g. ``(0.085, "cloud ttft ~85 ms (tcp://h:5555: 3 queued, 4/8 busy, rtt 0.3 ms)")``.
        ``(inf, "no gateway available (…)")`` when none is usable. ``pending``: requests
        this device already decided to send to the cloud that no gateway has seen yet."""
        best: tuple[float, str] | None = None
        for m in self._members:
            if m.usable and m.breaker.would_allow():
                ttft, detail = m.predict(pending)
                if best is None or ttft < best[0]:
                    best = (ttft, detail)
        if best is None:
            return math.inf, f"no gateway available ({self.down_reason})"
        return best[0], f"cloud ttft ~{best[0] * 1e3:.0f} ms ({best[1]})"

    def endpoint_states(self) -> dict[str, dict[str, Any]]:
        """Per endpoint: link state, breaker state, requests in flight (for metrics/doctor)."""
        return {m.endpoint: {"link": m.client.state, "breaker": m.breaker.state,
                             "in_flight": m.in_flight} for m in self._members}

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Start every member concurrently (each waits at most ``cloud.connect_timeout_ms``)."""
        await asyncio.gather(*(m.client.start() for m in self._members))

    async def close(self) -> None:
        await asyncio.gather(*(m.client.close() for m in self._members), return_exceptions=True)

    async def __aenter__(self) -> FailoverCloudClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- requests ----------------------------------------------------------------------------

    def _pick(self, tried: set[int]) -> tuple[int, _Member] | None:
        """The usable, untried member with the lowest predicted first-piece time (in
        ``TIE_S`` buckets; then the fewest requests in flight, then round robin); reserves
        a breaker probe slot when it is half-open."""
        n = len(self._members)

        def rank(i: int) -> tuple[int, int, int]:
            m = self._members[i]
            return (math.floor(m.predict()[0] / TIE_S), m.in_flight, (i - self._next) % n)

        order = sorted((i for i in range(n) if i not in tried and self._members[i].usable),
                       key=rank)
        for i in order:
            if self._members[i].breaker.allow():
                self._next = (i + 1) % n
                return i, self._members[i]
        return None

    async def stream(self, messages: Sequence[Message], params: GenerationParams,
                     deadline_s: float) -> AsyncGenerator[str, None]:
        """Yield one answer's pieces from one gateway. Raises ``CloudUnavailableError`` when no
        gateway answered before the deadline, or when the answering one fails mid-stream."""
        deadline_m = self._clock.monotonic() + deadline_s
        tried: set[int] = set()
        errors: list[str] = []
        backoff = self._backoff_s
        for attempt in range(self._max_attempts):
            remaining = deadline_m - self._clock.monotonic()
            if remaining <= 0:
                errors.append("deadline reached")
                break
            picked = self._pick(tried)
            if picked is None and tried and errors:      # every gateway tried: again, later
                await asyncio.sleep(min(backoff, remaining))
                backoff *= 2
                tried.clear()
                remaining = deadline_m - self._clock.monotonic()
                picked = self._pick(tried) if remaining > 0 else None
            if picked is None:
                if not errors:
                    errors.append("no gateway available (" + self.down_reason + ")")
                break
            index, member = picked
            tried.add(index)
            if attempt:
                self.retries += 1
                log.info("retrying on %s after: %s", member.endpoint, errors[-1])
            yielded = False
            member.in_flight += 1
            outcome = "release"
            sent_m = self._clock.monotonic()
            try:
                # aclosing: when our caller stops early, the member's stream closes now (and
                # sends Cancel to its gateway), not whenever the generator is collected
                async with contextlib.aclosing(
                        member.client.stream(messages, params, remaining)) as pieces:
                    async for piece in pieces:
                        if not yielded:
                            member.first_piece_s.add(self._clock.monotonic() - sent_m)
                        yielded = True
                        yield piece
                member.answer_s.add(self._clock.monotonic() - sent_m)
                outcome = "success"
                return
            except CloudUnavailableError as exc:
                # our own full send queue says nothing about the gateway's health
                outcome = "failure" if exc.retryable and exc.code != CONGESTED else "release"
                if yielded or not exc.retryable:
                    raise
                errors.append(f"{member.endpoint}: {exc.message}")
            finally:
                member.in_flight -= 1
                getattr(member.breaker, outcome)()
        raise CloudUnavailableError("no gateway answered: " + "; ".join(errors),
                                    hint="check the gateways (`edge-cloud serve`) and "
                                         "cloud.endpoints")

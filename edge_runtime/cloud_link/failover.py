"""Several gateways behind one ``CloudClient``: spread load, skip sick gateways, retry elsewhere.

Each endpoint gets its own :class:`ZmqCloudClient` (its own socket, heartbeats and libzmq
reconnect with exponential backoff from 100 ms to 2 s) and its own
:class:`~.breaker.CircuitBreaker`. ``stream`` picks the available gateway with the fewest
requests in flight (round robin among equals) and, when it fails **before the first
piece** with a retryable error (down, refused, overloaded, no first token in time, backend
error), tries another gateway inside the same deadline. Once a piece has been yielded, a
failure is raised to the caller (who voids the pieces and answers locally): pieces of two
different answers are never mixed, and an abandoned attempt's late pieces are dropped by
its client (each attempt has its own request id and is cancelled at the gateway), so a
request never gets two answers.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, AsyncIterator, Sequence

from ..clock import SYSTEM_CLOCK, Clock
from ..config import CloudConfig
from ..errors import CloudUnavailableError, ConfigError
from ..types import GenerationParams, Message
from .breaker import OPEN, CircuitBreaker
from .zmq_client import CONGESTED, ZmqCloudClient

log = logging.getLogger(__name__)


@dataclass
class _Member:
    endpoint: str
    client: Any                   # CloudClient (ZmqCloudClient in production)
    breaker: CircuitBreaker
    in_flight: int = 0

    @property
    def usable(self) -> bool:
        return self.client.available and self.breaker.state != OPEN


class FailoverCloudClient:
    """``CloudClient`` over several gateways (see module doc).

    ``members``: ``(endpoint, client)`` pairs; ``max_attempts``: gateways tried per request
    (the same one again only after all were tried, after ``retry_backoff_s`` seconds,
    doubled per round); ``breaker_*``: see :class:`CircuitBreaker`.
    """

    def __init__(self, members: Sequence[tuple[str, Any]], clock: Clock = SYSTEM_CLOCK, *,
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
                    stall_timeout_ms: float | None = None, **kwargs: Any) -> "FailoverCloudClient":
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

    @property
    def down_reason(self) -> str:
        return "; ".join(f"{m.endpoint}: " + (f"circuit open ({m.breaker.retry_in_s():.1f} s left)"
                                              if m.breaker.state == OPEN else
                                              getattr(m.client, "down_reason", m.client.state))
                         for m in self._members)

    @property
    def rtt_ms(self) -> float | None:
        """The best last heartbeat round trip among gateways that are up (None: none known)."""
        rtts = [m.client.rtt_ms for m in self._members
                if m.client.state == "up" and getattr(m.client, "rtt_ms", None) is not None]
        return min(rtts) if rtts else None

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

    async def __aenter__(self) -> "FailoverCloudClient":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- requests ----------------------------------------------------------------------------

    def _pick(self, tried: set[int]) -> tuple[int, _Member] | None:
        """The usable, untried member with the fewest requests in flight; reserves a breaker
        probe slot when it is half-open."""
        n = len(self._members)
        order = sorted((i for i in range(n) if i not in tried and self._members[i].usable),
                       key=lambda i: (self._members[i].in_flight, (i - self._next) % n))
        for i in order:
            if self._members[i].breaker.allow():
                self._next = (i + 1) % n
                return i, self._members[i]
        return None

    async def stream(self, messages: Sequence[Message], params: GenerationParams,
                     deadline_s: float) -> AsyncIterator[str]:
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
            try:
                # aclosing: when our caller stops early, the member's stream closes now (and
                # sends Cancel to its gateway), not whenever the generator is collected
                async with contextlib.aclosing(
                        member.client.stream(messages, params, remaining)) as pieces:
                    async for piece in pieces:
                        yielded = True
                        yield piece
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

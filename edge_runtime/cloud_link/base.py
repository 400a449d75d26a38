"""Cloud link: the device side of the ZeroMQ connection to edge-cloud."""
from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Protocol

from ..types import GenerationParams, Message
from .gateway_load import GatewayLoad


class CloudClient(Protocol):
    @property
    def state(self) -> str:
        """"up", "down" or "unknown" (no request or heartbeat yet)."""

    @property
    def available(self) -> bool:
        """False when the link is known to be down (the scheduler then stays local)."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def stream(self, messages: Sequence[Message], params: GenerationParams,
               deadline_s: float) -> AsyncGenerator[str, None]:
        """Stream text pieces from the cloud. Raises ``CloudUnavailableError`` (before or
        during the stream) when the peer is absent, slow past ``deadline_s`` (seconds from
        now) or answers with an error. Never yields pieces of two different answers."""


class GatewayLink(CloudClient, Protocol):
    """One gateway's client as ``FailoverCloudClient`` reads it (``ZmqCloudClient``)."""

    rtt_ms: float | None               # last heartbeat round trip; None: not measured yet

    @property
    def down_reason(self) -> str:
        """Why the link is (or was last) down; "" when it never was."""

    def fresh_load(self) -> GatewayLoad | None:
        """The gateway's recent load report; None when stale or not reported."""

"""Cloud link: the device side of the ZeroMQ connection to edge-cloud."""
from __future__ import annotations

from typing import AsyncIterator, Protocol, Sequence

from ..types import GenerationParams, Message


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
               deadline_s: float) -> AsyncIterator[str]:
        """Stream text pieces from the cloud. Raises ``CloudUnavailableError`` (before or
        during the stream) when the peer is absent, slow past ``deadline_s`` (seconds from
        now) or answers with an error. Never yields pieces of two different answers."""

"""The places an LLM request can be answered: one interface, three implementations.

- :class:`LocalResponder`: the local model, in the slot the scheduler reserved;
- :class:`CloudResponder`: the cloud reasoner; a cloud that fails before or during its
  answer is abandoned (late chunks dropped) and the request is answered locally, once;
- :class:`HedgedResponder`: the cloud, raced by the local model once the budget is spent
  and the cloud is late by its own standard (first to answer wins, the other is cancelled),
  provided the local queue can take one more without breaking its bound.

Each takes a :class:`Job` and returns an :class:`Answered`; the :class:`~.router.Router`
picks one per request from the scheduler's :class:`~.scheduler.Plan`.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Protocol
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence

from ..clock import SYSTEM_CLOCK, Clock
from ..cloud_link.hedge import hedged_answer
from ..llm.prompt import Prompt
from ..types import CancelToken, Device, GenerationParams, Message, Route
from .local_queue import RESERVED, LocalSlot
from .scheduler import Plan, Scheduler


class Sink(Protocol):
    def piece(self, text: str) -> None: ...

    def reset(self) -> None: ...


@dataclass
class Job:
    """One LLM request: what to answer and where the pieces go. ``prompt`` was templated
    and tokenized once: the scheduler reads its ``tokens``, the local model decodes from it
    and the cloud gets its messages."""

    prompt: Prompt
    params: GenerationParams
    cancel: CancelToken
    sink: Sink
    t0: float                       # clock.monotonic() when the request arrived

    @property
    def messages(self) -> Sequence[Message]:
        return self.prompt.messages

    @property
    def prompt_tokens(self) -> int:
        return self.prompt.tokens


@dataclass(frozen=True)
class Answered:
    answer: str
    route: Route                    # "local" or "cloud"
    device: Device
    reason: str
    code: str                       # decision code for metrics (may differ from the plan's)
    first_piece_m: float | None     # clock.monotonic() of the first piece (None: empty)
    predicted_ttft_s: float = float("inf")   # the scheduler's local forecast for it


class Responder(Protocol):
    async def answer(self, job: Job, plan: Plan) -> Answered: ...


class LocalModel(Protocol):
    """The async adapter of the local LLM (edge_runtime.llm.adapter.AsyncLlm)."""

    @property
    def device(self) -> Device: ...

    def stream(self, messages: Sequence[Message], params: GenerationParams,
               cancel: CancelToken, slot: Any = None) -> AsyncGenerator[str, None]: ...


class CloudStreams(Protocol):
    def stream(self, messages: Sequence[Message], params: GenerationParams,
               deadline_s: float) -> AsyncGenerator[str, None]: ...


def _release_unstarted(slots: list[LocalSlot]) -> None:
    """A slot whose generation never started is freed here (a started one frees itself)."""
    for slot in slots:
        if slot.state == RESERVED:
            slot.release()


class LocalResponder:
    def __init__(self, llm: LocalModel, clock: Clock = SYSTEM_CLOCK) -> None:
        self.llm = llm
        self.clock = clock

    async def answer(self, job: Job, plan: Plan) -> Answered:
        pieces: list[str] = []
        first_m: float | None = None
        slots = [plan.slot] if plan.slot is not None else []
        try:
            async with contextlib.aclosing(self.llm.stream(job.prompt, job.params, job.cancel,
                                                           plan.slot)) as stream:
                async for piece in stream:
                    if first_m is None:
                        first_m = self.clock.monotonic()
                    pieces.append(piece)
                    job.sink.piece(piece)
        finally:
            _release_unstarted(slots)
        d = plan.decision
        return Answered("".join(pieces).strip(), "local", self.llm.device, d.reason, d.code,
                        first_m, d.predicted_ttft_s)


class CloudResponder:
    """The cloud, with the local model as the fallback (``hedge``: also as a racer)."""

    def __init__(self, cloud: CloudStreams, local: LocalModel | None, scheduler: Scheduler,
                 *, deadline_s: float, hedge: bool, clock: Clock = SYSTEM_CLOCK) -> None:
        self.cloud = cloud
        self.local = local
        self.scheduler = scheduler
        self.deadline_s = deadline_s
        self.hedge = hedge
        self.clock = clock

    async def answer(self, job: Job, plan: Plan) -> Answered:
        d = plan.decision
        slots: list[LocalSlot] = []
        hedge_slot: list[LocalSlot] = []

        def can_hedge() -> bool:
            slot = self.scheduler.try_reserve_local(job.prompt_tokens, d.budget_s)
            if slot is not None:
                slots.append(slot)
                hedge_slot.append(slot)
            return slot is not None

        local_factory: Callable[[CancelToken], AsyncIterator[str]] | None = None
        if self.local is not None:
            local = self.local

            def local_factory(token: CancelToken) -> AsyncIterator[str]:
                # the hedge's slot, or (the cloud failed) a place past the queue's bound:
                # the request was accepted and is answered once
                slot = hedge_slot.pop() if hedge_slot else \
                    self.scheduler.local.reserve(job.prompt_tokens, forced=True)
                if slot not in slots:
                    slots.append(slot)
                return local.stream(job.prompt, job.params, token, slot)

        async def cloud_stream() -> AsyncIterator[str]:
            stream = self.cloud.stream(job.messages, job.params, self.deadline_s)
            self.scheduler.cloud_sent(plan)   # the client counts it from its first step on
            async with contextlib.aclosing(stream) as pieces:
                async for piece in pieces:
                    yield piece

        elapsed = self.clock.monotonic() - job.t0
        hedge_after = self.scheduler.hedge_after_s(d, elapsed) if self.hedge else self.deadline_s
        t_sent = self.clock.monotonic()
        try:
            out = await hedged_answer(
                cloud_stream, local_factory, hedge_after_s=hedge_after, sink=job.sink,
                clock=self.clock, cancel=job.cancel,
                can_hedge=can_hedge if self.hedge else None)
        finally:
            self.scheduler.cloud_sent(plan)
            _release_unstarted(slots)
        if out.winner == "cloud" and out.first_piece_m is not None:
            self.scheduler.observe_cloud_ttft(out.first_piece_m - t_sent)
        code = d.code
        if out.winner == "local":
            code = "hedge_local_won" if out.hedged else "cloud_failed"
        if out.winner == "cloud":
            device: Device = "cloud"
        else:
            assert self.local is not None      # the local model answered, so there is one
            device = self.local.device
        return Answered(out.answer, out.winner, device, f"{d.reason}; {out.reason}", code,
                        out.first_piece_m, d.predicted_ttft_s)


class HedgedResponder(CloudResponder):
    """:class:`CloudResponder` that races the local model against a late cloud."""

    def __init__(self, cloud: CloudStreams, local: LocalModel | None, scheduler: Scheduler,
                 *, deadline_s: float, clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(cloud, local, scheduler, deadline_s=deadline_s, hedge=True,
                         clock=clock)

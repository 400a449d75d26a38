"""The local/cloud fork of the flow: the scheduler plans, a responder answers.

``Router.answer`` is what the pipeline calls for every request that needs the LLM. It asks
the scheduler for a :class:`~.scheduler.Plan` (the decision and the local slot reserved
with it), refuses at once when neither place can start in time (``OverloadedError`` with
``retry_after_s``), and hands the job to the responder of the route. ``limit`` bounds the
LLM requests in flight (local and cloud together: ``server.max_concurrent_requests``);
skill and cache answers never pass through here, so they never wait behind LLM work.
"""
from __future__ import annotations

from typing import Any

from ..errors import ModelMissingError, OverloadedError
from .responders import Answered, CloudResponder, Job, LocalResponder, Responder
from .scheduler import Plan, Scheduler


class Router:
    def __init__(self, scheduler: Scheduler, *, local: LocalResponder | None,
                 cloud: CloudResponder | None, cloud_view: Any | None, limit: int,
                 local_device: str = "cpu", local_error: Any = None) -> None:
        self.scheduler = scheduler
        self.responders: dict[str, Responder | None] = {"local": local, "cloud": cloud}
        self.cloud_view = cloud_view
        self.limit = max(1, limit)
        self.local_device = local_device
        self.local_error = local_error
        self.in_flight = 0

    def plan(self, job: Job, intent: str, budget_ms: float | None) -> Plan:
        err = self.local_error
        plan = self.scheduler.plan(
            job.prompt_tokens, intent, cloud=self.cloud_view,
            has_local=self.responders["local"] is not None, budget_ms=budget_ms,
            local_device=self.local_device, local_error=err.message if err else "not loaded")
        d = plan.decision
        if d.route == "refuse":
            if d.code == "unavailable":
                raise err or ModelMissingError("no local model loaded and the cloud is down")
            raise OverloadedError(f"busy: {d.reason}", retry_after_s=d.retry_after_s,
                                  hint=f"retry in {d.retry_after_s:.0f} s")
        return plan

    async def answer(self, job: Job, intent: str, budget_ms: float | None) -> Answered:
        if self.in_flight >= self.limit:
            raise OverloadedError(f"busy: {self.in_flight} LLM requests in flight",
                                  retry_after_s=self.scheduler.cfg.retry_after_s,
                                  hint="retry shortly or raise server.max_concurrent_requests")
        plan = self.plan(job, intent, budget_ms)
        responder = self.responders[plan.decision.route]
        if responder is None:      # cannot happen: the scheduler only picks what exists
            if plan.slot is not None:
                plan.slot.release()
            raise OverloadedError(f"no {plan.decision.route} responder")
        self.in_flight += 1
        try:
            return await responder.answer(job, plan)
        finally:
            self.in_flight -= 1

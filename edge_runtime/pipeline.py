"""The flow, written once: understand -> skill -> cache -> route (local LLM, cloud, refuse).

``Pipeline._answer`` reads like the diagram in DESIGN.md. Skills and cache hits are
answered here and never wait behind LLM work; everything else goes to the
:class:`~edge_runtime.scheduler.router.Router`, where the scheduler decides with
everything already committed and a responder (local, cloud, hedged) answers. Blocking
work runs off the event loop: the LLM on its own threads (one per request it can decode
at once), the rest on a small shared pool.
"""
from __future__ import annotations

import asyncio
import logging
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol
from collections.abc import Callable

from .cache.base import CachedAnswer
from .clock import SYSTEM_CLOCK, Clock
from .config import Config
from .errors import BadInputError, EdgeError, OverloadedError
from .llm.adapter import AsyncLlm
from .llm.prompt import Prompt
from .metrics import Metrics
from .nlu.base import IntentSpec
from .query import Query
from .query import validate_text as validate_text  # (its home was here; callers import it)
from .scheduler.budget import resolve_budget_ms
from .scheduler.responders import CloudResponder, HedgedResponder, Job, LocalResponder
from .scheduler.router import Router
from .stages import Stages
from .types import (CancelToken, Device, GenerationParams, Intent, Message, Result, Route,
                    Timings)

log = logging.getLogger(__name__)


class AnswerSink(Protocol):
    """Receives answer pieces on the event loop as they arrive (must not block)."""

    def piece(self, text: str) -> None: ...

    def reset(self) -> None:
        """The pieces so far are void (a cloud answer failed midway); a new answer follows."""


class _NullSink:
    def piece(self, text: str) -> None:
        pass

    def reset(self) -> None:
        pass




class Pipeline:
    def __init__(self, cfg: Config, stages: Stages, metrics: Metrics,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.cfg = cfg
        self.s = stages
        self.metrics = metrics
        self.clock = clock
        self.llm = AsyncLlm(stages.llm, on_stats=self._llm_stats, clock=clock) \
            if stages.llm else None
        self.conversations = None
        if stages.llm is not None:
            from .llm.conversation import ConversationStore
            c = cfg.llm
            self.conversations = ConversationStore(
                stages.llm.prompt_tokens, max_prompt_tokens=c.conversation_max_prompt_tokens,
                max_turns=c.conversation_max_turns, max_sessions=c.conversation_max_sessions,
                ttl_s=c.conversation_ttl_s, summary_turns=c.conversation_summary_turns,
                clock=clock)
        self.router = build_router(cfg, stages, self.llm, clock)
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="stage")
        self.in_flight = 0

    # -- the flow ------------------------------------------------------------------------
    async def ask(self, text: Any, *, cancel: CancelToken | None = None,
                  timings: Timings | None = None, budget_ms: float | None = None,
                  sink: AnswerSink | None = None, session: str | None = None,
                  unsure: frozenset[str] = frozenset()) -> Result:
        """Answer one request. ``text`` and ``budget_ms`` are validated here, once
        (``query.Query.build``); ``budget_ms`` overrides the latency budget for this request;
        ``sink`` receives the answer's pieces as they arrive (for streamed speech);
        ``session`` names a multi-turn conversation whose earlier turns the LLM sees;
        ``unsure``: for a spoken request, the words the recognizer was unsure of
        (``asr.Transcript.unsure``: a command that rests on one is asked back)."""
        t0 = self.clock.monotonic()
        timings = timings or Timings()
        self.in_flight += 1
        self.metrics.queue_depth.set(self.in_flight)
        try:
            query = Query.build(text, max_chars=self.cfg.nlu.max_text_chars,
                                budget_ms=budget_ms, session=session, unsure=unsure)
            result = await self._answer(query, t0, timings, cancel or CancelToken(),
                                        sink or _NullSink())
            self.metrics.requests.labels("ok").inc()
            return result
        except EdgeError as exc:
            self.metrics.requests.labels("error").inc()
            self.metrics.observe_error(exc.stage, exc.code)
            if isinstance(exc, OverloadedError):
                self.metrics.observe_route("refused", "none", "refused", None)
            raise
        finally:
            self.in_flight -= 1
            self.metrics.queue_depth.set(self.in_flight)

    async def _answer(self, query: Query, t0: float, timings: Timings,
                      cancel: CancelToken, sink: AnswerSink) -> Result:
        text, session = query.text, query.session
        # one hop off the loop for understanding and, when a skill answers, its answer
        intent, spec, nlu_s, answer, reason = await self._run(self._understand, query)
        timings.nlu = nlu_s
        self.metrics.observe_stage("nlu", nlu_s)
        if answer is not None:
            sink.piece(answer)
            return self._finish(text, intent, "skill", "none", reason, answer, t0, timings,
                                "skill")

        system = self.cfg.llm.system_prompt
        # in a conversation, the window of turns that fits is measured in the prompt's
        # tokens: templated and tokenized now, once; otherwise only after a cache miss
        prompt = self.conversations.prompt(session, system, text, self.llm.prepare) \
            if session is not None and self.conversations is not None and self.llm is not None \
            else None
        messages = list(prompt) if prompt is not None else \
            [Message("system", system), Message("user", text)]
        # a follow-up ("and why?") depends on its conversation: never cached
        key = self.s.make_key(intent, spec, text) \
            if len(messages) <= 2 and self.cfg.cache.enabled else None
        if key is not None:
            hit = await self._timed("cache", timings, self.s.cache.get, key)
            self.metrics.observe_cache("hit" if hit else "miss")
            if hit is not None:
                sink.piece(hit.answer)
                if session is not None and self.conversations is not None:
                    self.conversations.add_answer(session, hit.answer)
                return self._finish(text, intent, "cache", "none", f"answer cache hit (first "
                                    f"answered by {hit.route})", hit.answer, t0, timings,
                                    "cache_hit")
        else:
            self.metrics.observe_cache("skip")

        if prompt is None:          # the local model templates and tokenizes it, once
            prompt = self.llm.prepare(messages) if self.llm is not None else \
                Prompt.untemplated(messages)
        job = Job(prompt, self._params(), cancel, sink, t0)
        budget_ms = resolve_budget_ms(self.cfg.scheduler, intent.name, spec_ms=spec.budget_ms,
                                      request_ms=query.budget_ms)
        out = await self.router.answer(job, intent.name, budget_ms)
        if math.isfinite(out.predicted_ttft_s):
            self.metrics.predicted_ttft.set(out.predicted_ttft_s)
        timings.first_token = None if out.first_piece_m is None else out.first_piece_m - t0
        if session is not None and self.conversations is not None:
            self.conversations.add_answer(session, out.answer)
        if key is not None and out.answer and not cancel.cancelled:
            entry = CachedAnswer(answer=out.answer, route=out.route,
                                 created_at=self.clock.time(), model=self.cfg.llm.model)
            await self._run(self.s.cache.put, key, entry, self.s.ttl_for(spec))
        return self._finish(text, intent, out.route, out.device, out.reason, out.answer, t0,
                            timings, out.code)

    def _understand(self, query: Query) -> tuple[Intent, IntentSpec, float, str | None, str]:
        """NLU, then the skill's answer when a skill handles the intent (on the pool:
        skills are deterministic and quick, so one thread hop serves both)."""
        start = self.clock.monotonic()
        intent = self.s.understander.parse(query)
        nlu_s = self.clock.monotonic() - start
        spec = self.s.understander.intents.spec(intent.name)
        skill = self.s.skills.get(spec.skill) if spec.skill and self.cfg.skills.enabled \
            else None
        if skill is None:
            return intent, spec, nlu_s, None, ""
        reason = f"skill {spec.skill} handles intent {intent.name}"
        try:
            answer = skill.handle(intent, query.text) or ""
        except BadInputError as exc:     # the skill asks back ("For how long?")
            answer, reason = exc.message, f"{reason}; it needs more: {exc.message}"
        return intent, spec, nlu_s, answer, reason

    def _llm_stats(self, stats: dict) -> None:
        tps = stats.get("decode_tok_s") or stats.get("decode_tps")
        if tps:
            self.metrics.tokens_per_s.labels("local").set(tps)

    def _params(self) -> GenerationParams:
        c = self.cfg.llm
        return GenerationParams(max_new_tokens=c.max_new_tokens, temperature=c.temperature,
                                top_p=c.top_p, top_k=c.top_k,
                                repetition_penalty=c.repetition_penalty, seed=c.seed,
                                stop_at_sentence=c.stop_at_sentence)

    # -- helpers -------------------------------------------------------------------------
    async def _run(self, fn: Callable, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def _timed(self, stage: str, timings: Timings, fn: Callable, *args: Any) -> Any:
        start = self.clock.monotonic()
        try:
            return await self._run(fn, *args)
        finally:
            elapsed = self.clock.monotonic() - start
            setattr(timings, stage, elapsed)
            self.metrics.observe_stage(stage, elapsed)

    def _finish(self, text: str, intent: Intent, route: Route, device: Device, reason: str,
                answer: str, t0: float, timings: Timings, code: str) -> Result:
        now = self.clock.monotonic()
        if timings.first_token is None and route in ("skill", "cache"):
            timings.first_token = now - t0
        timings.total = now - t0
        self.metrics.observe_stage("total", timings.total)
        if timings.first_token is not None:
            self.metrics.observe_stage("first_token", timings.first_token)
        self.metrics.observe_route(route, device, code, timings.first_token, timings.total)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("answered %r via %s (%s)", text, route, reason)
        else:
            log.info("request answered via %s/%s in %.0f ms", route, device, timings.total * 1e3)
        return Result(transcript=text, intent=intent, route=route, device=device,
                      reason=reason, answer=answer, timings=timings)

    def close(self) -> None:
        if self.llm is not None:
            self.llm.close()
        self._pool.shutdown(wait=False, cancel_futures=True)


def build_router(cfg: Config, stages: Stages, llm: AsyncLlm | None, clock: Clock) -> Router:
    """The local/cloud fork for these stages: a responder per place that exists."""
    sched = stages.scheduler
    if stages.llm is not None:
        sched.attach_engine(stages.llm)
    local = LocalResponder(llm, clock) if llm is not None else None
    cloud = None
    if stages.cloud is not None:
        deadline_s = cfg.cloud.deadline_ms / 1000.0
        cloud = HedgedResponder(stages.cloud, llm, sched, deadline_s=deadline_s, clock=clock) \
            if cfg.cloud.hedge else \
            CloudResponder(stages.cloud, llm, sched, deadline_s=deadline_s, hedge=False,
                           clock=clock)
    return Router(sched, local=local, cloud=cloud, cloud_view=stages.cloud,
                  limit=cfg.server.max_concurrent_requests,
                  local_device=llm.device if llm is not None else "none",
                  local_error=stages.llm_error)

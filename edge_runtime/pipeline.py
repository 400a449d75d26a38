"""The flow, written once: understand -> skill -> cache -> schedule -> local LLM or cloud.

``Pipeline.ask`` reads like the diagram in DESIGN.md. Blocking work runs off the event
loop: the LLM on its own single worker thread (one model session), the rest on a
small shared pool.
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Protocol

from .cache.base import CachedAnswer
from .cloud_link.hedge import hedged_answer
from .clock import SYSTEM_CLOCK, Clock
from .config import Config
from .errors import BadInputError, EdgeError, ModelMissingError, OverloadedError
from .metrics import Metrics
from .nlu.base import IntentSpec
from .scheduler import Decision, Scheduler
from .types import CancelToken, GenerationParams, Intent, Message, Result, Timings

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


@dataclass
class Stages:
    """The parts the pipeline drives; built by ``runtime.build_stages`` or by tests."""

    understander: Any          # .parse(text) -> Intent, .intents: IntentSet
    skills: Any                # .get(name) -> Skill | None
    cache: Any                 # AnswerCache: .get(key), .put(key, answer, ttl_s)
    make_key: Callable[[Intent, IntentSpec, str], str | None]
    ttl_for: Callable[[IntentSpec], float]
    scheduler: Scheduler
    llm: Any | None            # LlmEngine, or None when it could not be loaded
    llm_error: EdgeError | None
    cloud: Any | None          # CloudClient, or None when disabled


def validate_text(text: Any, max_chars: int) -> str:
    """Reject what no stage can use, with a message that says what to send instead."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise BadInputError("text is not valid UTF-8", hint="send UTF-8 text") from None
    if not isinstance(text, str):
        raise BadInputError(f"text must be a string, got {type(text).__name__}")
    if "\x00" in text:
        raise BadInputError("text contains NUL bytes", hint="send plain text")
    if not text.strip():
        raise BadInputError("text is empty", hint="say or type a request")
    if len(text) > max_chars:
        raise BadInputError(f"text is {len(text)} characters, more than the {max_chars} "
                            f"allowed", hint="shorten the request or raise nlu.max_text_chars")
    return text.strip()


class Pipeline:
    def __init__(self, cfg: Config, stages: Stages, metrics: Metrics,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.cfg = cfg
        self.s = stages
        self.metrics = metrics
        self.clock = clock
        # one model session; with micro-batching up to llm.max_batch requests decode together
        self._llm_thread = ThreadPoolExecutor(cfg.llm.max_batch, thread_name_prefix="llm")
        self.conversations = None
        if stages.llm is not None:
            from .llm.conversation import ConversationStore
            c = cfg.llm
            self.conversations = ConversationStore(
                stages.llm.prompt_tokens, max_prompt_tokens=c.conversation_max_prompt_tokens,
                max_turns=c.conversation_max_turns, max_sessions=c.conversation_max_sessions,
                ttl_s=c.conversation_ttl_s, summary_turns=c.conversation_summary_turns,
                clock=clock)
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="stage")
        self._admission = asyncio.Semaphore(cfg.server.max_concurrent_requests)
        self.in_flight = 0
        self._cloud_ttft_s = 0.3     # typical cloud first-token time (EWMA), for hedging

    # -- the flow ------------------------------------------------------------------------
    async def ask(self, text: Any, *, cancel: CancelToken | None = None,
                  timings: Timings | None = None, budget_ms: float | None = None,
                  sink: AnswerSink | None = None, session: str | None = None) -> Result:
        """Answer one request. ``budget_ms`` overrides the latency budget for this request;
        ``sink`` receives the answer's pieces as they arrive (for streamed speech);
        ``session`` names a multi-turn conversation whose earlier turns the LLM sees."""
        t0 = self.clock.monotonic()
        timings = timings or Timings()
        if self._admission.locked():
            raise OverloadedError("too many requests in flight",
                                  hint="retry shortly or raise server.max_concurrent_requests")
        async with self._admission:
            self.in_flight += 1
            self.metrics.queue_depth.set(self.in_flight)
            try:
                result = await self._answer(validate_text(text, self.cfg.nlu.max_text_chars),
                                            t0, timings, cancel or CancelToken(), budget_ms,
                                            sink or _NullSink(), session)
                self.metrics.requests.labels("ok").inc()
                return result
            except EdgeError as exc:
                self.metrics.requests.labels("error").inc()
                self.metrics.observe_error(exc.stage, exc.code)
                raise
            finally:
                self.in_flight -= 1
                self.metrics.queue_depth.set(self.in_flight)

    async def _answer(self, text: str, t0: float, timings: Timings,
                      cancel: CancelToken, budget_ms: float | None,
                      sink: AnswerSink, session: str | None) -> Result:
        intent = await self._timed("nlu", timings, self.s.understander.parse, text)
        spec = self.s.understander.intents.spec(intent.name)

        if spec.skill and (skill := self.s.skills.get(spec.skill)) is not None:
            reason = f"skill {spec.skill} handles intent {intent.name}"
            try:
                answer = await self._run(skill.handle, intent, text)
            except BadInputError as exc:     # the skill asks back ("For how long?")
                answer, reason = exc.message, f"{reason}; it needs more: {exc.message}"
            sink.piece(answer)
            return self._finish(text, intent, "skill", "none", reason, answer, t0, timings,
                                "skill")

        messages = self._messages(text, session)
        # a follow-up ("and why?") depends on its conversation: never cached
        key = self.s.make_key(intent, spec, text) if len(messages) <= 2 else None
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

        decision = self._decide(messages, intent,
                                spec.budget_ms if budget_ms is None else budget_ms)
        route, reason = decision.route, decision.reason
        if decision.route == "cloud":
            t_cloud = self.clock.monotonic()
            out = await hedged_answer(
                lambda: self._cloud_stream(messages),
                (lambda tok: self._local_stream(messages, tok)) if self.s.llm else None,
                hedge_after_s=self._hedge_after_s(decision, t0), sink=sink, clock=self.clock,
                cancel=cancel)
            answer, route, reason = out.answer, out.winner, f"{decision.reason}; {out.reason}"
            device = "cloud" if route == "cloud" else self._local_device()
            timings.first_token = None if out.first_piece_m is None else out.first_piece_m - t0
            if route == "cloud" and out.first_piece_m is not None:
                self._cloud_ttft_s += 0.2 * (out.first_piece_m - t_cloud - self._cloud_ttft_s)
            if route == "local":
                code = "hedge_local_won" if out.hedged else "cloud_failed"
                decision = Decision("local", reason, code, decision.predicted_ttft_s,
                                    decision.budget_s)
        else:
            device = self._local_device()
            answer = await self._collect(self._local_stream(messages, cancel), t0, timings,
                                         sink)
        if session is not None and self.conversations is not None:
            self.conversations.add_answer(session, answer)
        if key is not None and answer and not cancel.cancelled:
            entry = CachedAnswer(answer=answer, route=route, created_at=self.clock.time(),
                                 model=self.cfg.llm.model)
            await self._run(self.s.cache.put, key, entry, self.s.ttl_for(spec))
        return self._finish(text, intent, route, device, reason, answer, t0, timings,
                            decision.code)

    # -- routing -------------------------------------------------------------------------
    def _decide(self, messages: list[Message], intent: Intent,
                budget_ms: float | None) -> Decision:
        cloud = self.s.cloud
        if self.s.llm is None:
            if cloud is not None and cloud.available:
                return Decision("cloud", f"local model unavailable ({self.s.llm_error.message})",
                                "local_unavailable", float("inf"), 0.0)
            raise self.s.llm_error or ModelMissingError("no local model loaded")
        tokens = self.s.llm.prompt_tokens(messages)
        decision = self.s.scheduler.decide(
            tokens, intent.name, cloud_enabled=cloud is not None,
            cloud_available=cloud is not None and cloud.available,
            intent_budget_ms=budget_ms, local_device=self.s.llm.device)
        self.metrics.predicted_ttft.set(decision.predicted_ttft_s)
        return decision

    def _messages(self, text: str, session: str | None) -> list[Message]:
        system = self.cfg.llm.system_prompt
        if session is None or self.conversations is None:
            return [Message("system", system), Message("user", text)]
        return self.conversations.messages(session, system, text)

    def _hedge_after_s(self, decision: Decision, t0: float) -> float:
        """When to start the local model beside a pending cloud request: once the budget
        is spent AND the cloud is late by its own standard (1.5x its typical first-token
        time), so a healthy cloud is not raced for nothing. No hedging: its deadline."""
        if not self.cfg.cloud.hedge:
            return self.cfg.cloud.deadline_ms / 1000.0
        remaining = decision.budget_s - (self.clock.monotonic() - t0)
        return max(0.0, remaining, 1.5 * self._cloud_ttft_s)

    def _local_device(self) -> str:
        if self.s.llm is None:
            raise self.s.llm_error or ModelMissingError("no local model loaded")
        return self.s.llm.device

    async def _cloud_stream(self, messages: list[Message]) -> AsyncIterator[str]:
        deadline_s = self.cfg.cloud.deadline_ms / 1000.0
        async for piece in self.s.cloud.stream(messages, self._params(), deadline_s):
            yield piece

    async def _local_stream(self, messages: list[Message],
                            cancel: CancelToken) -> AsyncIterator[str]:
        """Run the engine's generator on the LLM thread; hand pieces to the event loop."""
        if self.s.llm is None:
            raise self.s.llm_error or ModelMissingError("no local model loaded")
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue(maxsize=self.cfg.llm.max_new_tokens + 8)
        done = object()
        engine, params, sched = self.s.llm, self._params(), self.s.scheduler

        def work() -> None:
            tokens = engine.prompt_tokens(messages)
            t_start = self.clock.monotonic()
            first: float | None = None
            sched.local_started()
            try:
                for piece in engine.generate(messages, params, cancel):
                    if first is None:
                        first = self.clock.monotonic() - t_start
                    loop.call_soon_threadsafe(queue.put_nowait, piece)
                loop.call_soon_threadsafe(queue.put_nowait, done)
            except BaseException as exc:  # handed to the awaiting coroutine
                loop.call_soon_threadsafe(queue.put_nowait, exc)
            finally:
                sched.local_finished(tokens, first, self.clock.monotonic() - t_start)
                stats = getattr(engine, "last_stats", None) or {}
                if stats.get("decode_tps"):
                    self.metrics.tokens_per_s.labels("local").set(stats["decode_tps"])

        fut = loop.run_in_executor(self._llm_thread, work)
        completed = False
        try:
            while (item := await queue.get()) is not done:
                if isinstance(item, BaseException):
                    raise item
                yield item
            completed = True
        finally:
            if not completed:      # the consumer went away: stop decoding within a token
                cancel.cancel()
            await asyncio.shield(fut)

    async def _collect(self, stream: AsyncIterator[str], t0: float, timings: Timings,
                       sink: AnswerSink) -> str:
        pieces: list[str] = []
        async for piece in stream:
            if timings.first_token is None:
                timings.first_token = self.clock.monotonic() - t0
            pieces.append(piece)
            sink.piece(piece)
        return "".join(pieces).strip()

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

    def _finish(self, text: str, intent: Intent, route: str, device: str, reason: str,
                answer: str, t0: float, timings: Timings, code: str) -> Result:
        now = self.clock.monotonic()
        if timings.first_token is None and route in ("skill", "cache"):
            timings.first_token = now - t0
        timings.total = now - t0
        self.metrics.observe_stage("total", timings.total)
        if timings.first_token is not None:
            self.metrics.observe_stage("first_token", timings.first_token)
        self.metrics.observe_route(route, device, code, timings.first_token)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("answered %r via %s (%s)", text, route, reason)
        else:
            log.info("request answered via %s/%s in %.0f ms", route, device, timings.total * 1e3)
        return Result(transcript=text, intent=intent, route=route, device=device,
                      reason=reason, answer=answer, timings=timings)

    def close(self) -> None:
        self._llm_thread.shutdown(wait=False, cancel_futures=True)
        self._pool.shutdown(wait=False, cancel_futures=True)

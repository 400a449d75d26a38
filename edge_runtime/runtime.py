"""Build every stage from one Config; start and stop them in order."""
from __future__ import annotations

import asyncio
import logging
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from .clock import SYSTEM_CLOCK, Clock
from .config import Config
from .errors import EdgeError
from .gpu.accel import Accelerator
from .metrics import Metrics
from .models.store import ModelStore
from .onnx_session import resolve_spin
from .pipeline import Pipeline, Stages
from .scheduler import Scheduler
from .types import GenerationParams, Message

log = logging.getLogger(__name__)

# Calibration prompts: a short and a long user turn, to fit overhead + per-token prefill.
_OPENERS = ("Please:", "Quick one.", "Hello!", "Question:", "Tell me.")
_CALIBRATION = ("Hi.", " ".join(["Tell me something interesting about the ocean, the weather, "
                                 "and the history of sailing ships in northern Europe."] * 3))


def _device_for(cfg: Config, clock: Clock):
    """The device profile and its live or simulated telemetry (None on a plain x86 box)."""
    from .device import device_monitor_for, get_profile
    profile = get_profile(cfg.device.profile)
    return profile, device_monitor_for(profile, clock)


def load_llm(cfg: Config, store: ModelStore):
    """Load the local engine; returns (engine, None) or (None, error) — never raises."""
    from .device import get_profile
    c = cfg.llm
    profile = get_profile(cfg.device.profile)
    threads = profile.llm_thread_count(c.threads)     # llm.threads = 0: the profile's
    spin = resolve_spin(c.spin_us, threads) if c.backend != "llama_cpp" else 0
    try:
        if c.backend == "llama_cpp":
            from .llm.llama_cpp_engine import LlamaCppEngine
            engine = LlamaCppEngine(store.require_source(c.model), threads=threads,
                                    model_name=c.model, context_tokens=c.context_tokens)
        else:
            from .llm import load_engine
            from .models.budget import check_llm_budget
            check_llm_budget(cfg, store.llm_dir())     # MemoryBudgetError: serve without it
            engine = load_engine(store.llm_dir(), providers=c.providers, threads=threads,
                                 model_name=c.model, context_tokens=c.context_tokens,
                                 max_batch=profile.llm_max_batch(c.max_batch),
                                 batch_context_tokens=c.batch_context_tokens,
                                 reuse_prefix=c.reuse_prefix, spin_us=spin,
                                 huge_pages=c.huge_pages, step_ops=step_ops_library(cfg))
        log.info("local LLM %s loaded on %s (providers: %s; %d at a time, %d threads, "
                 "busy-wait %d us)", c.model, engine.device, ", ".join(engine.providers),
                 engine.capacity, threads, spin)
        return engine, None
    except EdgeError as exc:
        log.warning("local LLM unavailable: %s", exc.one_line())
        return None, exc


def step_ops_library(cfg: Config) -> Path | None:
    """The decode-step kernels' library for this machine (llm.step_ops), or None."""
    if not cfg.llm.step_ops:
        return None
    from .llm.step_ops import find_library, library_path
    lib = find_library(cfg.paths.resolved_home())
    if lib is None:
        log.info("decode-step kernels not built (%s); decode steps run on onnxruntime's "
                 "kernels: run `edge-runtime models build`",
                 library_path(cfg.paths.resolved_home()).name)
    return lib


def build_stages(cfg: Config, clock: Clock = SYSTEM_CLOCK, *, with_llm: bool = True,
                 accel: Accelerator | None = None) -> Stages:
    """``accel``: where the NLU encoder runs (``gpu.Accelerator``); None = the CPU."""
    from .cache import AnswerCache, make_key, ttl_for
    from .nlu import Understander
    from .skills import SkillRegistry

    understander = Understander.from_config(cfg.nlu, cache_dir=cfg.paths.resolved_home() / "nlu",
                                            accel=accel)
    skills = SkillRegistry.from_config(cfg.skills, clock, lists=cfg.nlu.lists)
    if cfg.nlu.home:
        from .nlu.home.serve import attach_home, with_home_dir
        skills.add_home(cfg.home)
        attach_home(understander, with_home_dir(cfg.nlu, cfg.paths.resolved_home()), skills.home,
                    skills.refresher)
    cache = AnswerCache.from_config(cfg.cache, cfg.paths.resolved_home(), clock)
    store = ModelStore(cfg)
    llm, llm_error = load_llm(cfg, store) if with_llm else (None, None)
    cloud = None
    if cfg.cloud.enabled:
        from .cloud_link.failover import FailoverCloudClient
        c = cfg.cloud
        cloud = FailoverCloudClient.from_config(
            c, c.endpoints, clock, model=c.model, stall_timeout_ms=c.stall_timeout_ms or None,
            max_attempts=c.max_attempts, breaker_failures=c.breaker_failures,
            breaker_reset_s=c.breaker_reset_s)
    profile, monitor = _device_for(cfg, clock)
    return Stages(understander=understander, skills=skills, cache=cache,
                  make_key=make_key, ttl_for=lambda spec: ttl_for(spec, cfg.cache),
                  scheduler=Scheduler(cfg.scheduler, device=monitor, latency=profile.latency),
                  llm=llm,
                  llm_error=llm_error, cloud=cloud)


@dataclass
class Runtime:
    cfg: Config
    stages: Stages
    metrics: Metrics
    pipeline: Pipeline
    accel: Accelerator | None = None     # where the small models run (gpu/); None = CPU
    due: list[str] = field(default_factory=list)   # commands whose timers rang, not yet run

    @classmethod
    def build(cls, cfg: Config, clock: Clock = SYSTEM_CLOCK) -> Runtime:
        metrics = Metrics()
        accel = Accelerator.from_config(cfg, metrics=metrics, clock=clock)
        stages = build_stages(cfg, clock, accel=accel)
        metrics.budget_seconds.set(cfg.scheduler.budget_ms / 1000.0)
        if stages.llm is not None:
            for provider in stages.llm.providers[:1]:
                metrics.llm_device.labels(stages.llm.device, provider).set(1)
        return cls(cfg, stages, metrics, Pipeline(cfg, stages, metrics, clock), accel)

    async def start(self) -> None:
        refresher = getattr(self.stages.skills, "refresher", None)
        if refresher is not None:            # Home Assistant's lists: retried, kept fresh
            refresher.start()
        if self.stages.cloud is not None:
            await self.stages.cloud.start()
        if self.pipeline.llm is not None and self.cfg.scheduler.calibrate_at_start:
            await self.pipeline.llm.run(self.calibrate)
        self.refresh_gauges()

    def calibrate(self, rounds: int = 3) -> None:
        """Measure prefill on two prompt lengths, median of ``rounds`` (also warms up)."""
        engine, params = self.stages.llm, GenerationParams(max_new_tokens=1, temperature=0.0)
        assert engine is not None                # called only with a local model (start)
        clock = self.pipeline.clock
        samples = []
        for text in _CALIBRATION:
            times, counts = [], []
            for i in range(rounds + 1):          # the first run only warms up
                # a new question each round, as in real use: the engine may reuse the system
                # prompt's KV, but must not answer from its cache of a repeated prompt
                msgs = [Message("system", self.cfg.llm.system_prompt),
                        Message("user", f"{_OPENERS[i % len(_OPENERS)]} {text}")]
                prompt = engine.prepare(msgs)        # as a request's: tokenized before
                counts.append(prompt.tokens)
                t = clock.monotonic()
                for _piece in engine.generate(prompt, params):
                    break
                times.append(clock.monotonic() - t)
            samples.append((round(statistics.median(counts[1:])), statistics.median(times[1:])))
        self.stages.scheduler.predictor.calibrate(samples)
        p = self.stages.scheduler.predictor
        log.info("scheduler calibrated: overhead %.1f ms + %.3f ms/prompt token",
                 p.overhead_s * 1e3, p.per_token_s * 1e3)

    def finished_timers(self) -> list[str]:
        """Spoken announcements of timers that finished since the last call; a timer that
        carries a command ("in 20 minutes turn off the fan") queues it for
        :meth:`run_due` instead."""
        timers = self.stages.skills.timers
        if timers is None:
            return []
        done = []
        for t in timers.pop_finished():
            self.metrics.timers_finished.inc()
            if t.command:
                self.due.append(t.command)
            else:
                done.append(f"{t.label()[0].upper()}{t.label()[1:]} is done.")
        return done

    async def run_due(self) -> list[str]:
        """Run the commands whose timers rang (as if said now) and return what to announce:
        the skill's answer, or that it could not be done; never an LLM's answer (that would
        be a claim of an action nobody took)."""
        out = []
        while self.due:
            command = self.due.pop(0)
            try:
                result = await self.pipeline.ask(command)
            except EdgeError as exc:
                log.warning("a delayed command failed: %s", exc.one_line())
                out.append(f"It is time to {command}, but I could not do it.")
                continue
            out.append(result.answer if result.route == "skill" else
                       f"It is time to {command}, but I could not do it.")
        return out

    def next_timer_in_s(self) -> float | None:
        timers = self.stages.skills.timers
        deadline = timers.next_deadline() if timers is not None else None
        return None if deadline is None else max(0.0, deadline - self.pipeline.clock.monotonic())

    def refresh_gauges(self) -> None:
        if self.stages.cloud is not None:
            self.metrics.set_cloud_state(self.stages.cloud.state)
        cache = self.stages.cache
        self.metrics.set_cache_tiers(cache.tier_states(), cache.error_counts())
        scheduler = self.stages.scheduler
        self.metrics.set_local_slots(scheduler.local.counts())
        device = scheduler.device
        if device is not None:            # a Jetson's tegrastats, or the simulated trace
            self.metrics.set_device(device.telemetry(), slowdown=device.slowdown(),
                                    gpu_available=device.gpu_available())

    def health(self) -> dict:
        llm = self.stages.llm
        cache_states = self.stages.cache.tier_states()
        llm_state: dict = ({"model": self.cfg.llm.model, "device": llm.device,
                            "providers": list(llm.providers)} if llm is not None else
                           {"model": self.cfg.llm.model, "error": self.stages.llm_error.one_line()
                            if self.stages.llm_error else "not loaded"})
        off_gpu = self.llm_off_gpu()
        if off_gpu:
            llm_state["degraded"] = off_gpu
        out = {
            "status": "ok",
            "llm": llm_state,
            "cloud": self.stages.cloud.state if self.stages.cloud is not None else "disabled",
            "cache": cache_states,
            "in_flight": self.pipeline.in_flight,
            "local_queue": self.stages.scheduler.local.counts(),
        }
        degraded = llm is None or any(s.startswith("failed") for s in cache_states.values()) \
            or out["cloud"] == "down" or bool(off_gpu)
        out["status"] = "degraded" if degraded else "ok"
        return out

    def llm_off_gpu(self) -> str:
        """Why the local LLM runs on the CPU although the device profile expects a GPU
        provider ("" when it does not, or runs where expected). ``llm.providers`` with no
        GPU provider is a choice, not a fault."""
        from .device import get_profile
        llm, c = self.stages.llm, self.cfg.llm
        profile = get_profile(self.cfg.device.profile)
        wanted = [p for p in c.providers if p in ("tensorrt", "cuda")]
        if llm is None or llm.device != "cpu" or c.backend != "onnx" \
                or not profile.expects_gpu or not wanted:
            return ""
        return (f"the LLM runs on the CPU, but the {profile.name} profile expects "
                f"{' or '.join(wanted)} (onnxruntime providers: {', '.join(llm.providers)}); "
                "check `edge-runtime doctor` and that onnxruntime-gpu is installed")

    def liveness(self) -> str | None:
        """What a restart would fix, or None: the systemd watchdog pings only while this is
        None. Degraded states (cloud down, no model, LLM on the CPU) are not liveness
        failures: a restart would not mend them, and restarting would only loop."""
        llm, limit = self.pipeline.llm, self.cfg.llm.stuck_after_s
        if llm is not None and limit > 0:
            busy = llm.longest_running_s()
            if busy > limit:
                return (f"a local LLM generation has run for {busy:.0f} s "
                        f"(llm.stuck_after_s {limit:g})")
        return None

    async def close(self) -> None:
        refresher = getattr(self.stages.skills, "refresher", None)
        if refresher is not None:            # waits for a read in flight: off the loop
            await asyncio.get_running_loop().run_in_executor(None, refresher.close)
        if self.stages.cloud is not None:
            await self.stages.cloud.close()
        self.pipeline.close()
        self.stages.cache.close()
        if self.stages.llm is not None:  # the micro-batching front owns a scheduler thread
            self.stages.llm.close()

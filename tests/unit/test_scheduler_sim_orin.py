"""Scheduling on the GPU's real state: the simulated Orin Nano's trace, walked on FakeClock.

The real pipeline, router, responders and scheduler answer one request every half second of
the committed ``sim-orin-nano`` trace, whose parts are marked in the trace itself
(``# phase`` lines: nominal, throttled, recovered, gpu-lost). Only the LLM engine and the
cloud link are fakes (the edges). The scheduler is calibrated as on the board at nominal
clocks: to the profile's GPU latency prior.
"""
from __future__ import annotations

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.config import load_config
from edge_runtime.device import SimulatedDevice, get_profile
from edge_runtime.metrics import Metrics
from edge_runtime.pipeline import Pipeline, Stages
from edge_runtime.scheduler import Scheduler, TtftPredictor
from tests.pipeline_fakes import DictCache, FakeCloud, FakeEngine, FakeSkills, FakeUnderstander

PROFILE = get_profile("sim-orin-nano")
LATENCY = PROFILE.latency
PROMPT_TOKENS = 60               # a short question with its system prompt
STEP_S = 0.5                     # one request every half second of the trace
WITHIN_S = 2.0                   # the promise: the mix follows the device within 2 s
# The budget is sized from the profile's prior, so the test holds for any honest prior:
# the nominal first token fits with a quarter to spare, the first throttle step (x1.53 on
# the compute part) and the CPU price do not.
NOMINAL_S = LATENCY.ttft_s(PROMPT_TOKENS, gpu=True)
BUDGET_MS = round(NOMINAL_S * 1.25 * 1000, 3)


class SimEngine(FakeEngine):
    """The local model's edge: answers at once and reports the times the host measured,
    which on the simulated board are its nominal ones (the host never throttles)."""

    def prompt_tokens(self, messages):
        return PROMPT_TOKENS

    @property
    def last_stats(self):
        ttft = LATENCY.ttft_s(PROMPT_TOKENS, gpu=True)
        return {"ttft_s": ttft, "prompt_tokens": PROMPT_TOKENS, "total_s": ttft + 0.5,
                "new_tokens": 20}


def _calibrated() -> TtftPredictor:
    """What start-up calibration would fit on the board at nominal clocks."""
    p = TtftPredictor()
    p.calibrate([(n, LATENCY.ttft_s(n, gpu=True)) for n in (20, 200)])
    return p


def _walk(cloud: FakeCloud) -> tuple[SimulatedDevice, Pipeline, list[dict]]:
    """One request per STEP_S through the whole trace; returns what each got."""
    import asyncio

    clock = FakeClock()
    device = SimulatedDevice.from_profile(PROFILE, clock)
    cfg = load_config(env={}).with_overrides(device={"profile": PROFILE.name},
                                             scheduler={"budget_ms": BUDGET_MS})
    stages = Stages(
        understander=FakeUnderstander(), skills=FakeSkills(), cache=DictCache(),
        make_key=lambda intent, spec, text: f"k:{text}" if spec.cacheable else None,
        ttl_for=lambda spec: 60.0,
        scheduler=Scheduler(cfg.scheduler, _calibrated(), device=device, latency=LATENCY),
        llm=SimEngine(), llm_error=None, cloud=cloud)
    pipeline = Pipeline(cfg, stages, Metrics(), clock)
    registry = pipeline.metrics.registry

    async def run() -> list[dict]:
        out = []
        for i in range(int(device.duration_s / STEP_S)):
            t = device.elapsed_s()
            r = await pipeline.ask(f"tell me about the sea, question {i}")
            out.append({"t": t, "phase": device.phase(t), "route": r.route, "device": r.device,
                        "reason": r.reason, "answer": r.answer,
                        "predicted": registry.get_sample_value(
                            "edge_scheduler_predicted_local_ttft_seconds")})
            clock.advance(STEP_S)
        return out

    try:
        return device, pipeline, asyncio.run(run())
    finally:
        pipeline.close()


def _part(device: SimulatedDevice, name: str) -> tuple[float, float]:
    return next((start, end) for n, start, end in device.phases if n == name)


def _routes(results: list[dict], start: float, end: float) -> set[str]:
    return {r["route"] for r in results if start <= r["t"] < end}


def _lag(results: list[dict], start: float, route: str) -> float:
    """Seconds from ``start`` to the first request at or after it that went ``route``."""
    return next(r["t"] for r in results if r["t"] >= start and r["route"] == route) - start


def test_route_mix_follows_throttling_within_2_s_and_returns_when_it_clears() -> None:
    assert LATENCY.ttft_s(PROMPT_TOKENS, gpu=True, slowdown=1.53) * 1000 > BUDGET_MS
    assert LATENCY.ttft_s(PROMPT_TOKENS, gpu=False) * 1000 > BUDGET_MS
    cloud = FakeCloud()
    cloud.predicted_s = 0.08                      # the gateway's heartbeat: 80 ms
    device, pipeline, results = _walk(cloud)
    t_hot, t_cool = _part(device, "throttled")
    t_lost, t_end = _part(device, "gpu-lost")
    nominal = _part(device, "nominal")

    # nothing lost: every request was answered, and by one of the two places
    assert len(results) == int(device.duration_s / STEP_S)
    assert all(r["answer"] for r in results)
    assert _routes(results, 0, t_end) == {"local", "cloud"}

    # nominal clocks: the local model makes the budget
    assert _routes(results, *nominal) == {"local"}
    # throttled (408 -> 306 MHz, x1.53 -> x2.04): to the cloud within 2 s, and it stays there
    assert _lag(results, t_hot, "cloud") <= WITHIN_S
    assert _routes(results, t_hot + WITHIN_S, t_cool) == {"cloud"}
    throttled = [r for r in results if t_hot + WITHIN_S <= r["t"] < t_cool]
    assert all("thermal slowdown" in r["reason"] and "MHz" in r["reason"] for r in throttled)
    # the cap released: back to the local model within 2 s, at the nominal price again
    assert _lag(results, t_cool, "local") <= WITHIN_S
    assert _routes(results, t_cool + WITHIN_S, t_lost) == {"local"}
    back = [r for r in results if t_cool + WITHIN_S <= r["t"] < t_lost]
    assert {round(r["predicted"], 6) for r in back} == \
        {round(LATENCY.ttft_s(PROMPT_TOKENS, gpu=True), 6)}
    # GPU lost: the CPU price (338 ms) misses the budget, so the cloud answers
    assert _routes(results, t_lost + WITHIN_S, t_end) == {"cloud"}
    lost = [r for r in results if t_lost + WITHIN_S <= r["t"] < t_end]
    assert all("gpu provider unavailable, cpu only" in r["reason"] for r in lost)

    # the metrics say the same: decisions by reason, and the route mix
    reg = pipeline.metrics.registry
    n_cloud = sum(r["route"] == "cloud" for r in results)
    assert reg.get_sample_value("edge_scheduler_decisions_total",
                                {"route": "cloud", "reason": "over_budget"}) == n_cloud
    assert reg.get_sample_value("expert_activation_ratio", {"expert": "cloud"}) == \
        pytest.approx(n_cloud / len(results))


def test_with_the_cloud_down_the_cpu_keeps_answering_through_gpu_loss_at_the_cpu_price() -> None:
    device, pipeline, results = _walk(FakeCloud(available=False))
    t_lost, t_end = _part(device, "gpu-lost")

    # nothing lost, nothing refused: every request answered locally, on the CPU
    assert len(results) == int(device.duration_s / STEP_S)
    assert all(r["answer"] and r["route"] == "local" and r["device"] == "cpu" for r in results)
    assert pipeline.metrics.registry.get_sample_value(
        "edge_requests_total", {"outcome": "error"}) in (None, 0.0)

    lost = [r for r in results if t_lost <= r["t"] < t_end]
    assert lost and all("gpu provider unavailable, cpu only" in r["reason"] and
                        "answering locally on cpu" in r["reason"] for r in lost)
    # priced at the profile's CPU rate: overhead + 60 tokens at 220 tok/s + a step at 22 tok/s
    cpu_price = LATENCY.ttft_s(PROMPT_TOKENS, gpu=False)
    assert cpu_price == pytest.approx(0.020 + 60 / 220 + 1 / 22)
    assert all(r["predicted"] == pytest.approx(cpu_price) for r in lost)
    # ... and the answers measured meanwhile did not drag the nominal model along
    p = pipeline.s.scheduler.predictor
    assert p.prefill_s(PROMPT_TOKENS) == pytest.approx(LATENCY.ttft_s(PROMPT_TOKENS, gpu=True))

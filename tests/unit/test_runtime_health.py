"""/healthz's LLM-placement rule and the daemon's liveness check (the watchdog's gate)."""
from __future__ import annotations

import asyncio

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.config import load_config
from edge_runtime.runtime import Runtime
from edge_runtime.types import CancelToken, GenerationParams, Message
from tests.api_fixtures import GatedEngine
from tests.pipeline_fakes import FakeEngine, make_pipeline


class GpuEngine(FakeEngine):
    device = "cuda"
    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]


def _runtime(engine="default", clock=None, **sections) -> Runtime:
    cfg = load_config(env={}).with_overrides(**sections)
    p = make_pipeline(cfg=cfg, engine=engine, clock=clock)
    return Runtime(cfg=p.cfg, stages=p.s, metrics=p.metrics, pipeline=p)


def test_an_llm_on_the_cpu_of_a_gpu_profile_is_degraded_and_says_why() -> None:
    health = _runtime(device={"profile": "orin-nano-8gb"}).health()
    assert health["status"] == "degraded"
    why = health["llm"]["degraded"]
    assert "runs on the CPU" in why and "orin-nano-8gb" in why and "tensorrt or cuda" in why
    assert "CPUExecutionProvider" in why and "onnxruntime-gpu" in why


@pytest.mark.parametrize("engine, sections", [
    (GpuEngine(), {"device": {"profile": "orin-nano-8gb"}}),          # where it belongs
    (FakeEngine(), {"device": {"profile": "x86-cpu"}}),               # no GPU expected
    (FakeEngine(), {"device": {"profile": "sim-orin-nano"}}),         # simulated: CPU by design
    (FakeEngine(), {"device": {"profile": "orin-nano-8gb"},           # CPU chosen, not a fault
                    "llm": {"providers": ["cpu"]}}),
])
def test_an_llm_where_the_profile_and_config_put_it_is_ok(engine, sections) -> None:
    health = _runtime(engine, **sections).health()
    assert health["status"] == "ok", health
    assert "degraded" not in health["llm"]


async def test_liveness_fails_only_while_a_generation_runs_past_llm_stuck_after_s() -> None:
    clock = FakeClock()
    engine = GatedEngine(pieces=("one ", "two."))
    rt = _runtime(engine, clock=clock, llm={"stuck_after_s": 60.0})
    assert rt.liveness() is None
    llm = rt.pipeline.llm
    assert llm is not None
    gen = llm.stream([Message("user", "hi")], GenerationParams(max_new_tokens=4), CancelToken())
    assert await gen.__anext__() == "one "           # now held inside the engine
    clock.advance(59.0)
    assert rt.liveness() is None and llm.longest_running_s() == pytest.approx(59.0)
    clock.advance(2.0)
    problem = rt.liveness()
    assert problem is not None and "61 s" in problem and "llm.stuck_after_s 60" in problem
    assert rt.health()["status"] == "ok"             # liveness is not /healthz's business
    engine.gate.set()
    assert [piece async for piece in gen] == ["two."]
    await asyncio.sleep(0)
    assert llm.longest_running_s() == 0.0 and rt.liveness() is None


def test_liveness_ignores_degraded_states_a_restart_would_not_mend() -> None:
    rt = _runtime(device={"profile": "orin-nano-8gb"})          # LLM on the CPU
    rt_no_llm = _runtime(engine=None)                            # no model built
    assert rt.health()["status"] == "degraded" and rt.liveness() is None
    assert rt_no_llm.health()["status"] == "degraded" and rt_no_llm.liveness() is None
    assert _runtime(llm={"stuck_after_s": 0.0}).liveness() is None


def test_llm_threads_zero_takes_the_device_profile_s() -> None:
    from edge_runtime.device import get_profile
    assert load_config(env={}).llm.threads == 0
    assert get_profile("orin-nano-8gb").llm_thread_count(0) == 4
    assert get_profile("x86-cpu").llm_thread_count(0) == 2
    assert get_profile("orin-nano-8gb").llm_thread_count(3) == 3

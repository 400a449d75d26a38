"""Device profiles: lookup, errors, and agreement with the config they are used with."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from edge_runtime.config import Config, load_config
from edge_runtime.device import (DeviceProfile, LatencyModel, UnknownProfileError, get_profile,
                                 profile_names)
from edge_runtime.errors import ConfigError

JETSON = Path(__file__).resolve().parents[2] / "jetson"


def test_builtin_profiles_are_listed() -> None:
    assert profile_names() == ("orin-nano-8gb", "sim-orin-nano", "x86-cpu")


@pytest.mark.parametrize("name", ["orin-nano-8gb", "x86-cpu", "sim-orin-nano"])
def test_get_profile_returns_a_frozen_profile_of_that_name(name: str) -> None:
    profile = get_profile(name)
    assert isinstance(profile, DeviceProfile) and profile.name == name
    assert profile.providers[-1] == "cpu"                   # CPU is always the last resort
    assert set(profile.providers) <= {"tensorrt", "cuda", "cpu"}
    assert profile.model_memory_mb > 0 and profile.llm_threads > 0 and profile.notes
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.llm_threads = 99  # type: ignore[misc]


def test_orin_prefers_tensorrt_then_cuda_and_x86_is_cpu_only() -> None:
    assert get_profile("orin-nano-8gb").providers == ("tensorrt", "cuda", "cpu")
    assert get_profile("x86-cpu").providers == ("cpu",)
    assert not get_profile("x86-cpu").has_gpu and get_profile("orin-nano-8gb").has_gpu


def test_only_the_sim_profile_is_simulated_and_has_a_trace() -> None:
    sim = get_profile("sim-orin-nano")
    assert sim.simulated and sim.trace and sim.latency is not None
    assert not get_profile("orin-nano-8gb").simulated and get_profile("orin-nano-8gb").trace is None


def test_default_config_profile_exists() -> None:
    assert get_profile(Config().device.profile).name == "x86-cpu"


@pytest.mark.parametrize("bad", ["jetson", "", "ORIN-NANO-8GB", None])
def test_unknown_profile_is_a_config_error_naming_the_key_and_valid_names(bad) -> None:
    with pytest.raises(UnknownProfileError) as info:
        get_profile(bad)
    err = info.value
    assert isinstance(err, ConfigError) and err.stage == "config"
    assert "device.profile" in err.message and repr(bad) in err.message
    for name in profile_names():
        assert name in err.hint
    assert "device.profile" in err.one_line()


def test_example_orin_config_loads_and_matches_its_profile() -> None:
    cfg = load_config(JETSON / "config.orin-nano-8gb.toml", env={})
    profile = get_profile(cfg.device.profile)
    assert profile.name == "orin-nano-8gb"
    assert cfg.llm.providers == profile.providers
    assert profile.llm_thread_count(cfg.llm.threads) == profile.llm_threads == 4
    assert cfg.server.is_loopback()


def test_latency_model_grows_with_prompt_slowdown_and_gpu_loss() -> None:
    m = LatencyModel(prefill_tok_s_gpu=1000.0, decode_tok_s_gpu=50.0,
                     prefill_tok_s_cpu=200.0, decode_tok_s_cpu=20.0, overhead_ms=10.0)
    assert m.ttft_s(0) == pytest.approx(0.010 + 1 / 50)
    assert m.ttft_s(100) == pytest.approx(0.010 + 0.1 + 0.02)
    assert m.ttft_s(100, slowdown=2.0) == pytest.approx(0.010 + 2 * 0.12)
    assert m.ttft_s(100, slowdown=0.5) == m.ttft_s(100)          # never faster than nominal
    assert m.ttft_s(100, gpu=False) == pytest.approx(0.010 + 0.5 + 0.05)
    assert m.ttft_s(100, gpu=False, slowdown=3.0) == m.ttft_s(100, gpu=False)
    assert m.decode_tok_s(slowdown=2.0) == pytest.approx(25.0)
    with pytest.raises(ValueError):
        m.ttft_s(-1)


def test_latency_model_rejects_non_positive_rates() -> None:
    with pytest.raises(ConfigError):
        LatencyModel(prefill_tok_s_gpu=0.0, decode_tok_s_gpu=1.0,
                     prefill_tok_s_cpu=1.0, decode_tok_s_cpu=1.0)


def test_profiles_recommend_a_max_batch_that_llm_max_batch_zero_takes() -> None:
    assert Config().llm.max_batch == 0                       # default: the profile's
    for name in profile_names():
        p = get_profile(name)
        assert 2 <= p.max_batch <= 16                         # micro-batching on everywhere
        assert p.llm_max_batch(0) == p.max_batch
        assert p.llm_max_batch(1) == 1 and p.llm_max_batch(12) == 12   # an explicit value wins
    assert get_profile("sim-orin-nano").max_batch == get_profile("orin-nano-8gb").max_batch
    with pytest.raises(ConfigError):
        dataclasses.replace(get_profile("x86-cpu"), max_batch=17)
    with pytest.raises(ConfigError):
        load_config(env={"EDGE_RUNTIME_LLM__MAX_BATCH": "-1"})

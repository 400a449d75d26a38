"""llm.spin_us: the LLM session's intra-op threads wait bounded (or not at all)."""
from __future__ import annotations

import os

import pytest

from edge_runtime.config import load_config
from edge_runtime.errors import ConfigError
from edge_runtime.onnx_session import (AUTO_SPIN_US, NO_SPIN, resolve_spin,
                                      session_options, spin_entries)


def test_zero_never_spins_and_positive_is_bounded():
    assert spin_entries(0) == NO_SPIN == spin_entries(-5)
    assert spin_entries(200) == {"session.intra_op.allow_spinning": "1",
                                 "session.intra_op.spin_duration_us": "200"}


def test_session_options_carry_the_entries():
    pytest.importorskip("onnxruntime")
    so = session_options(2, spin_us=150)
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    assert so.get_session_config_entry("session.intra_op.spin_duration_us") == "150"
    assert session_options(2).get_session_config_entry(
        "session.intra_op.allow_spinning") == "0"


def test_config_default_is_auto_and_bad_values_are_refused():
    assert load_config(env={}).llm.spin_us == -1
    for value in ("0", "200"):
        assert load_config(env={"EDGE_RUNTIME_LLM__SPIN_US": value}).llm.spin_us == int(value)
    with pytest.raises(ConfigError, match="llm.spin_us"):
        load_config(env={}).with_overrides(llm={"spin_us": -2})


def test_auto_busy_waits_only_where_each_llm_thread_has_a_core():
    assert resolve_spin(-1, threads=2, cores=2) == AUTO_SPIN_US
    assert resolve_spin(-1, threads=2, cores=3) == AUTO_SPIN_US
    assert resolve_spin(-1, threads=4, cores=6) == AUTO_SPIN_US  # the Orin Nano's profile
    assert resolve_spin(-1, threads=2, cores=1) == 0           # pinned to one core
    assert resolve_spin(-1, threads=4, cores=2) == 0
    assert resolve_spin(-1, threads=1, cores=1) == 0           # no worker thread to wake
    assert resolve_spin(-1, threads=1, cores=8) == 0
    assert resolve_spin(0, threads=2, cores=16) == 0           # as configured
    assert resolve_spin(150, threads=2, cores=2) == 150
    cores = len(os.sched_getaffinity(0))
    assert resolve_spin(-1, threads=cores) == (AUTO_SPIN_US if cores > 1 else 0)
    assert resolve_spin(-1, threads=cores + 1) == 0            # this process's own cores

"""llm.spin_us: the LLM session's intra-op threads wait bounded (or not at all)."""
from __future__ import annotations

import pytest

from edge_runtime.config import load_config
from edge_runtime.errors import ConfigError
from edge_runtime.onnx_session import NO_SPIN, session_options, spin_entries


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


def test_config_default_is_no_spin_and_bad_values_are_refused():
    assert load_config(env={}).llm.spin_us == 0
    with pytest.raises(ConfigError, match="llm.spin_us"):
        load_config(env={}).with_overrides(llm={"spin_us": -1})

"""llama.cpp's AMX weight path is switched off on an AMX CPU, and only there."""
from __future__ import annotations

import pytest

lib = pytest.importorskip("llama_cpp.llama_cpp")

from edge_runtime.llm.llama_cpp_engine import without_amx  # noqa: E402


@pytest.mark.parametrize("info, off", [(b"CPU : AVX2 = 1 | AMX_INT8 = 1 | ", True),
                                       (b"CPU : AVX2 = 1 | AVX512 = 1 | ", False)])
def test_extra_buffer_types_are_off_only_with_amx(monkeypatch, info, off) -> None:
    # (the llama.cpp defaults as loaded, before an engine made earlier switched them)
    plain = getattr(lib.llama_model_default_params, "edge_plain", lib.llama_model_default_params)
    monkeypatch.setattr(lib, "llama_model_default_params", plain)
    monkeypatch.setattr(lib, "llama_print_system_info", lambda: info)
    assert without_amx() is off
    assert lib.llama_model_default_params().use_extra_bufts is (not off)
    assert without_amx() is off                     # once: the switch is not stacked

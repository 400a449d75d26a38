"""The llama.cpp fallback engine on the real SmolLM2 GGUF (same decode loop as ours)."""
from __future__ import annotations

import pytest

from edge_runtime.errors import ModelMissingError
from edge_runtime.types import CancelToken, GenerationParams, Message

from tests.llm_fixtures import llm_gguf  # noqa: F401  (fixture)

pytestmark = pytest.mark.integration
pytest.importorskip("llama_cpp")

SYSTEM = Message("system", "You are a helpful voice assistant. Answer in one short sentence.")
GREEDY = GenerationParams(temperature=0.0, max_new_tokens=32, stop_at_sentence=2)


@pytest.fixture(scope="module")
def engine(llm_gguf):
    from edge_runtime.llm.llama_cpp_engine import LlamaCppEngine

    return LlamaCppEngine(llm_gguf, threads=2, context_tokens=512)


def test_answers_and_stops_at_end_of_turn(engine):
    text = "".join(engine.generate([SYSTEM, Message("user", "What is the capital of France?")],
                                   GREEDY))
    assert "Paris" in text and "<|im_end|>" not in text
    assert engine.last_stats["stop_reason"] in ("end_of_turn", "sentences")
    assert engine.device == "cpu" and engine.prompt_tokens([SYSTEM]) > 5


def test_system_prompt_prefix_is_reused_and_output_repeatable(engine):
    msgs = [SYSTEM, Message("user", "Name three colours.")]
    a = "".join(engine.generate(msgs, GREEDY))
    b = "".join(engine.generate(msgs, GREEDY))
    assert a == b and engine.last_stats["cached_prompt_tokens"] > 10


def test_cancel_stops(engine):
    cancel = CancelToken()
    gen = engine.generate([SYSTEM, Message("user", "Tell me a long story.")],
                          GenerationParams(max_new_tokens=64, stop_at_sentence=0), cancel)
    next(gen)
    cancel.cancel()
    assert list(gen) == [] and engine.last_stats["stop_reason"] == "cancelled"


def test_missing_file_raises_model_missing(tmp_path):
    from edge_runtime.llm.llama_cpp_engine import LlamaCppEngine

    with pytest.raises(ModelMissingError):
        LlamaCppEngine(tmp_path / "nope.gguf")

"""Builder + engine end to end on a tiny random Llama GGUF generated in the test (no download).

With fp32 activations everywhere (accuracy_level 1 for layers and head) the ONNX graph must
reproduce the numpy reference forward pass to float rounding: this checks the block
re-packing, rope pairing, grouped-query attention, the KV cache and the tied head.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("gguf")
pytest.importorskip("onnx")

from edge_runtime.llm import load_engine  # noqa: E402
from edge_runtime.types import CancelToken, GenerationParams, Message  # noqa: E402
from tests.llm_fixtures import write_tiny_gguf  # noqa: E402

TEXT = "the cat sat on the mat. the dog ate the bone. there is another theory 42"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from edge_runtime.models.gguf2onnx import build_llm

    d = tmp_path_factory.mktemp("tiny_llm")
    gguf_path = write_tiny_gguf(d / "tiny.gguf")
    info = build_llm(gguf_path, d / "onnx", accuracy_level=1, lm_head_accuracy_level=1)
    return gguf_path, d / "onnx", info


def test_build_writes_model_tokenizer_and_config(tiny):
    _, out, info = tiny
    cfg = json.loads((out / "model_config.json").read_text())
    assert {p.name for p in out.iterdir()} >= {"model.onnx", "model.onnx.data", "tokenizer.json",
                                                "model_config.json"}
    assert (cfg["num_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
            cfg["head_dim"]) == (2, 4, 2, 16)
    assert cfg["end_of_turn_token_ids"] == [0, 2] and cfg["source_sha256"] == info["source_sha256"]


def test_onnx_matches_numpy_reference(tiny):
    from edge_runtime.models.gguf2onnx import check_fidelity

    r = check_fidelity(tiny[0], tiny[1], TEXT)
    assert r["top1_agreement"] == 1.0
    assert r["max_abs_diff"] < 1e-3


def test_kv_cache_path_matches_one_shot_prefill(tiny):
    from tokenizers import Tokenizer

    from edge_runtime.llm.providers import open_session
    from edge_runtime.llm.runner import PREFILL_CHUNK, KvRunner
    from edge_runtime.models.gguf2onnx.reference import onnx_logits

    out = tiny[1]
    cfg = json.loads((out / "model_config.json").read_text())
    ids = Tokenizer.from_file(str(out / "tokenizer.json")).encode(TEXT * 3).ids
    assert len(ids) > PREFILL_CHUNK + 4
    full = onnx_logits(out, ids)
    runner = KvRunner(open_session(out / "model.onnx", ["cpu"], 1), cfg, 128)
    split = PREFILL_CHUNK + 2
    got = np.stack([runner.feed(ids[:split]).copy()] + [runner.feed([t]).copy()
                                                         for t in ids[split:]])
    assert np.abs(got - full[split - 1:]).max() < 1e-3
    runner.reset()
    assert np.abs(runner.feed(ids[:5]) - full[4]).max() < 1e-3


def test_tokenizer_keeps_special_tokens_whole(tiny):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tiny[1] / "tokenizer.json"))
    ids = tok.encode("<|im_start|>user\nthe cat<|im_end|>", add_special_tokens=False).ids
    assert ids[0] == 1 and ids[-1] == 2 and 1 not in ids[1:-1]


@pytest.fixture(scope="module")
def engine(tiny):
    return load_engine(tiny[1], providers=("tensorrt", "cuda", "cpu"), threads=1,
                       context_tokens=64)


MSGS = [Message("system", "be brief"), Message("user", "the cat")]


def test_engine_reports_the_provider_in_use(engine):
    assert engine.device == "cpu" and engine.providers == ["CPUExecutionProvider"]


def test_greedy_is_deterministic_and_respects_token_cap(engine):
    p = GenerationParams(temperature=0.0, max_new_tokens=12, stop_at_sentence=0,
                         repetition_penalty=1.0)
    a = list(engine.generate(MSGS, p))
    stats = dict(engine.last_stats)
    b = list(engine.generate(MSGS, p))
    assert a == b
    assert stats["new_tokens"] <= 12 and stats["prompt_tokens"] == engine.prompt_tokens(MSGS)
    assert stats["stop_reason"] in ("max_new_tokens", "end_of_turn", "sentences")


def test_seed_changes_sampled_text(engine):
    def run(seed):
        p = GenerationParams(temperature=1.5, top_k=0, top_p=1.0, max_new_tokens=16,
                             stop_at_sentence=0, seed=seed)
        return "".join(engine.generate(MSGS, p))

    assert run(1) == run(1)
    assert len({run(s) for s in range(4)}) > 1


def test_long_conversation_is_trimmed_to_context(engine):
    turns = [Message("user" if i % 2 == 0 else "assistant", "the cat sat on the mat " * 3)
             for i in range(20)]
    msgs = [Message("system", "be brief")] + turns
    list(engine.generate(msgs, GenerationParams(max_new_tokens=8)))
    st = engine.last_stats
    assert st["dropped_messages"] > 0 and st["prompt_tokens"] <= 64 - 8


def test_cancel_stops_generation(engine):
    cancel = CancelToken()
    p = GenerationParams(temperature=1.0, max_new_tokens=40, stop_at_sentence=0,
                         repetition_penalty=1.0)
    gen = engine.generate(MSGS, p, cancel)
    pieces = []
    for piece in gen:
        pieces.append(piece)
        cancel.cancel()
    assert len(pieces) == 1 and engine.last_stats["stop_reason"] == "cancelled"

"""The real SmolLM2 model: build, tokenizer, fidelity, generation, failure modes."""
from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from edge_runtime.errors import ModelLoadError, ModelMissingError
from edge_runtime.llm import load_engine
from edge_runtime.types import CancelToken, GenerationParams, Message

from tests.llm_fixtures import llm_engine, llm_gguf, llm_model_dir  # noqa: F401  (fixtures)

pytestmark = pytest.mark.integration

SYSTEM = Message("system", "You are a helpful voice assistant. Answer in one to three short, "
                           "plain sentences that sound natural when spoken aloud.")
GREEDY = GenerationParams(temperature=0.0, max_new_tokens=40, stop_at_sentence=0)


def test_model_config_describes_the_gguf(llm_model_dir):
    cfg = json.loads((llm_model_dir / "model_config.json").read_text())
    assert (cfg["num_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
            cfg["head_dim"], cfg["vocab_size"]) == (30, 9, 3, 64, 49152)
    assert 2 in cfg["end_of_turn_token_ids"] and "<|im_start|>" in cfg["chat_template"]
    assert len(cfg["source_sha256"]) == 64


def test_tokenizer_special_tokens_and_round_trip(llm_model_dir):
    tok = Tokenizer.from_file(str(llm_model_dir / "tokenizer.json"))
    ids = tok.encode("<|im_start|>user\nHi 2024!<|im_end|>", add_special_tokens=False).ids
    assert ids[0] == 1 and ids[-1] == 2
    assert sum(1 for i in ids if i in (1, 2)) == 2
    assert tok.decode(ids, skip_special_tokens=True) == "user\nHi 2024!"


def test_fidelity_against_fp32_reference(llm_gguf, llm_model_dir):
    from edge_runtime.models.gguf2onnx import check_fidelity

    r = check_fidelity(llm_gguf, llm_model_dir)
    assert r["tokens"] >= 100
    assert r["top1_agreement"] >= 0.95
    assert abs(r["perplexity_onnx"] / r["perplexity_reference"] - 1.0) < 0.05


def test_kv_cache_decode_matches_full_prefill(llm_model_dir):
    from edge_runtime.llm.providers import open_session
    from edge_runtime.llm.runner import PREFILL_CHUNK, KvRunner
    from edge_runtime.models.gguf2onnx.reference import onnx_logits

    cfg = json.loads((llm_model_dir / "model_config.json").read_text())
    ids = Tokenizer.from_file(str(llm_model_dir / "tokenizer.json")).encode(
        "The quick brown fox jumps over the lazy dog. " * 8).ids
    full = onnx_logits(llm_model_dir, ids)
    runner = KvRunner(open_session(llm_model_dir / "model.onnx", ["cpu"], 2), cfg, 256)
    split = PREFILL_CHUNK + 5                      # two prefill chunks, then one by one
    got = [runner.feed(ids[:split]).copy()] + [runner.feed([t]).copy() for t in ids[split:]]
    got = np.stack(got)
    ref = full[split - 1:]
    # int8 activations (accuracy_level 4) round differently for 1-row and many-row
    # matmuls, so the two paths differ by quantization noise; a cache/position bug would
    # scramble the logits entirely (differences of 10+ and random argmax). The head's best
    # logits are exact products (rescore_top: 0.64 apart here at most, the 8-bit head's
    # were 0.65); the others keep its 4-bit copy's rounding, which the paths' slightly
    # different inputs move further (1.9 at most here; 1.26 with the 8-bit head). A token at
    # the edge of the 16 candidates can be rescored in one path and not in the other (the
    # exact-blocks build: 21.5 vs its copy's 15.5, 6.0 apart), so the bound on all logits
    # leaves out the largest 0.1 % of the differences (13 x 16 candidates would be 0.04 %).
    assert np.mean(got.argmax(-1) == ref.argmax(-1)) >= 0.95
    best = np.argsort(ref, axis=-1)[:, -4:]
    assert np.abs(np.take_along_axis(got - ref, best, -1)).max() < 1.5
    assert np.quantile(np.abs(got - ref), 0.999) < 2.0


def test_greedy_generation_is_deterministic(llm_engine):
    msgs = [SYSTEM, Message("user", "Name three colours.")]
    a = "".join(llm_engine.generate(msgs, GREEDY))
    b = "".join(llm_engine.generate(msgs, GREEDY))
    assert a and a == b


def test_seeded_sampling_is_reproducible(llm_engine):
    msgs = [SYSTEM, Message("user", "Tell me about the sea.")]
    p = GenerationParams(temperature=0.9, top_p=0.95, max_new_tokens=30, seed=5,
                         stop_at_sentence=0)
    assert "".join(llm_engine.generate(msgs, p)) == "".join(llm_engine.generate(msgs, p))


def _repeated_ngram(text: str, n: int = 4) -> int:
    words = re.findall(r"[a-z']+", text.lower())
    grams = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
    return max(grams.values(), default=0)


def test_sky_question_gives_english_without_loop(llm_engine):
    msgs = [SYSTEM, Message("user", "Why is the sky blue?")]
    text = "".join(llm_engine.generate(msgs, GenerationParams(max_new_tokens=64)))
    letters = [c for c in text if c.isalpha()]
    assert len(text.split()) >= 5
    assert sum(c.isascii() for c in letters) / len(letters) > 0.95
    assert _repeated_ngram(text) < 3
    st = llm_engine.last_stats
    assert st["device"] == "cpu" and st["prompt_tokens"] == llm_engine.prompt_tokens(msgs)
    assert st["new_tokens"] > 0 and st["ttft_s"] is not None


def test_sentence_cap_and_cancel(llm_engine):
    msgs = [SYSTEM, Message("user", "Tell me a long story about a dragon.")]
    p = GenerationParams(max_new_tokens=120, stop_at_sentence=1)
    text = "".join(llm_engine.generate(msgs, p))
    assert llm_engine.last_stats["stop_reason"] in ("sentences", "end_of_turn", "max_new_tokens")
    if llm_engine.last_stats["stop_reason"] == "sentences":
        assert text.rstrip("\"')]”’»*")[-1] in ".!?…"
    cancel = CancelToken()
    gen = llm_engine.generate(msgs, GenerationParams(max_new_tokens=120, stop_at_sentence=0),
                              cancel)
    next(gen)
    cancel.cancel()
    assert list(gen) == []
    assert llm_engine.last_stats["stop_reason"] == "cancelled"


def test_over_long_conversation_is_trimmed_not_fatal(llm_engine):
    turns = []
    for i in range(40):
        turns += [Message("user", f"Question {i}: " + "tell me more " * 10),
                  Message("assistant", "Here is more. " * 10)]
    msgs = [SYSTEM] + turns + [Message("user", "Why is the sky blue?")]
    text = "".join(llm_engine.generate(msgs, GenerationParams(max_new_tokens=16)))
    st = llm_engine.last_stats
    assert st["dropped_messages"] > 0 and st["prompt_tokens"] <= llm_engine.max_len - 16
    assert text


def test_unavailable_providers_fall_back_to_cpu(llm_model_dir):
    eng = load_engine(llm_model_dir, providers=("tensorrt", "cuda", "cpu"), context_tokens=64)
    assert eng.device in ("tensorrt", "cuda", "cpu")
    assert eng.providers[0].lower().startswith(eng.device)


def test_missing_dir_raises_model_missing(tmp_path):
    with pytest.raises(ModelMissingError) as err:
        load_engine(tmp_path / "nope")
    assert "edge-runtime models build" in err.value.hint


def test_corrupt_model_file_raises_model_load(llm_model_dir, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in ("tokenizer.json", "model_config.json"):
        shutil.copy(llm_model_dir / f, bad / f)
    (bad / "model.onnx.data").symlink_to(llm_model_dir / "model.onnx.data")
    (bad / "model.onnx").write_bytes(b"this is not an onnx file" * 100)
    with pytest.raises(ModelLoadError) as err:
        load_engine(bad, providers=("cpu",))
    assert "edge-runtime models build" in err.value.hint


def test_truncated_weights_raise_model_load(llm_model_dir, tmp_path):
    d = tmp_path / "truncated"
    d.mkdir()
    for f in ("tokenizer.json", "model_config.json", "model.onnx"):
        shutil.copy(llm_model_dir / f, d / f)
    with open(llm_model_dir / "model.onnx.data", "rb") as src:
        (d / "model.onnx.data").write_bytes(src.read(1 << 20))
    with pytest.raises(ModelLoadError):
        load_engine(d, providers=("cpu",))


def test_missing_onnx_file_raises_model_missing(llm_model_dir, tmp_path):
    d = tmp_path / "half"
    d.mkdir()
    for f in ("tokenizer.json", "model_config.json"):
        shutil.copy(llm_model_dir / f, d / f)
    with pytest.raises(ModelMissingError):
        load_engine(d, providers=("cpu",))


def test_concurrent_batched_sessions_match_sequential_greedy(llm_engine):
    import threading

    from edge_runtime.llm.batching import BatchingEngine

    qs = ["Name three colours.", "What is the capital of France?", "Why do we sleep?"]
    p = GenerationParams(temperature=0.0, max_new_tokens=16, stop_at_sentence=0)
    want = ["".join(llm_engine.generate([SYSTEM, Message("user", q)], p)) for q in qs]
    eng = BatchingEngine(llm_engine, max_batch=4)
    got: dict[int, str] = {}
    threads = [threading.Thread(target=lambda i=i: got.__setitem__(
        i, "".join(eng.generate([SYSTEM, Message("user", qs[i])], p)))) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eng.close()
    if llm_engine.cfg.get("accuracy_level") == 1:
        # fp32 activations: batched rows compute exactly what single rows do
        assert [got[i] for i in range(3)] == want
        return
    # int8 activations round a many-row matmul slightly differently, and a near-tie can
    # part the texts as early as the second word ("The colour is blue." alone, "The most
    # obvious colour is blue, ..." batched); so each batched answer is checked against the
    # single session's own choices along it instead: a session that read another's KV
    # cache or positions would write tokens the model does not pick for its question
    for i, q in enumerate(qs):
        assert got[i].split()[:1] == want[i].split()[:1]
        # (here 0.875-1.0 for its own question, 0.44-0.56 for another question's)
        assert _greedy_agreement(llm_engine, [SYSTEM, Message("user", q)], got[i]) >= 0.75


def _greedy_agreement(engine, messages, answer: str) -> float:
    """Share of ``answer``'s tokens that the engine's single session picks greedily when fed
    the prompt and the answer's tokens before each (teacher forcing). The cache is left as
    a generation leaves it (the prompt's prefix reused, the answer after it): how a prompt
    is chunked moves the int8 rounding, so the next test's greedy answers depend on it."""
    import numpy as np

    runner = engine._runner
    toks = engine._tok.encode(answer, add_special_tokens=False).ids
    logits = runner.feed_prompt(list(engine.prepare(messages).ids))
    hits = 0
    for t in toks:
        hits += int(np.argmax(logits)) == t
        logits = runner.feed([t])
    return hits / max(1, len(toks))


def test_multi_turn_dialogue_prefills_only_the_new_turn(llm_engine):
    from edge_runtime.llm.conversation import ConversationStore

    store = ConversationStore(llm_engine.prompt_tokens, max_prompt_tokens=512)
    p = GenerationParams(temperature=0.0, max_new_tokens=16, stop_at_sentence=1)
    answer = "".join(llm_engine.generate(store.messages("s", SYSTEM.content, "Hi, I am Ann."), p))
    store.add_answer("s", answer)
    msgs = store.messages("s", SYSTEM.content, "What is my name?")
    assert [m.role for m in msgs] == ["system", "user", "assistant", "user"]
    "".join(llm_engine.generate(msgs, p))
    st = llm_engine.last_stats
    # the system prompt and the first turn's question were cached from the first request
    assert st["cached_prompt_tokens"] >= 30
    assert st["cached_prompt_tokens"] < st["prompt_tokens"]


def test_prefix_copied_between_slots_and_chunked_prefill_match_one_by_one(llm_engine):
    """A new session's system prompt copied from another slot's cache, and a long prompt
    prefilled in chunks between decode steps, give the one-by-one prefill's logits."""
    from edge_runtime.llm.batch_runner import BatchKvRunner

    opened, cfg = llm_engine._runner.opened, llm_engine.cfg
    ids = [llm_engine.prompt.tokens([SYSTEM, Message("user", q)]) for q in
           ("Why is the sky blue?", "Name three colours.",
            "Tell me about the sea. " * 20)]
    fresh = BatchKvRunner(opened, cfg, 512, 1)
    want = [fresh.prefill(0, x, reuse=False) for x in ids]
    br = BatchKvRunner(opened, cfg, 512, 3)
    br.prefill(0, ids[0])
    got1 = br.prefill(1, ids[1])
    assert br.copied >= 25 and br.computed == len(ids[1]) - br.copied   # the system prompt
    parts = []
    while (got2 := br.prefill(2, ids[2], limit=40)) is None:
        parts.append(br.computed)
    assert parts and all(p == 40 for p in parts)
    for w, g in ((want[1], got1), (want[2], got2)):
        assert g.argmax() == w.argmax()
        if _int8_ffn(cfg):
            # the int8 FFN quantizes the activations of all rows of a call with one scale,
            # so other chunks round a little differently (measured: 4.1 % and 2.5 % of the
            # largest logit)
            assert np.abs(g - w).max() < 0.08 * np.abs(w).max()
        else:
            # measured: identical (int8 activations are quantized per token row); allow noise
            assert np.abs(g - w).max() < 0.05


def _int8_ffn(cfg: dict) -> bool:
    return bool(cfg.get("int8_ffn"))


def _vnni() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


def test_burst_of_eight_sessions_matches_sequential_greedy(llm_engine):
    import threading

    from edge_runtime.llm.batching import BatchingEngine

    qs = ["Name three colours.", "What is the capital of France?", "Why do we sleep?",
          "Who wrote Hamlet?", "What do bees eat?", "How do birds fly?",
          "What is a volcano?", "Why is the sea salty?"]
    p = GenerationParams(temperature=0.0, max_new_tokens=12, stop_at_sentence=0)
    want = ["".join(llm_engine.generate([SYSTEM, Message("user", q)], p)) for q in qs]
    eng = BatchingEngine(llm_engine, max_batch=8)
    assert eng.step_time_s(8) > eng.step_time_s(1) > 0     # calibrated on this machine
    got: dict[int, str] = {}
    threads = [threading.Thread(target=lambda i=i: got.__setitem__(
        i, "".join(eng.generate([SYSTEM, Message("user", qs[i])], p)))) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eng.close()
    assert eng.runner.copied > 0                 # the burst shared the system prompt's KV
    same = sum(got[i] == want[i] for i in range(8))
    # the earlier development boxes gave at least 7 of 8 whole answers identical; an
    # AVX2-only EPYC (no VNNI) gave 5 of 8, every row the same for its first 3-6 words
    # (batched int8 rows summed in another order, we think: greedy near-ties part later;
    # not checked against onnxruntime's kernels). VNNI CPUs keep the earlier bound, but for
    # the int8 FFN build, whose activation scale is shared by the rows of one step (5 of 8
    # on this VNNI box, the first words alike). On the Zen 4 box of the eighth session one
    # answer parts at its second word, with the gguf2onnx-7 build as with -8 ("The colour
    # is blue." alone, "The most obvious colour ..." in the burst: a near-tie), so the first
    # word must match everywhere and the first two in 7 of 8.
    assert same >= (7 if _vnni() and not _int8_ffn(llm_engine.cfg) else 4)
    assert all(got[i].split()[:1] == want[i].split()[:1] for i in range(8))
    assert sum(got[i].split()[:2] == want[i].split()[:2] for i in range(8)) >= 7

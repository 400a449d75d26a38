"""Micro-batching, prefix reuse and provider fallback on the tiny random Llama (fp32 paths).

The fake at the edge is the onnxruntime session: a proxy around the real CPU session that
fails its N-th run, labelled as a GPU provider with CPU left to fall back to.
"""
from __future__ import annotations

import json
import threading

import numpy as np
import pytest

pytest.importorskip("gguf")
pytest.importorskip("onnx")

from edge_runtime.errors import ConfigError, OverloadedError  # noqa: E402
from edge_runtime.llm import load_engine  # noqa: E402
from edge_runtime.llm.batch_runner import BatchKvRunner, common_prefix  # noqa: E402
from edge_runtime.llm.batching import BatchController, BatchingEngine  # noqa: E402
from edge_runtime.llm.onnx_engine import OnnxLlmEngine  # noqa: E402
from edge_runtime.llm.providers import OpenedSession, open_session, trt_profiles  # noqa: E402
from edge_runtime.llm.runner import KvRunner  # noqa: E402
from edge_runtime.types import GenerationParams, Message  # noqa: E402
from tests.llm_fixtures import write_tiny_gguf  # noqa: E402

GREEDY = GenerationParams(temperature=0.0, repetition_penalty=1.0, max_new_tokens=12,
                          stop_at_sentence=0)
PROMPTS = [[Message("system", "be brief"), Message("user", u)]
           for u in ("the cat", "the dog ate", "another theory", "the mat 42", "bone")]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from edge_runtime.models.gguf2onnx import build_llm

    d = tmp_path_factory.mktemp("tiny_batch")
    build_llm(write_tiny_gguf(d / "tiny.gguf"), d / "onnx", accuracy_level=1,
              lm_head_accuracy_level=1)
    return d / "onnx"


@pytest.fixture(scope="module")
def plain(model_dir):
    return load_engine(model_dir, providers=("cpu",), threads=1, context_tokens=96,
                       reuse_prefix=False)


@pytest.fixture(scope="module")
def expected(plain):
    return ["".join(plain.generate(m, GREEDY)) for m in PROMPTS]


class FailingSession:
    """The real session, but ``run_with_iobinding`` raises on call number ``fail_at``."""

    def __init__(self, real, fail_at: int) -> None:
        self.real, self.fail_at, self.calls = real, fail_at, 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    def run_with_iobinding(self, io):
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("CUDA failure 2: out of memory (fake)")
        return self.real.run_with_iobinding(io)


def failing_factory(fail_at: int, load_fails: tuple[str, ...] = ()):
    """A session factory: providers in ``load_fails`` fail to load; "cuda" fails its
    ``fail_at``-th run; "cpu" is the real thing."""
    opened_log: list[str] = []

    def factory(path, names, threads, cache_dir=None, profiles=None):
        names = list(names)
        for i, name in enumerate(names):
            if name in load_fails:
                continue
            real = open_session(path, ["cpu"], threads).session
            opened_log.append(name)
            sess = FailingSession(real, fail_at) if name == "cuda" else real
            return OpenedSession(sess, name, [name], names[i + 1:])
        raise AssertionError("no provider left")
    factory.log = opened_log
    return factory


def test_controller_follows_sessions_and_bounds():
    c = BatchController(8, max_wait_s=0.01)
    assert c.target(0) == 1 and c.target(5) == 5 and c.target(40) == 8
    assert c.ready(pending=1, decoding=1, waited_s=0.0)          # idle device: no wait
    assert not c.ready(pending=2, decoding=4, waited_s=0.001)    # wait for the others
    assert c.ready(pending=2, decoding=4, waited_s=0.02)         # ... but not forever
    assert c.ready(pending=8, decoding=12, waited_s=0.0)         # full batch
    assert not c.ready(pending=0, decoding=3, waited_s=1.0)
    with pytest.raises(ConfigError):
        BatchController(17)


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2 and common_prefix([], [1]) == 0


def test_batched_steps_match_single_session_logits(model_dir):
    cfg = json.loads((model_dir / "model_config.json").read_text())
    opened = open_session(model_dir / "model.onnx", ["cpu"], 1)
    seqs = [[5, 9, 11, 40, 3], [7, 8], [12, 13, 14, 15, 16, 17, 18, 19]]
    single = KvRunner(opened, cfg, 64)
    ref = []
    for s in seqs:
        single.reset()
        out = [single.feed(s).copy()] + [single.feed([t]).copy() for t in (21, 22, 23)]
        ref.append(np.stack(out))
    br = BatchKvRunner(opened, cfg, 64, 4)
    got = [[br.prefill(i, s)] for i, s in enumerate(seqs)]
    for t in (21, 22, 23):
        # slot 1 sits out the middle step (its row rides along without a token)
        feeds = {i: t for i in range(3) if not (i == 1 and t == 22)}
        for i, logits in br.step(feeds).items():
            got[i].append(logits)
    for i in (0, 2):
        np.testing.assert_allclose(np.stack(got[i]), ref[i], atol=1e-4)
    single.reset()
    r1 = [single.feed([7, 8]).copy()] + [single.feed([t]).copy() for t in (21, 23)]
    np.testing.assert_allclose(np.stack(got[1]), np.stack(r1), atol=1e-4)
    # prefix reuse: slot 0 already holds seqs[0] + [21, 22, 23]
    assert br.best_slot([0, 1, 3], seqs[0] + [21, 99]) == 0
    np.testing.assert_allclose(br.prefill(0, seqs[0] + [21, 22]), ref[0][2], atol=1e-4)


def test_concurrent_sessions_give_the_same_text_as_one_by_one(model_dir, plain, expected):
    eng = BatchingEngine(plain, max_batch=4, max_wait_s=0.05)
    got: dict[int, str] = {}

    def run(i: int) -> None:
        got[i] = "".join(eng.generate(PROMPTS[i % len(PROMPTS)], GREEDY))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eng.close()
    assert [got[i] for i in range(7)] == [expected[i % len(PROMPTS)] for i in range(7)]
    assert sum(eng.controller.sizes.values()) > 0


def test_waiting_callers_are_bounded(plain):
    eng = BatchingEngine(plain, max_batch=1, max_waiting=0)
    first = eng.generate(PROMPTS[0], GREEDY)
    next(first)                      # holds the only slot
    with pytest.raises(OverloadedError):
        next(eng.generate(PROMPTS[1], GREEDY))
    first.close()                    # releases the slot
    assert "".join(eng.generate(PROMPTS[1], GREEDY))
    eng.close()


def test_cancel_while_waiting_for_a_slot_returns_nothing(plain):
    from edge_runtime.types import CancelToken

    eng = BatchingEngine(plain, max_batch=1, max_waiting=2)
    first = eng.generate(PROMPTS[0], GREEDY)
    next(first)                      # holds the only slot
    cancel = CancelToken()
    got: list[str] = []
    t = threading.Thread(target=lambda: got.extend(eng.generate(PROMPTS[1], GREEDY, cancel)))
    t.start()
    cancel.cancel()
    t.join(timeout=10)
    assert not t.is_alive() and got == []
    first.close()
    eng.close()


def test_prefix_reuse_keeps_greedy_output(model_dir, expected):
    eng = load_engine(model_dir, providers=("cpu",), threads=1, context_tokens=96)
    assert "".join(eng.generate(PROMPTS[0], GREEDY)) == expected[0]
    assert "".join(eng.generate(PROMPTS[1], GREEDY)) == expected[1]
    assert eng.last_stats["cached_prompt_tokens"] > 0   # the system prompt was kept
    assert "".join(eng.generate(PROMPTS[1], GREEDY)) == expected[1]
    # the same prompt again: nothing to prefill (its saved logits are used)
    assert eng.last_stats["cached_prompt_tokens"] == eng.last_stats["prompt_tokens"]


@pytest.mark.parametrize("fail_at", [4, 9])   # 2 warm-up runs, then prefill, then decode
def test_provider_failing_mid_generation_finishes_on_the_next(model_dir, expected, fail_at):
    factory = failing_factory(fail_at)
    eng = OnnxLlmEngine(model_dir, providers=("cuda", "cpu"), threads=1, context_tokens=96,
                        session_factory=factory)
    assert eng.device == "cuda"
    assert "".join(eng.generate(PROMPTS[2], GREEDY)) == expected[2]
    assert eng.device == "cpu" and factory.log == ["cuda", "cpu"]


def test_provider_failing_at_load_is_skipped(model_dir, expected):
    factory = failing_factory(0, load_fails=("tensorrt",))
    eng = OnnxLlmEngine(model_dir, providers=("tensorrt", "cuda", "cpu"), threads=1,
                        context_tokens=96, session_factory=factory)
    assert eng.device == "cuda" and "".join(eng.generate(PROMPTS[0], GREEDY)) == expected[0]


def test_batched_provider_failure_replays_every_session(model_dir, expected):
    factory = failing_factory(fail_at=12)
    base = OnnxLlmEngine(model_dir, providers=("cuda", "cpu"), threads=1, context_tokens=96,
                         session_factory=factory)
    eng = BatchingEngine(base, max_batch=4, max_wait_s=0.05)
    eng.runner.sess.calls = 0   # count this runner's calls only (the warm-up used 2)
    got: dict[int, str] = {}
    threads = [threading.Thread(target=lambda i=i: got.__setitem__(
        i, "".join(eng.generate(PROMPTS[i], GREEDY)))) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eng.close()
    assert [got[i] for i in range(3)] == expected[:3]
    assert eng.device == "cpu"


def test_trt_profiles_cover_every_input(model_dir):
    cfg = json.loads((model_dir / "model_config.json").read_text())
    p = trt_profiles(cfg, max_len=96, max_batch=8, prefill_chunk=64)
    assert set(p) == {"trt_profile_min_shapes", "trt_profile_opt_shapes",
                      "trt_profile_max_shapes"}
    mx = dict(item.split(":") for item in p["trt_profile_max_shapes"].split(","))
    assert mx["input_ids"] == "8x64" and mx["attention_mask"] == "8x97"
    kv, hd = cfg["num_key_value_heads"], cfg["head_dim"]
    assert mx[f"past_key_values.{cfg['num_layers'] - 1}.value"] == f"8x{kv}x97x{hd}"
    assert len(mx) == 3 + 2 * cfg["num_layers"]


def test_all_positions_model_gives_the_same_next_token_logits(model_dir, tmp_path):
    """A model built with last_only=False ([B,S,V] logits) drives the runners identically."""
    from edge_runtime.models.gguf2onnx import build_llm

    all_dir = tmp_path / "all"
    build_llm(write_tiny_gguf(tmp_path / "tiny.gguf"), all_dir, accuracy_level=1,
              lm_head_accuracy_level=1, last_only=False)
    outs = []
    for d in (model_dir, all_dir):
        cfg = json.loads((d / "model_config.json").read_text())
        r = KvRunner(open_session(d / "model.onnx", ["cpu"], 1), cfg, 96)
        b = BatchKvRunner(r.opened, cfg, 96, 2)
        ids = list(range(3, 80))       # two prefill chunks
        outs.append((r.feed(ids).copy(), b.prefill(1, ids), b.step({1: 7})[1]))
    assert json.loads((all_dir / "model_config.json").read_text())["logits"] == "all"
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, atol=1e-4)


def test_tensorrt_options_fp16_engine_cache_and_profiles(tmp_path):
    from edge_runtime.llm.providers import _provider_list

    profiles = {"trt_profile_min_shapes": "input_ids:1x1"}
    trt, cuda, cpu = _provider_list("tensorrt", tmp_path / "trt", profiles)
    name, opts = trt
    assert name == "TensorrtExecutionProvider" and opts["trt_fp16_enable"] is True
    assert opts["trt_engine_cache_enable"]
    assert opts["trt_engine_cache_path"] == str(tmp_path / "trt")
    assert (tmp_path / "trt").is_dir() and opts["trt_profile_min_shapes"] == "input_ids:1x1"
    assert cpu == "CPUExecutionProvider"       # TensorRT -> CUDA -> CPU inside one session
    assert _provider_list("cpu", None) == ["CPUExecutionProvider"]


def test_load_engine_with_max_batch_gives_the_batching_front(model_dir, expected):
    eng = load_engine(model_dir, providers=("cpu",), threads=1, context_tokens=96,
                      max_batch=4)
    assert isinstance(eng, BatchingEngine) and eng.controller.max_batch == 4
    assert eng.device == "cpu" and eng.prompt_tokens(PROMPTS[0]) > 0
    assert "".join(eng.generate(PROMPTS[0], GREEDY)) == expected[0]
    assert eng.last_stats["new_tokens"] > 0
    eng.close()

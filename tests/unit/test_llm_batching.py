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

from edge_runtime.clock import FakeClock  # noqa: E402
from edge_runtime.errors import ConfigError, OverloadedError  # noqa: E402
from edge_runtime.llm import load_engine  # noqa: E402
from edge_runtime.llm.batch_runner import BatchKvRunner, common_prefix  # noqa: E402
from edge_runtime.llm.batching import BatchController, BatchingEngine  # noqa: E402
from edge_runtime.llm.control import (PidController, PidGains, PrefillTimes,  # noqa: E402
                                      StepTimes)
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
def model_dir(tiny_llm):
    return tiny_llm


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

    def factory(path, names, threads, cache_dir=None, profiles=None, spin_us=0):
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


def test_controller_ready_waits_for_every_decoding_session_but_not_forever():
    c = BatchController(8, max_wait_s=0.01)
    assert c.ready(pending=1, decoding=1, waited_s=0.0)          # idle device: no wait
    assert c.ready(pending=1, decoding=0, waited_s=0.0)
    assert not c.ready(pending=2, decoding=4, waited_s=0.001)    # wait for the others
    assert c.ready(pending=2, decoding=4, waited_s=0.02)         # ... but not forever
    assert c.ready(pending=8, decoding=8, waited_s=0.0)          # full batch
    assert not c.ready(pending=0, decoding=3, waited_s=1.0)
    with pytest.raises(ConfigError):
        BatchController(17)
    with pytest.raises(ConfigError):
        BatchController(0)
    with pytest.raises(ConfigError):
        BatchController(4, min_batch=5)


def test_pid_proportional_integral_and_clamp():
    clock = FakeClock()
    pid = PidController(PidGains(kp=2.0, ki=1.0, kd=0.0), setpoint=1.0, out_min=-10.0,
                        out_max=10.0, clock=clock)
    assert pid.update(3.0) == pytest.approx(4.0)       # first update: P only
    clock.advance(0.5)
    # the integral adds the error held over the interval (2.0 x 0.5 s x ki 1.0)
    assert pid.update(3.0) == pytest.approx(4.0 + 1.0)
    clock.advance(1.0)
    assert pid.update(1.0) == pytest.approx(0.0 + 3.0)  # P 0, I = 1 + 2 x 1 s
    clock.advance(100.0)
    assert pid.update(50.0) == 10.0                      # clamped to out_max


def test_pid_anti_windup_and_floor_tracking():
    clock = FakeClock()
    pid = PidController(PidGains(kp=1.0, ki=1.0), setpoint=0.0, out_min=0.0, out_max=5.0,
                        clock=clock)
    pid.update(20.0)
    for _ in range(50):                   # saturated high for 50 s: the integral stops
        clock.advance(1.0)
        assert pid.update(20.0) == 5.0
    assert pid.i_term <= 5.0
    clock.advance(1.0)
    pid.update(-1.0)                      # the error turns: the output leaves the clamp
    clock.advance(1.0)
    assert pid.update(-1.0) < 5.0         # at once, not after unwinding 50 s of error
    pid.reset()
    assert pid.update(0.0, floor=3.0) == pytest.approx(3.0)   # tracks the actuator's floor
    clock.advance(10.0)
    assert pid.update(-1.0, floor=3.0) == pytest.approx(2.0)  # I cannot go below, P can


def test_pid_derivative_acts_on_the_measurement():
    clock = FakeClock()
    pid = PidController(PidGains(kp=0.0, ki=0.0, kd=1.0), out_min=-100.0, out_max=100.0,
                        clock=clock)
    assert pid.update(0.0) == 0.0
    clock.advance(0.5)
    assert pid.update(2.0) == pytest.approx(4.0)      # rising 4/s
    pid.setpoint = 50.0                               # no kick from a setpoint change
    clock.advance(0.5)
    assert pid.update(2.0) == pytest.approx(0.0)
    assert pid.update(9.0) == pytest.approx(0.0)      # same instant: no D step
    with pytest.raises(ConfigError):
        PidGains(kp=-1.0)


def test_batch_target_follows_the_queue_and_stays_in_bounds():
    clock = FakeClock()
    c = BatchController(16, clock=clock)
    assert c.min_batch == 2 and c.update(queued=0, in_use=0) == 2    # idle: the floor
    assert c.update(queued=0, in_use=1) == 2     # a lone request never waits for a slot
    assert c.update(queued=3, in_use=2) == 5     # each waiting request: one more at once
    for _ in range(20):                          # a queue that persists winds the target up
        clock.advance(0.5)
        t = c.update(queued=3, in_use=5)
    assert t == 16
    assert c.update(queued=400, in_use=16) == 16
    clock.advance(0.5)
    # the queue empties: the target falls back slowly, never below the slots in use
    held = [c.update(queued=0, in_use=6)]
    for _ in range(40):
        clock.advance(0.5)
        held.append(c.update(queued=0, in_use=6))
    assert held == sorted(held, reverse=True) and held[0] > 6 and held[-1] == 6
    for _ in range(20):
        clock.advance(0.5)
        t = c.update(queued=0, in_use=0)
    assert t == 2
    assert c.update(queued=1, in_use=9) == 10    # busy: one waiting caller gets a slot
    off = BatchController(1, clock=clock)
    assert off.min_batch == 1 and off.update(queued=10, in_use=1) == 1


def test_step_times_interpolate_and_extrapolate_from_measurements():
    st = StepTimes(base_s=0.010, per_row_s=0.002, alpha=0.5)
    assert st.estimate(1) == pytest.approx(0.010) and st.estimate(5) == pytest.approx(0.018)
    st.observe(2, 0.020)
    assert st.estimate(2) == pytest.approx(0.020)
    assert st.estimate(4) == pytest.approx(0.024)    # one point: the prior's slope
    st.observe(8, 0.044)
    assert st.estimate(5) == pytest.approx(0.032)    # between 2 and 8
    assert st.estimate(16) == pytest.approx(0.076)   # beyond: the slope of the last two
    assert st.estimate(1) == pytest.approx(0.016)    # below: the slope of the first two
    st.observe(8, 0.048)                             # EWMA, alpha 0.5
    assert st.estimate(8) == pytest.approx(0.046)
    st.observe(0, 1.0)
    st.observe(3, -1.0)                              # ignored
    assert st.measured() == {2: 0.020, 8: pytest.approx(0.046)}
    pt = PrefillTimes(per_token_s=0.001, alpha=0.5, min_tokens=8)
    assert pt.estimate(4, step_s=0.012) == 0.012      # short prompt: about one step
    assert pt.estimate(100, step_s=0.012) == pytest.approx(0.1)
    pt.observe(4, 1.0)                                 # too short to say the rate
    pt.observe(20, 0.06)
    assert pt.per_token_s == pytest.approx(0.003)      # first observation replaces the prior
    pt.observe(20, 0.02)
    assert pt.per_token_s == pytest.approx(0.002)


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


def test_chunked_prefill_and_prefix_copied_from_another_slot_match_a_full_prefill(model_dir):
    cfg = json.loads((model_dir / "model_config.json").read_text())
    opened = open_session(model_dir / "model.onnx", ["cpu"], 1)
    shared = list(range(3, 53))                       # a 50-token "system prompt"
    a, b = shared + [60, 61, 62], shared + [70, 71, 72, 73]
    fresh = BatchKvRunner(opened, cfg, 96, 1)
    want_b = fresh.prefill(0, b, reuse=False)
    long = [c % 250 + 1 for c in range(100, 180)]    # shares nothing with a or b
    want_long = fresh.prefill(0, long, reuse=False)
    br = BatchKvRunner(opened, cfg, 96, 3)
    br.prefill(0, a)
    assert br.computed == len(a)
    got_b = br.prefill(2, b)                          # slot 2 is empty: copies 50 from slot 0
    assert br.computed == len(b) - len(shared) and br.copied == len(shared)
    np.testing.assert_allclose(got_b, want_b, atol=1e-4)
    assert br.step({2: 5})[2].shape == want_b.shape   # the copied row decodes on
    parts = [br.prefill(1, long, limit=30) for _ in range(3)]   # 30 + 30 + 20 tokens
    assert parts[0] is None and parts[1] is None and br.computed == 20
    np.testing.assert_allclose(parts[2], want_long, atol=1e-4)
    # slot 0's saved prompt no longer holds once its row changed (no stale saved logits)
    want_a = fresh.prefill(0, a, reuse=False)
    assert br.prefill(0, [7] * 40, limit=10) is None and br.lengths[0] == 10
    np.testing.assert_allclose(br.prefill(0, a), want_a, atol=1e-4)
    assert br.computed == 3                              # 50 copied back from slot 2


def test_load_api_of_the_plain_and_the_batching_engine(plain):
    assert (plain.capacity, plain.batch_target, plain.active, plain.queued) == (1, 1, 0, 0)
    "".join(plain.generate(PROMPTS[0], GREEDY))
    assert plain.step_time_s(1) > 0 and plain.step_time_s(8) == plain.step_time_s(1)
    assert plain.prefill_time_s(200) >= plain.prefill_time_s(1) > 0
    eng = BatchingEngine(plain, max_batch=4)
    assert eng.capacity == 4 and eng.batch_target == 2 and eng.active == eng.queued == 0
    assert set(eng.step_times.measured()) == {1, 4}    # calibrated at start
    assert eng.step_time_s(2) > 0 and eng.step_time_s(99) == eng.step_time_s(4)
    assert eng.prefill_time_s(64) > 0
    gen = eng.generate(PROMPTS[0], GREEDY)
    next(gen)
    assert eng.active == 1
    gen.close()
    assert eng.active == 0
    eng.close()


def test_the_batch_target_holds_callers_back_until_the_queue_lifts_it(plain, expected):
    # kp = ki = 0: the target stays at min_batch (2), so a third caller waits for a slot
    eng = BatchingEngine(plain, max_batch=4, gains=PidGains(kp=0.0, ki=0.0))
    first, second = (eng.generate(PROMPTS[i], GREEDY) for i in range(2))
    next(first), next(second)
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append("".join(eng.generate(PROMPTS[2], GREEDY))))
    t.start()
    for _ in range(200):
        if eng.queued:
            break
        threading.Event().wait(0.01)
    assert eng.queued == 1 and eng.active == 2 and eng.batch_target == 2
    first.close()
    t.join(timeout=10)
    assert got == [expected[2]]
    second.close()
    eng.close()
    # default gains: one waiting caller lifts the target at once, so it does not wait
    eng = BatchingEngine(plain, max_batch=4)
    gens = [eng.generate(PROMPTS[i], GREEDY) for i in range(3)]
    for g in gens:
        next(g)
    assert eng.active == 3 and eng.queued == 0 and eng.batch_target >= 3
    for g in gens:
        g.close()
    eng.close()


def test_spin_us_reaches_the_session(model_dir):
    seen = []

    def factory(path, names, threads, cache_dir=None, profiles=None, spin_us=0):
        seen.append(spin_us)
        return open_session(path, ["cpu"], threads, spin_us=spin_us)

    eng = OnnxLlmEngine(model_dir, providers=("cpu",), threads=1, context_tokens=32,
                        spin_us=120, session_factory=factory)
    assert seen == [120] and eng.spin_us == 120
    assert eng._runner.sess.get_session_options().get_session_config_entry(
        "session.intra_op.spin_duration_us") == "120"


@pytest.mark.parametrize("huge,device,calls", [(True, "cpu", 1), (False, "cpu", 0),
                                                (True, "cuda", 0)])
def test_huge_pages_collapse_what_the_cpu_session_mapped(model_dir, monkeypatch, huge, device,
                                                         calls):
    """After the warm-up, the memory mapped since just before the session opened (its
    pre-packed weights) goes to heap.collapse_new; not with ``huge_pages=False``, and not
    for a GPU provider (its weights are on the device)."""
    from edge_runtime import heap

    seen = []
    monkeypatch.setattr(heap, "collapse_new", lambda before: seen.append(before) or 0)
    snapshot = frozenset({1, 2, 3})
    monkeypatch.setattr(heap, "anon_huge_slots", lambda: snapshot)
    factory = failing_factory(0) if device == "cuda" else None
    kw = {"session_factory": factory} if factory else {}
    eng = OnnxLlmEngine(model_dir, providers=(device, "cpu"), threads=1, context_tokens=32,
                        huge_pages=huge, **kw)
    assert eng.device == device
    assert seen == [snapshot] * calls

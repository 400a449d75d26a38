"""The decode loop with a scripted model: stop conditions, cancellation, stats."""
from __future__ import annotations

import numpy as np
import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.llm.decode import Vocabulary, decode_stream, new_stats
from edge_runtime.types import CancelToken, GenerationParams

EOT = 0
WORDS = [b"<|im_end|>", b"Hi", b" there", b".", b" More", b" text", b"!", b"\xc3", b"\xa9"]
VOCAB = Vocabulary(WORDS, frozenset({EOT}), frozenset({EOT}))
GREEDY = GenerationParams(temperature=0.0, repetition_penalty=1.0, max_new_tokens=50,
                          stop_at_sentence=0)


class ScriptedModel:
    """Returns logits that make greedy decoding emit ``script`` token by token."""

    def __init__(self, script: list[int], clock: FakeClock | None = None) -> None:
        self.script = script
        self.calls: list[list[int]] = []
        self.clock = clock

    def __call__(self, ids: list[int], history: list[int]) -> np.ndarray:
        self.calls.append(list(ids))
        if self.clock:
            self.clock.advance(0.01 * len(ids))
        step = len(self.calls) - 1
        z = np.zeros(len(WORDS), np.float32)
        z[self.script[min(step, len(self.script) - 1)]] = 10.0
        return z


def _run(script, params=GREEDY, cancel=None, max_new=50, clock=None):
    clock = clock or FakeClock()
    stats = new_stats(3, "cpu")
    model = ScriptedModel(script, clock)
    out = list(decode_stream(model, [5, 6, 7], params, VOCAB, max_new_tokens=max_new,
                             cancel=cancel, stats=stats, clock=clock))
    return out, stats, model


def test_stops_at_end_of_turn_and_never_prints_it():
    out, stats, model = _run([1, 2, 3, EOT, 4])
    assert "".join(out) == "Hi there."
    assert stats["stop_reason"] == "end_of_turn" and stats["new_tokens"] == 4
    assert model.calls[0] == [5, 6, 7] and all(len(c) == 1 for c in model.calls[1:])


def test_stops_at_max_new_tokens_without_extra_forward():
    out, stats, model = _run([1, 2, 4, 5, 4, 5], max_new=3)
    assert "".join(out) == "Hi there More"
    assert stats["stop_reason"] == "max_new_tokens" and len(model.calls) == 3


def test_stops_after_sentence_cap():
    params = GenerationParams(temperature=0.0, repetition_penalty=1.0, stop_at_sentence=1)
    out, stats, _ = _run([1, 2, 3, 4, 5, 6, EOT], params=params)
    assert "".join(out) == "Hi there."
    assert stats["stop_reason"] == "sentences"


def test_split_character_is_streamed_whole():
    out, _, _ = _run([7, 8, EOT])
    assert out == ["é"]


def test_cancel_before_start_runs_no_model():
    token = CancelToken()
    token.cancel()
    out, stats, model = _run([1, 2, EOT], cancel=token)
    assert out == [] and model.calls == [] and stats["stop_reason"] == "cancelled"


def test_cancel_mid_stream_stops_at_next_token():
    token = CancelToken()
    clock = FakeClock()
    stats = new_stats(3, "cpu")
    model = ScriptedModel([1, 2, 4, 5, 4, 5, 4, 5], clock)
    gen = decode_stream(model, [5], GREEDY, VOCAB, max_new_tokens=50, cancel=token,
                        stats=stats, clock=clock)
    first = next(gen)
    token.cancel()
    rest = list(gen)
    assert first == "Hi" and rest == []
    assert stats["stop_reason"] == "cancelled" and len(model.calls) == 2


def test_stats_use_injected_clock():
    out, stats, _ = _run([1, 2, 3, EOT])
    assert stats["ttft_s"] == pytest.approx(0.03)                    # prefill of 3 tokens x 10 ms
    assert abs(stats["decode_tok_s"] - 100.0) < 1e-6   # 3 more tokens, 10 ms each


def test_seeded_sampling_is_reproducible_through_the_loop():
    params = GenerationParams(temperature=1.5, top_p=1.0, top_k=0, repetition_penalty=1.0,
                              seed=11, stop_at_sentence=0)

    class Flat:
        def __call__(self, ids, history):
            return np.zeros(len(WORDS), np.float32)

    def run():
        return list(decode_stream(Flat(), [1], params, VOCAB, max_new_tokens=20, cancel=None,
                                  stats=new_stats(1, "cpu"), clock=FakeClock()))

    assert run() == run()

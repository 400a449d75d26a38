"""The decode loop, independent of onnxruntime: prefill, sample, stream text, stop.

The repetition penalty sees only the generated tokens, not the prompt: penalising the
prompt pushed SmolLM2 away from words it must echo ("What is the capital of France?" ->
"Le Grand Paris ..." instead of "The capital of France is Paris.").

``feed(ids, history)`` is the model edge: it appends ``ids`` to the KV cache and returns
the logits [V] of the last one (``history`` = every token the cache should hold after the
call, so a provider fallback can replay it). Tests drive the loop with a scripted fake.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ..clock import Clock
from ..types import CancelToken, GenerationParams
from .sampling import Sampler
from .text_stream import SentenceCounter, Utf8StreamDecoder

Feed = Callable[[list[int], list[int]], np.ndarray]


@dataclass(frozen=True)
class Vocabulary:
    """What the loop needs to know about tokens."""

    token_bytes: Sequence[bytes]          # raw bytes per id
    skip_ids: frozenset[int]              # control tokens: never printed
    stop_ids: frozenset[int]              # end of turn / eos

    @property
    def size(self) -> int:
        return len(self.token_bytes)


def new_stats(prompt_tokens: int, device: str) -> dict:
    return {"prompt_tokens": prompt_tokens, "new_tokens": 0, "ttft_s": None,
            "decode_tok_s": None, "stop_reason": "max_new_tokens", "device": device}


def decode_stream(feed: Feed, prompt_ids: list[int], params: GenerationParams, vocab: Vocabulary,
                  *, max_new_tokens: int, cancel: CancelToken | None, stats: dict,
                  clock: Clock) -> Iterator[str]:
    """Yield text pieces. ``stats`` is filled in place: new_tokens, ttft_s (seconds from the
    call to the first sampled token), decode_tok_s, total_s and stop_reason, one of
    end_of_turn | sentences | max_new_tokens | cancelled."""
    t0 = clock.monotonic()
    sampler = Sampler(params, vocab.size)
    decoder = Utf8StreamDecoder(vocab.token_bytes, vocab.skip_ids)
    sentences = SentenceCounter(params.stop_at_sentence)
    history = list(prompt_ids)   # what the KV cache holds (replayed on provider fallback)
    generated: list[int] = []    # the repetition penalty looks at these only
    t_first = None
    try:
        if cancel is not None and cancel.cancelled:
            stats["stop_reason"] = "cancelled"
            return
        logits = feed(list(prompt_ids), history)
        for n in range(max_new_tokens):
            if cancel is not None and cancel.cancelled:
                stats["stop_reason"] = "cancelled"
                return
            tok = sampler.sample(logits, generated)
            if t_first is None:
                t_first = clock.monotonic()
                stats["ttft_s"] = t_first - t0
            stats["new_tokens"] = n + 1
            if tok in vocab.stop_ids:
                stats["stop_reason"] = "end_of_turn"
                break
            history.append(tok)
            generated.append(tok)
            text, stop = sentences.feed(decoder.push(tok))
            if text:
                yield text
            if stop:
                stats["stop_reason"] = "sentences"
                return
            if n + 1 < max_new_tokens:
                logits = feed([tok], history)
        tail = decoder.flush()
        if tail:
            yield tail
    finally:
        t_end = clock.monotonic()
        if t_first is not None and stats["new_tokens"] > 1 and t_end > t_first:
            stats["decode_tok_s"] = (stats["new_tokens"] - 1) / (t_end - t_first)
        stats["total_s"] = t_end - t0

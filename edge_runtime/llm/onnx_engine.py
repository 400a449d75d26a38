"""The local LLM engine: chat template -> prefill -> sampled, streamed decode on onnxruntime.

Threading: an engine is driven from one worker thread at a time (the stage's async adapter
owns that thread). ``generate`` holds an internal lock for the life of its generator, so a
second concurrent caller waits instead of corrupting the shared KV cache.

Load API (the same names as :class:`~edge_runtime.llm.batching.BatchingEngine`'s, for the
scheduler): ``capacity`` = ``batch_target`` = 1, ``active`` (0 or 1), ``queued`` (callers
waiting for the lock), ``step_time_s(batch)`` and ``prefill_time_s(tokens)`` from the
decode steps and prefills this engine measured (priors until then).
"""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from .. import heap
from . import step_ops
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import ModelLoadError, ModelMissingError
from ..types import CancelToken, GenerationParams, Message
from .control import SingleSessionLoad
from .prompt import ChatPrompt, Prompt, as_prompt
from .providers import BUILD_HINT, OpenedSession, available, open_session, trt_profiles
from .decode import Vocabulary, decode_stream, new_stats
from .runner import PREFILL_CHUNK, KvRunner
from .text_stream import byte_level_to_bytes, spm_piece_to_bytes

log = logging.getLogger(__name__)

REQUIRED_FILES = ("model_config.json", "tokenizer.json")
CONFIG_KEYS = ("model_file", "num_layers", "num_key_value_heads", "head_dim", "vocab_size",
               "context_length", "end_of_turn_token_ids")


class OnnxLlmEngine(SingleSessionLoad):
    """Implements :class:`edge_runtime.llm.base.LlmEngine` on onnxruntime.

    ``session_factory`` (default :func:`open_session`) opens the onnxruntime session for a
    provider list; tests pass a fake to make a provider fail at load or mid-generation.

    With ``reuse_prefix`` (default) a prompt that starts like the previous one (the same
    system prompt, the same conversation plus a new turn) keeps that prefix's KV cache and
    prefills only the new tokens (greedy output is unchanged at accuracy_level 1).

    ``context_tokens`` caps the KV cache (memory: layers x 2 x kv_heads x head_dim x 4 bytes
    per token: 45 KiB/token for SmolLM2-135M). ``last_stats`` holds the figures of the
    most recent ``generate``: prompt_tokens, cached_prompt_tokens, new_tokens, ttft_s,
    decode_tok_s, stop_reason, device.
    """

    def __init__(self, model_dir: Path, *, providers: Sequence[str] = ("tensorrt", "cuda", "cpu"),
                 threads: int = 2, model_name: str = "", context_tokens: int = 2048,
                 engine_cache_dir: Path | None = None, clock: Clock = SYSTEM_CLOCK,
                 reuse_prefix: bool = True, max_batch: int = 1, spin_us: int = 0,
                 huge_pages: bool = True, step_ops: Path | None = None,
                 session_factory: Callable[..., OpenedSession] = open_session) -> None:
        self.reuse_prefix = reuse_prefix
        self.step_ops = step_ops
        self.huge_pages = huge_pages
        self._session_factory = session_factory
        self._max_batch = max_batch
        self.model_dir = Path(model_dir)
        self.cfg = _load_config(self.model_dir)
        self.model_name = model_name or self.cfg.get("name", "") or self.model_dir.name
        self.threads = threads
        self.spin_us = int(spin_us)
        self.clock = clock
        self._cache_dir = engine_cache_dir or (self.model_dir / "trt_cache")
        self.max_len = max(8, min(int(context_tokens), int(self.cfg["context_length"])))
        self._tok = _load_tokenizer(self.model_dir)
        vocab = int(self.cfg["vocab_size"])
        skip = frozenset(int(i) for i, t in self._tok.get_added_tokens_decoder().items()
                         if t.special)
        to_bytes = (spm_piece_to_bytes if self.cfg.get("tokenizer_kind") == "spm"
                    else byte_level_to_bytes)
        # id by id (no vocab dicts: for a 262k vocabulary they cost ~35 MB at the load peak)
        id_to_tok = self._tok.id_to_token
        self._vocab = Vocabulary(
            token_bytes=[b"" if i in skip else to_bytes(id_to_tok(i) or "")
                         for i in range(vocab)],
            skip_ids=skip,
            stop_ids=frozenset(int(i) for i in self.cfg["end_of_turn_token_ids"]))
        bos = [int(self.cfg["bos_token_id"])] if self.cfg.get("add_bos_token") else []
        self.prompt = ChatPrompt(self.cfg.get("chat_template", ""),
                                 lambda s: self._tok.encode(s, add_special_tokens=False).ids, bos)
        self._lock = threading.Lock()
        self._init_load()
        self.last_stats: dict = {}
        heap.trim()   # the tokenizer's freed load-time heap, before the session's own peak
        self._runner = self._open(list(providers))

    # -- LlmEngine protocol ----------------------------------------------------------------
    @property
    def device(self) -> str:
        return self._runner.device

    @property
    def providers(self) -> list[str]:
        return list(self._runner.opened.providers)

    def prepare(self, messages: Sequence[Message]) -> Prompt:
        """The request's prompt, templated and tokenized once (see :mod:`.prompt`)."""
        return self.prompt.prepare(messages, self.max_len - 1)

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens the templated prompt takes, capped at the context (longer ones get trimmed)."""
        return self.prepare(messages).tokens

    def generate(self, messages: Sequence[Message], params: GenerationParams,
                 cancel: CancelToken | None = None) -> Iterator[str]:
        """Yield text pieces for a prepared prompt (or messages, prepared here); see the
        class docstring for threading and ``last_stats``."""
        prompt = as_prompt(self.prompt, messages, self.max_len - 1)
        with self._running(self._lock):
            yield from self._generate(prompt, params, cancel)

    # -- internals -------------------------------------------------------------------------
    def _open_session(self, path: Path, names: list[str]) -> OpenedSession:
        """The session of ``path``, or of its step-ops variant when the library is there and
        the CPU runs the model (the ops are CPU kernels); a variant that does not load is
        logged and the plain graph opened."""
        args = (names, self.threads, self._cache_dir,
                trt_profiles(self.cfg, self.max_len, self._max_batch, PREFILL_CHUNK))
        variant = step_ops.variant_of(self.model_dir, self.cfg, self.step_ops) \
            if self.step_ops else None
        if variant is not None and (available(names) or ["cpu"])[0] == "cpu":
            try:
                opened = self._session_factory(variant, *args, spin_us=self.spin_us,
                                               custom_ops=self.step_ops)
                log.debug("LLM decode steps on edge-runtime's kernels (%s)", variant.name)
                return opened
            except ModelLoadError as exc:
                log.warning("the step-ops graph did not load (%s); using %s", exc.message,
                            path.name)
        return self._session_factory(path, *args, spin_us=self.spin_us)

    def _open(self, names: list[str]) -> KvRunner:
        path = self.model_dir / self.cfg["model_file"]
        data = self.cfg.get("external_data_file")
        for f in [path] + ([self.model_dir / data] if data else []):
            if not f.is_file():
                raise ModelMissingError(f"LLM model file missing: {f}", hint=BUILD_HINT)
        while True:
            before = heap.anon_huge_slots() if self.huge_pages else frozenset()
            opened = self._open_session(path, names)
            runner = KvRunner(opened, self.cfg, self.max_len)
            try:
                # warm-up: first-run allocations and weight page-ins happen here, not in the
                # first request's TTFT; a provider that loads but cannot run fails over now
                runner.feed([int(self.cfg.get("bos_token_id", 0))] * 2)
                runner.feed([int(self.cfg.get("bos_token_id", 0))])
                runner.reset()
                if self.huge_pages and runner.device == "cpu":
                    # the session's pre-packed weights on 2 MB pages (see heap.collapse_new)
                    mb = heap.collapse_new(before) >> 20
                    log.debug("LLM session memory on 2 MB pages: %d MB", mb)
                if data and runner.device == "cpu":
                    # what stays mapped of the weight file (the token table, read a few rows
                    # a token) need not stay resident; it stays in the page cache, so a row
                    # read later is no disk read (see heap.release_file_pages):
                    # SmolLM2-135M's RSS after 114 tokens 263 instead of 282 MB
                    mb = heap.release_file_pages(str((self.model_dir / data).resolve())) >> 20
                    log.debug("LLM weight file: %d MB of mappings released", mb)
                return runner
            except Exception as exc:  # onnxruntime raises its own RuntimeException types
                if not opened.remaining:
                    raise ModelLoadError(f"LLM warm-up failed on {opened.device}: {exc}",
                                         hint=BUILD_HINT) from exc
                log.warning("LLM provider %s failed its warm-up run (%s); trying %s",
                            opened.device, exc, opened.remaining[0])
                names = opened.remaining

    def _fallback(self, exc: Exception) -> None:
        remaining = self._runner.opened.remaining
        log.warning("LLM provider %s failed at run time (%s); falling back to %s",
                    self.device, exc, remaining[0] if remaining else "nothing")
        if not remaining:
            raise ModelLoadError(f"LLM failed on {self.device}: {exc}", hint=BUILD_HINT) from exc
        self._runner = self._open(remaining)

    def _feed(self, ids: list[int], history: list[int]):
        """Feed ``ids``; on a provider failure reopen on the next one and replay ``history``
        (all tokens the cache should hold afterwards). The prompt (the call where ``ids``
        is the whole history) keeps the prefix the cache shares with it."""
        while True:
            try:
                t0 = self.clock.monotonic()
                if len(ids) == len(history) and self.reuse_prefix:
                    logits = self._runner.feed_prompt(ids)
                    self.last_stats["cached_prompt_tokens"] = self._runner.reused
                    computed = len(ids) - self._runner.reused
                else:
                    logits = self._runner.feed(ids)
                    computed = len(ids)
                dt = self.clock.monotonic() - t0
                if len(ids) == 1 and len(history) > 1:
                    self._step_times.observe(1, dt)
                elif computed:
                    self._prefill_times.observe(computed, dt)
                return logits
            except (ValueError, MemoryError):
                raise
            except Exception as exc:  # onnxruntime raises its own RuntimeException types
                self._fallback(exc)
                self._runner.reset()
                ids = history

    def _generate(self, prompt: Prompt, params: GenerationParams,
                  cancel: CancelToken | None) -> Iterator[str]:
        max_new = max(1, min(params.max_new_tokens, self.max_len - 1))
        budget = max(self.max_len - max_new, min(self.max_len - 1, self.max_len // 4))
        ids, dropped = self.prompt.fit_prompt(prompt, budget)
        stats = new_stats(len(ids), self.device)
        stats["dropped_messages"] = dropped
        self.last_stats = stats
        if not self.reuse_prefix:
            self._runner.reset()
        try:
            yield from decode_stream(self._feed, ids, params, self._vocab,
                                     max_new_tokens=min(max_new, self.max_len - len(ids)),
                                     cancel=cancel, stats=stats, clock=self.clock)
        finally:
            stats["device"] = self.device
            log.debug("llm stats %s", stats)


def _load_config(model_dir: Path) -> dict:
    if not model_dir.is_dir():
        raise ModelMissingError(f"LLM model directory not found: {model_dir}", hint=BUILD_HINT)
    missing = [f for f in REQUIRED_FILES if not (model_dir / f).is_file()]
    if missing:
        raise ModelMissingError(f"LLM model files missing in {model_dir}: {missing}",
                                hint=BUILD_HINT)
    try:
        cfg = json.loads((model_dir / "model_config.json").read_text())
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"model_config.json in {model_dir} is unreadable: {exc}",
                             hint=BUILD_HINT) from exc
    bad = [k for k in CONFIG_KEYS if k not in cfg]
    if bad:
        raise ModelLoadError(f"model_config.json in {model_dir} lacks {bad}", hint=BUILD_HINT)
    return cfg


def _load_tokenizer(model_dir: Path):
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    except Exception as exc:  # tokenizers raises a plain Exception on bad JSON
        raise ModelLoadError(f"tokenizer.json in {model_dir} is unreadable: {exc}",
                             hint=BUILD_HINT) from exc


def load_engine(model_dir: Path, *, providers: Sequence[str] = ("tensorrt", "cuda", "cpu"),
                threads: int = 2, model_name: str = "", context_tokens: int = 2048,
                engine_cache_dir: Path | None = None, max_batch: int = 1,
                batch_context_tokens: int = 1024, reuse_prefix: bool = True, spin_us: int = 0,
                huge_pages: bool = True, step_ops: Path | None = None):
    """Open the model built by ``edge-runtime models build`` in ``model_dir``.

    ``max_batch`` > 1 returns a :class:`~edge_runtime.llm.batching.BatchingEngine` (same
    interface, safe to call from many threads; concurrent sessions decode in batched steps
    of up to ``max_batch`` rows, 1..16; each session's prompt + answer is capped at
    ``batch_context_tokens``, and the KV memory is up to max_batch x batch_context_tokens x
    45 KiB for SmolLM2-135M); 0 or 1 returns the plain engine (``llm.max_batch = 0``, "the
    device profile's", is resolved by the caller: :meth:`DeviceProfile.llm_max_batch`).
    Raises ModelMissingError (files absent) or
    ModelLoadError (corrupt or mismatched files); both carry a hint naming
    ``edge-runtime models build``. ``spin_us`` (``llm.spin_us``): the session's intra-op
    threads busy-wait up to that long for the next op (0: they sleep; see
    :func:`edge_runtime.onnx_session.spin_entries`). ``huge_pages`` (``llm.huge_pages``):
    back the CPU session's weights with 2 MB pages after loading (:func:`heap.collapse_new`).
    ``step_ops`` (``llm.step_ops``): the library of :mod:`.step_ops`; a decode step of a CPU
    session runs the model's step-ops variant (when ``models build`` made one).
    """
    engine = OnnxLlmEngine(Path(model_dir), providers=providers, threads=threads,
                           model_name=model_name, context_tokens=context_tokens,
                           engine_cache_dir=engine_cache_dir, reuse_prefix=reuse_prefix,
                           max_batch=max_batch, spin_us=spin_us, huge_pages=huge_pages,
                           step_ops=step_ops)
    if max_batch <= 1:
        return engine
    from .batching import BatchingEngine

    return BatchingEngine(engine, max_batch=max_batch,
                          context_tokens=min(context_tokens, batch_context_tokens))

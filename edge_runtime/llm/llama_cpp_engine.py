"""A faithful fallback for GGUFs the ONNX builder cannot convert (e.g. Gemma 3 with Q4_K /
Q5_0 / Q6_K blocks): the same LlmEngine, decode loop, sampler, prompt fitting, streaming
and stop rules as :class:`OnnxLlmEngine`; only the model call is llama.cpp
(llama-cpp-python, an optional dependency), which runs every GGUF block type natively.

The KV cache keeps the prefix a new prompt shares with the previous one (as the ONNX
engine does). CPU only here; llama.cpp's own GPU offload is not wired.
"""
from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import ModelLoadError, ModelMissingError
from ..types import CancelToken, GenerationParams, Message
from .control import SingleSessionLoad
from .decode import Vocabulary, decode_stream, new_stats
from .prompt import ChatPrompt, Prompt, as_prompt

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install llama-cpp-python (the local GGUF fallback backend)"
GEMMA_TEMPLATE = (  # Gemma has no system role: the system text goes in a user turn
    "{% for m in messages %}{% set role = 'model' if m['role'] == 'assistant' else 'user' %}"
    "{{ '<start_of_turn>' + role + '\n' + m['content'] + '<end_of_turn>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}")
END_OF_TURN = ("<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|endoftext|>")


def without_amx() -> bool:
    """On a CPU with AMX, make llama.cpp load weights without its extra buffer types.

    llama.cpp's AMX path repacks the weights at load and segfaults in the first matrix
    product on some AMX CPUs (ggml-org/llama.cpp#20824; seen here on a Sapphire Rapids
    class Xeon with llama-cpp-python 0.3.36). Every ``Llama`` made afterwards in this
    process (the engine's, llama_cpp.server's) then loads with ``use_extra_bufts`` off,
    the plain CPU kernels. Elsewhere nothing changes (repacking stays on). True when
    the switch is in effect.
    """
    import llama_cpp.llama_cpp as lib

    if hasattr(lib.llama_model_default_params, "edge_plain"):
        return True                      # switched already
    if b"AMX_INT8 = 1" not in lib.llama_print_system_info():
        return False
    default = lib.llama_model_default_params

    def params():
        out = default()
        out.use_extra_bufts = False
        return out

    # (the defaults as loaded, kept on the switch)
    params.edge_plain = default  # type: ignore[attr-defined]
    lib.llama_model_default_params = params
    log.info("llama.cpp: AMX CPU, weights loaded without extra buffer types "
             "(llama.cpp#20824)")
    return True


class LlamaCppEngine(SingleSessionLoad):
    """Implements :class:`edge_runtime.llm.base.LlmEngine` on llama.cpp for one GGUF file.

    ``threads``: llama.cpp threads (set OMP_WAIT_POLICY=PASSIVE on a shared box: its
    OpenMP threads otherwise spin). ``context_tokens`` caps prompt + answer. The load API
    (``capacity`` 1, ``step_time_s``, ``prefill_time_s`` ...) is the plain ONNX engine's.
    """

    def __init__(self, gguf_path: Path, *, threads: int = 2, model_name: str = "",
                 context_tokens: int = 2048, chat_template: str | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ModelLoadError("llama-cpp-python is not installed", hint=INSTALL_HINT)
        import llama_cpp

        path = Path(gguf_path)
        if not path.is_file():
            raise ModelMissingError(f"GGUF model not found: {path}",
                                    hint="run `edge-runtime models pull`")
        self._lib = llama_cpp
        without_amx()
        try:
            # flash attention: the same maths, faster on the CPU (measured here, 2 threads,
            # interleaved: decode +7 % SmolLM2-135M, +4 % Gemma 3 270M, first token -5/-10 %)
            self._llm = llama_cpp.Llama(str(path), n_threads=threads, n_threads_batch=threads,
                                        n_ctx=int(context_tokens), verbose=False,
                                        flash_attn=True)
        except (ValueError, RuntimeError) as exc:
            raise ModelLoadError(f"llama.cpp cannot load {path.name}: {exc}",
                                 hint="check the file (sha256) or pull it again") from exc
        meta = self._llm.metadata
        self.model_name = model_name or meta.get("general.name", path.stem)
        self.max_len = self._llm.n_ctx()
        self.clock = clock
        self.last_stats: dict = {}
        self._lock = threading.Lock()
        self._init_load()
        n_vocab = self._llm.n_vocab()
        vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
        control = frozenset(i for i in range(n_vocab)
                            if llama_cpp.llama_vocab_is_control(vocab, i))
        pieces = [b"" if i in control else self._llm.detokenize([i]) for i in range(n_vocab)]
        stops = {self._llm.token_eos()}
        for name in END_OF_TURN:
            ids = self._llm.tokenize(name.encode(), add_bos=False, special=True)
            if len(ids) == 1:
                stops.add(ids[0])
        self._vocab = Vocabulary(pieces, control, frozenset(stops))
        template = chat_template or meta.get("tokenizer.chat_template") or (
            GEMMA_TEMPLATE if meta.get("general.architecture", "").startswith("gemma") else "")
        bos = [self._llm.token_bos()] if meta.get("tokenizer.ggml.add_bos_token",
                                                  "true") == "true" else []
        self.prompt = ChatPrompt(template, self._encode, bos)
        self._cached: list[int] = []     # the tokens llama.cpp's KV cache holds
        self._saved: tuple[list[int], np.ndarray] | None = None   # last prompt, its logits

    # -- LlmEngine protocol ------------------------------------------------------------------
    @property
    def device(self) -> str:
        return "cpu"

    @property
    def providers(self) -> list[str]:
        return ["llama.cpp"]

    def prepare(self, messages: Sequence[Message]) -> Prompt:
        """The request's prompt, templated and tokenized once (see :mod:`.prompt`)."""
        return self.prompt.prepare(messages, self.max_len - 1)

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        return self.prepare(messages).tokens

    def generate(self, messages: Sequence[Message], params: GenerationParams,
                 cancel: CancelToken | None = None) -> Iterator[str]:
        prompt = as_prompt(self.prompt, messages, self.max_len - 1)
        with self._running(self._lock):
            max_new = max(1, min(params.max_new_tokens, self.max_len - 1))
            ids, dropped = self.prompt.fit_prompt(prompt, max(self.max_len - max_new,
                                                              self.max_len // 4))
            stats = new_stats(len(ids), self.device)
            stats["dropped_messages"] = dropped
            self.last_stats = stats
            yield from decode_stream(self._timed_feed, ids, params, self._vocab,
                                     max_new_tokens=min(max_new, self.max_len - len(ids)),
                                     cancel=cancel, stats=stats, clock=self.clock)

    # -- internals ---------------------------------------------------------------------------
    def _encode(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def _timed_feed(self, ids: list[int], history: list[int]) -> np.ndarray:
        """:meth:`_feed`, timed for the load API."""
        t0 = self.clock.monotonic()
        logits = self._feed(ids, history)
        dt = self.clock.monotonic() - t0
        if len(ids) == 1 and len(history) > 1:
            self._step_times.observe(1, dt)
        else:
            self._prefill_times.observe(len(ids) - self.last_stats.get("cached_prompt_tokens", 0),
                                        dt)
        return logits

    def _feed(self, ids: list[int], history: list[int]) -> np.ndarray:
        llm = self._llm
        prompt = len(ids) == len(history)
        if prompt and self._saved is not None and self._saved[0] == ids \
                and self._cached[:len(ids)] == ids and llm.n_tokens >= len(ids):
            # the same prompt again: the logits saved then (a repeat decodes identically)
            llm.n_tokens = len(ids)
            self._cached = self._cached[:len(ids)]
            self.last_stats["cached_prompt_tokens"] = len(ids)
            return self._saved[1].copy()
        if prompt:                            # keep the prefix shared with the cache
            keep = 0
            limit = min(len(ids) - 1, len(self._cached), llm.n_tokens)
            while keep < limit and self._cached[keep] == ids[keep]:
                keep += 1
            llm.n_tokens = keep               # eval() drops the cache past n_tokens
            self._cached = self._cached[:keep]
            self.last_stats["cached_prompt_tokens"] = keep
            ids = ids[keep:]
        llm.eval(ids)
        self._cached.extend(ids)
        ptr = self._lib.llama_get_logits_ith(llm.ctx, -1)
        logits = np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()
        if prompt:
            self._saved = (list(history), logits.copy())
        return logits

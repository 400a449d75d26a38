"""One onnxruntime session plus its pre-allocated KV cache, driven through IOBinding.

The KV cache is one [1, kv_heads, max_len, head_dim] buffer per layer and kind, bound as
both ``past_key_values.i.*`` and ``present.i.*``: GroupQueryAttention appends in place, so
decoding a token copies no cache and allocates nothing. ``input_ids``, ``position_ids`` and
``attention_mask`` are bound by pointer into pre-allocated numpy arrays that are updated in
place; logits are written straight into a pre-allocated host buffer.
"""
from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..errors import ModelLoadError
from .providers import BUILD_HINT, OpenedSession

log = logging.getLogger(__name__)

PREFILL_CHUNK = 64  # tokens per prefill call; bounds the [1, chunk, V] logits buffer


def kv_dtype(cfg: dict) -> type:
    """numpy dtype of the model's KV cache (model_config.json ``kv_cache_dtype``)."""
    name = cfg.get("kv_cache_dtype", "float32")
    if name not in ("float32", "float16"):
        raise ModelLoadError(f"model_config.json kv_cache_dtype {name!r} is not supported "
                             "(float32, float16)", hint=BUILD_HINT)
    return np.float16 if name == "float16" else np.float32


def kv_device(cfg: dict, device: str) -> str:
    """Where the KV cache lives: on the GPU for the fp16 variant under CUDA / TensorRT
    (their GroupQueryAttention appends in place there), else in host memory (an fp32
    model's attention runs on the CPU provider on every device)."""
    return "cuda" if kv_dtype(cfg) == np.float16 and device in ("cuda", "tensorrt") else "cpu"


def check_io(sess: Any, n_layers: int) -> None:
    """Raise ModelLoadError unless ``sess`` has the KV-cache graph's inputs and outputs."""
    ins = {i.name for i in sess.get_inputs()}
    outs = {o.name for o in sess.get_outputs()}
    need_in = {"input_ids", "attention_mask", "position_ids"} | {
        f"past_key_values.{i}.{k}" for i in range(n_layers) for k in ("key", "value")}
    need_out = {"logits"} | {f"present.{i}.{k}" for i in range(n_layers)
                             for k in ("key", "value")}
    if not need_in <= ins or not need_out <= outs:
        missing = sorted((need_in - ins) | (need_out - outs))[:4]
        raise ModelLoadError(f"model.onnx does not match model_config.json (missing {missing})",
                             hint=BUILD_HINT)


class KvRunner:
    """Feeds tokens to the decoder and returns the logits of the last one (a view into a
    buffer reused by the next call: copy it if you need it later)."""

    def __init__(self, opened: OpenedSession, cfg: dict, max_len: int) -> None:
        import onnxruntime as ort

        self.opened = opened
        self.sess = opened.session
        self.device = opened.device
        self.max_len = int(max_len)
        self.n_layers = int(cfg["num_layers"])
        self.vocab = int(cfg["vocab_size"])
        self.last_only = cfg.get("logits", "all") == "last"   # logits [1,1,V] vs [1,S,V]
        check_io(self.sess, self.n_layers)
        # The KV cache: fp32 models keep it in host memory on every provider (their
        # GroupQueryAttention has no CUDA kernel, fp16/bf16 only, so it runs on the CPU EP and
        # host buffers keep the in-place shared past/present update); the fp16 variant
        # (``models build --precision fp16``) keeps it on the GPU when CUDA/TensorRT runs it.
        self.kv_dtype = kv_dtype(cfg)
        self.kv_device = kv_device(cfg, self.device)
        shape = [1, int(cfg["num_key_value_heads"]), self.max_len, int(cfg["head_dim"])]
        self.kv = [tuple(ort.OrtValue.ortvalue_from_shape_and_type(shape, self.kv_dtype,
                                                                   self.kv_device, 0)
                         for _ in range(2)) for _ in range(self.n_layers)]
        self._ids = np.zeros((1, PREFILL_CHUNK), np.int64)
        self._pos = np.arange(self.max_len, dtype=np.int64).reshape(1, -1)
        self._mask = np.ones((1, self.max_len), np.int64)
        self._logits = np.zeros((1, PREFILL_CHUNK, self.vocab), np.float32)
        self._pos1 = np.zeros((1, 1), np.int64)   # a decode step's position, bound once
        # the buffers' addresses, taken once: right after a run (its weights have evicted
        # the caches) each `.ctypes.data` cost ~35 us, each bind_input ~30 us
        self._ptr = {name: arr.ctypes.data for name, arr in (
            ("ids", self._ids), ("pos", self._pos), ("pos1", self._pos1),
            ("mask", self._mask), ("logits", self._logits))}
        self._bound_pos = 0
        # onnxruntime copies a bound input to the device of the node that reads it when it
        # is bound (IOBinding::BindInput), not at each run: a host buffer bound once and
        # written later reaches only CPU kernels, so on a GPU provider the token and its
        # position are bound again at every call (the CPU keeps the bound-once buffers)
        self._rebind = self.device != "cpu"
        self.length = 0  # tokens currently in the cache
        self.tokens: list[int] = []  # the ids the cache holds (for prefix reuse)
        self.reused = 0              # prompt tokens the last feed_prompt kept from the cache
        self._prompt: tuple[list[int], np.ndarray] | None = None  # last prompt, its logits
        self._io = self.sess.io_binding()
        # logits first: outputs come back in binding order
        self._bind_logits(1)
        for i, (k, v) in enumerate(self.kv):
            self._io.bind_ortvalue_input(f"past_key_values.{i}.key", k)
            self._io.bind_ortvalue_input(f"past_key_values.{i}.value", v)
            self._io.bind_ortvalue_output(f"present.{i}.key", k)
            self._io.bind_ortvalue_output(f"present.{i}.value", v)
        self._bound_s = 0   # tokens per call the inputs are bound for (0: none yet)

    def _bind_logits(self, s: int) -> None:
        self._io.bind_output("logits", "cpu", 0, np.float32,
                             [1, 1 if self.last_only else s, self.vocab], self._ptr["logits"])

    def _bind_step(self, s: int, start: int) -> None:
        """Bind the inputs of a call feeding ``s`` tokens after ``start``; a decode step
        (s = 1 again) rebinds only the attention mask, whose length grows: on the CPU the
        token and its position are written into buffers bound once."""
        io, ptr = self._io, self._ptr
        again = self._rebind
        if s != self._bound_s or again:
            self._bind_logits(s)
            io.bind_input("input_ids", "cpu", 0, np.int64, [1, s], ptr["ids"])
            self._bound_s = s
            self._bound_pos = 0
        if s == 1:
            self._pos1[0, 0] = start
            pos = ptr["pos1"]
        else:
            pos = ptr["pos"] + start * 8
        if pos != self._bound_pos or again:
            io.bind_input("position_ids", "cpu", 0, np.int64, [1, s], pos)
            self._bound_pos = pos
        io.bind_input("attention_mask", "cpu", 0, np.int64, [1, start + s], ptr["mask"])

    def reset(self) -> None:
        self.length = 0
        self.tokens = []
        self._prompt = None

    def feed_prompt(self, ids: Any) -> np.ndarray:
        """Make the cache hold exactly ``ids``: keep the prefix it shares with what the cache
        holds (a system prompt, earlier turns of the conversation) and feed only the rest
        (at least one token, for fresh logits). Returns the logits [V] of the last token.

        The same prompt as last time returns the logits saved then, without a model call:
        a repeated request decodes exactly as the first time (recomputing only the last
        token would round differently from the full prefill at accuracy_level 4)."""
        ids = [int(t) for t in ids]
        n = len(ids)
        if self._prompt is not None and self._prompt[0] == ids and self.length >= n:
            self.length = self.reused = n
            del self.tokens[n:]
            return self._prompt[1]
        keep = 0
        limit = min(n - 1, self.length)
        while keep < limit and self.tokens[keep] == ids[keep]:
            keep += 1
        self.length = keep
        self.reused = keep
        del self.tokens[keep:]
        logits = self.feed(ids[keep:])
        self._prompt = (ids, logits.copy())
        return logits

    def feed(self, ids: Any) -> np.ndarray:
        """Append ``ids`` (one or more tokens) to the cache; return logits [V] of the last."""
        n = len(ids)
        if n == 0:
            raise ValueError("feed() needs at least one token")
        if self.length + n > self.max_len:
            raise ValueError(f"KV cache full: {self.length} + {n} > {self.max_len} tokens")
        done = 0
        while done < n:
            s = min(PREFILL_CHUNK, n - done)
            self._ids[0, :s] = ids[done:done + s]
            self._bind_step(s, self.length)
            self.sess.run_with_iobinding(self._io)
            self.length += s
            self.tokens.extend(map(int, ids[done:done + s]))
            done += s
        return self._logits[0, 0 if self.last_only else s - 1]

"""A KV cache with one row per concurrent session, decoded together in batched steps.

Each of the ``max_batch`` slots owns row ``slot`` of one [max_batch, kv_heads, max_len + 1,
head_dim] buffer per layer and kind. GroupQueryAttention takes per-row ``seqlens_k`` (the
graph derives them from the attention mask: row i holds ``length_i + 1`` ones), so rows of
different lengths decode in one call, each appending in place at its own position. A
prompt is prefilled for one slot alone by binding that row's memory ([1, ...], a pointer
into the same buffer). The extra position at the end is scratch for rows that ride along
in a batch without a token of their own (their write lands past their valid data).

Each slot remembers the tokens its cache holds: a new prompt that starts like the slot's
previous one (the system prompt, earlier turns) reuses that prefix and prefills only the
rest. When another slot holds a longer common prefix (a burst of new sessions with the same
system prompt), those positions are copied from its row (45 KiB per token, a memcpy)
instead of computed: the KV of a position depends only on the tokens up to it. A prefill
may stop after ``limit`` new tokens and resume on the next call (the slot keeps what it
computed), so the engine can run decode steps between the chunks of a long prompt.
Buffers are ``np.zeros`` (pages committed as rows fill; 45 KiB per token per slot for
SmolLM2-135M); the fp16 variant under CUDA / TensorRT keeps them on the GPU (rows bound by
device pointer; a prefix another slot holds is then recomputed, not copied).

Batched prefill was measured and left out: GroupQueryAttention takes several rows of more
than one token only as a first prompt (no past; onnxruntime refuses batch > 1 with a past
and sequence length > 1), so it cannot reuse a cached system prompt, and the graph's
last-position logits need right-padded rows to end together. On the 2-core x86 box a
burst of 8 cold 44-token prompts took 412 ms in one [8, 44] call against 480 ms one by one
(prefill is compute-bound there), while reusing a shared system prompt took 175 ms.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from .providers import OpenedSession
from .runner import PREFILL_CHUNK, check_io, kv_device, kv_dtype

log = logging.getLogger(__name__)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class BatchKvRunner:
    """Slots 0..max_batch-1, each with its own cache row; not thread-safe (one driver)."""

    def __init__(self, opened: OpenedSession, cfg: dict, max_len: int, max_batch: int) -> None:
        self.opened = opened
        self.sess = opened.session
        self.device = opened.device
        self.max_len = int(max_len)
        self.max_batch = int(max_batch)
        self.n_layers = int(cfg["num_layers"])
        self.vocab = int(cfg["vocab_size"])
        self.last_only = cfg.get("logits", "all") == "last"
        check_io(self.sess, self.n_layers)  # same graph contract as the single-session runner
        self._cap = self.max_len + 1   # + scratch position
        kvh, hd = int(cfg["num_key_value_heads"]), int(cfg["head_dim"])
        self._row_shape = [kvh, self._cap, hd]
        self._kv_dtype = kv_dtype(cfg)      # fp16 for the fp16 variant
        self.kv_device = kv_device(cfg, self.device)   # its GPU runs: device buffers
        self._row_bytes = kvh * self._cap * hd * np.dtype(self._kv_dtype).itemsize
        full = (self.max_batch, kvh, self._cap, hd)
        if self.kv_device == "cpu":
            self.kv: list[tuple[Any, Any]] = [
                (np.zeros(full, self._kv_dtype), np.zeros(full, self._kv_dtype))
                for _ in range(self.n_layers)]
            self._kv_ptrs = [(k.ctypes.data, v.ctypes.data) for k, v in self.kv]
        else:
            import onnxruntime as ort

            self.kv = [tuple(ort.OrtValue.ortvalue_from_shape_and_type(
                list(full), self._kv_dtype, self.kv_device, 0) for _ in range(2))
                for _ in range(self.n_layers)]
            self._kv_ptrs = [(k.data_ptr(), v.data_ptr()) for k, v in self.kv]
        self.lengths = [0] * self.max_batch
        self.tokens: list[list[int]] = [[] for _ in range(self.max_batch)]
        self._prompts: list[tuple[list[int], np.ndarray] | None] = [None] * self.max_batch
        self._ids = np.zeros((max(PREFILL_CHUNK, self.max_batch),), np.int64)
        self._pos = np.zeros((max(PREFILL_CHUNK, self.max_batch),), np.int64)
        self._mask = np.zeros((self.max_batch * self._cap,), np.int64)
        self._logits = np.zeros((max(PREFILL_CHUNK, self.max_batch) * self.vocab,), np.float32)
        self._binds: dict[tuple[str, int], object] = {}
        self.computed = 0   # tokens the last prefill() ran through the model
        self.copied = 0     # prompt tokens copied from other slots so far

    # -- bindings ----------------------------------------------------------------------------
    def _binding(self, kind: str, n: int):
        """IOBinding with the KV buffers bound: ("step", B) = rows 0..B-1, ("row", s) = row s."""
        key = (kind, n)
        io = self._binds.get(key)
        if io is None:
            io = self.sess.io_binding()
            first, rows = (0, n) if kind == "step" else (n, 1)
            shape = [rows] + self._row_shape
            io.bind_output("logits", "cpu", 0, np.float32, [rows, 1, self.vocab],
                           self._logits.ctypes.data)
            dev = self.kv_device
            for i, (k, v) in enumerate(self._kv_ptrs):
                for name, base in (("key", k), ("value", v)):
                    ptr = base + first * self._row_bytes
                    io.bind_input(f"past_key_values.{i}.{name}", dev, 0, self._kv_dtype,
                                  shape, ptr)
                    io.bind_output(f"present.{i}.{name}", dev, 0, self._kv_dtype, shape,
                                   ptr)
            self._binds[key] = io
        return io

    # -- operations --------------------------------------------------------------------------
    def prefill(self, slot: int, ids: Sequence[int], reuse: bool = True,
                limit: int | None = None) -> np.ndarray | None:
        """Make ``slot`` hold exactly ``ids``; reuse the longest common prefix held by this
        slot or (copied) by another one, unless ``reuse`` is False, and run the rest.
        Returns a copy of the last logits [V]; None when ``limit`` new tokens were run and
        some are left (call again to go on). ``computed`` is set to the tokens run."""
        n = len(ids)
        self.computed = 0
        if n == 0:
            raise ValueError("prefill() needs at least one token")
        if n > self.max_len:
            raise ValueError(f"prompt of {n} tokens exceeds the {self.max_len}-token context")
        ids = [int(t) for t in ids]
        saved = self._prompts[slot]
        if reuse and saved is not None and saved[0] == ids and self.lengths[slot] >= n:
            # the same prompt again: its saved logits (exactly what the full prefill gave)
            self.lengths[slot] = n
            del self.tokens[slot][n:]
            return saved[1].copy()
        self._prompts[slot] = None      # the row changes: its saved prompt no longer holds
        keep = min(common_prefix(self.tokens[slot], ids), n - 1) if reuse else 0
        self.lengths[slot] = keep
        del self.tokens[slot][keep:]
        if reuse:
            keep = self._copy_prefix(slot, ids, keep)
        io = self._binding("row", slot)
        done = keep
        budget = n - keep if limit is None else max(1, int(limit))
        while done < n and self.computed < budget:
            s = min(PREFILL_CHUNK, n - done, budget - self.computed)
            start = self.lengths[slot]
            self._ids[:s] = ids[done:done + s]
            self._pos[:s] = np.arange(start, start + s)
            self._mask[:start + s] = 1
            io.bind_input("input_ids", "cpu", 0, np.int64, [1, s], self._ids.ctypes.data)
            io.bind_input("position_ids", "cpu", 0, np.int64, [1, s], self._pos.ctypes.data)
            io.bind_input("attention_mask", "cpu", 0, np.int64, [1, start + s],
                          self._mask.ctypes.data)
            rows = 1 if self.last_only else s
            io.bind_output("logits", "cpu", 0, np.float32, [1, rows, self.vocab],
                           self._logits.ctypes.data)
            self.sess.run_with_iobinding(io)
            self.lengths[slot] += s
            self.tokens[slot].extend(ids[done:done + s])
            done += s
            self.computed += s
        if done < n:
            return None
        last = 0 if self.last_only else s - 1
        logits = self._logits[last * self.vocab:(last + 1) * self.vocab].copy()
        self._prompts[slot] = (ids, logits.copy())
        return logits

    def _copy_prefix(self, slot: int, ids: list[int], keep: int) -> int:
        """Copy the longest prefix of ``ids`` (beyond ``keep``, at most ``len(ids) - 1``)
        that another slot holds into ``slot``'s row; returns the new valid length."""
        best, src = keep, -1
        for other in range(self.max_batch):
            if other != slot and self.lengths[other] > best:
                k = min(common_prefix(self.tokens[other], ids), len(ids) - 1)
                if k > best:
                    best, src = k, other
        if src < 0 or self.kv_device != "cpu":   # GPU rows: recomputed, not copied
            return keep
        for k_buf, v_buf in self.kv:
            k_buf[slot, :, keep:best] = k_buf[src, :, keep:best]
            v_buf[slot, :, keep:best] = v_buf[src, :, keep:best]
        self.tokens[slot].extend(ids[keep:best])
        self.lengths[slot] = best
        self.copied += best - keep
        return best

    def step(self, feeds: dict[int, int]) -> dict[int, np.ndarray]:
        """One batched decode step: append token ``feeds[slot]`` to each listed slot.

        Runs rows 0..max(slot); rows without a token ride along writing into scratch.
        Returns {slot: logits [V] (a copy)}."""
        if not feeds:
            return {}
        b = max(feeds) + 1
        for slot in feeds:
            if self.lengths[slot] >= self.max_len:
                raise ValueError(f"KV cache full in slot {slot}: {self.max_len} tokens")
        total = max(self.lengths[r] for r in range(b)) + 1
        mask = self._mask[:b * total].reshape(b, total)
        mask[:] = 0
        for r in range(b):
            length = self.lengths[r] if r in feeds else min(self.lengths[r], self.max_len)
            self._ids[r] = feeds.get(r, 0)
            self._pos[r] = length
            mask[r, :length + 1] = 1
        io = self._binding("step", b)
        io.bind_input("input_ids", "cpu", 0, np.int64, [b, 1], self._ids.ctypes.data)
        io.bind_input("position_ids", "cpu", 0, np.int64, [b, 1], self._pos.ctypes.data)
        io.bind_input("attention_mask", "cpu", 0, np.int64, [b, total], mask.ctypes.data)
        self.sess.run_with_iobinding(io)
        out = {}
        for slot, tok in feeds.items():
            self.lengths[slot] += 1
            self.tokens[slot].append(int(tok))
            out[slot] = self._logits[slot * self.vocab:(slot + 1) * self.vocab].copy()
        return out

    def forget(self, slot: int) -> None:
        """Drop what ``slot`` holds (its cache is stale, e.g. after a provider switch)."""
        self.lengths[slot] = 0
        self.tokens[slot] = []
        self._prompts[slot] = None

    def best_slot(self, free: Sequence[int], ids: Sequence[int]) -> int:
        """The free slot whose cached tokens share the longest prefix with ``ids``
        (ties: the lowest slot, which keeps batches dense)."""
        return max(sorted(free), key=lambda s: (common_prefix(self.tokens[s], ids), -s))

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
rest. Buffers are ``np.zeros`` (pages committed as rows fill; 45 KiB per token per slot for
SmolLM2-135M).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from .providers import OpenedSession
from .runner import PREFILL_CHUNK, KvRunner

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
        KvRunner._check_io(self, cfg)  # same graph contract as the single-session runner
        self._cap = self.max_len + 1   # + scratch position
        kvh, hd = int(cfg["num_key_value_heads"]), int(cfg["head_dim"])
        self._row_shape = [kvh, self._cap, hd]
        self._row_bytes = kvh * self._cap * hd * 4
        self.kv = [(np.zeros((self.max_batch, kvh, self._cap, hd), np.float32),
                    np.zeros((self.max_batch, kvh, self._cap, hd), np.float32))
                   for _ in range(self.n_layers)]
        self.lengths = [0] * self.max_batch
        self.tokens: list[list[int]] = [[] for _ in range(self.max_batch)]
        self._prompts: list[tuple[list[int], np.ndarray] | None] = [None] * self.max_batch
        self._ids = np.zeros((max(PREFILL_CHUNK, self.max_batch),), np.int64)
        self._pos = np.zeros((max(PREFILL_CHUNK, self.max_batch),), np.int64)
        self._mask = np.zeros((self.max_batch * self._cap,), np.int64)
        self._logits = np.zeros((max(PREFILL_CHUNK, self.max_batch) * self.vocab,), np.float32)
        self._binds: dict[tuple[str, int], object] = {}

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
            for i, (k, v) in enumerate(self.kv):
                for name, buf in (("key", k), ("value", v)):
                    ptr = buf.ctypes.data + first * self._row_bytes
                    io.bind_input(f"past_key_values.{i}.{name}", "cpu", 0, np.float32, shape, ptr)
                    io.bind_output(f"present.{i}.{name}", "cpu", 0, np.float32, shape, ptr)
            self._binds[key] = io
        return io

    # -- operations --------------------------------------------------------------------------
    def prefill(self, slot: int, ids: Sequence[int], reuse: bool = True) -> np.ndarray:
        """Make ``slot`` hold exactly ``ids``; reuse the common prefix with what it holds
        (unless ``reuse`` is False) and run the rest. Returns a copy of the last logits [V]."""
        n = len(ids)
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
        keep = min(common_prefix(self.tokens[slot], ids), n - 1) if reuse else 0
        self.lengths[slot] = keep
        del self.tokens[slot][keep:]
        io = self._binding("row", slot)
        done = keep
        while done < n:
            s = min(PREFILL_CHUNK, n - done)
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
            self.tokens[slot].extend(int(t) for t in ids[done:done + s])
            done += s
        last = 0 if self.last_only else s - 1
        logits = self._logits[last * self.vocab:(last + 1) * self.vocab].copy()
        self._prompts[slot] = (ids, logits.copy())
        return logits

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

"""Build the ONNX decoder graph (optimum / onnxruntime-genai naming) from GGUF blocks, for
every architecture in :data:`.arch.ARCHS` (the differences come from its ``ArchSpec``).

Inputs: ``input_ids`` [B,S] int64, ``attention_mask`` [B,T] int64 (T = past + new tokens),
``position_ids`` [B,S] int64, ``past_key_values.{i}.key|value`` [B,kv_heads,P,head_dim] fp32.
Outputs: ``logits`` [B,1,V] fp32 (last position; [B,S,V] when built with
``last_only=False``, model_config.json "logits": "all"), ``present.{i}.key|value``.

Attention is com.microsoft ``GroupQueryAttention`` (rotary inside: interleaved pairs as in
llama.cpp's "norm" rope on Llama's permuted Q/K rows, halves ("neox") for the others; a
sliding window through ``local_window_size``; per-layer rope tables). When the caller binds the same
buffer to ``past_key_values.i.*`` and ``present.i.*`` (shape [B,kv,max_len,hd]) GQA appends in
place: the engine's KV cache is allocated once. Linear layers are ``MatMulNBits``; see
:mod:`.quant` for the exact block mapping (a block form with offsets adds the block sums of
the input, a Reshape and a ReduceSum, times the offsets). With a tied head (fp32), the head
only chooses candidates: its best HEAD_RESCORE logits are recomputed in fp32 from the
embedding table's exact rows (:meth:`_Builder.rescore_top`), and at accuracy level 4 it is a
4-bit copy of the table (an 8-bit table is re-quantized in blocks of HEAD_BLOCK,
:func:`.quant.requantize_4bit`).

The int8 build (``ffn_ranges`` and ``attn_ranges``, fp32 only; the manifest's ``int8_ffn``
and ``int8_attention``) is the one approximate mapping chosen on purpose: onnxruntime's
MatMulNBits runs a prefill of 44 rows at about the speed of 44 single rows, while
DynamicQuantizeMatMul (int8 GEMM, VNNI) runs it 6x faster. Its activations are quantized per
row (per tensor when several rows), which loses the outlier channels a norm weight makes, so
the input of each such projection is smoothed first (SmoothQuant): each input channel k is
divided by s_k = a_k^alpha / w_k^(1 - alpha), a_k its largest magnitude over a calibration
text (the numpy reference, :func:`.reference.ffn_input_ranges`), w_k the largest weight on
it; the norm weight before the projection takes the 1/s_k and the weight columns the s_k
(exact in real numbers), then the weights are rounded to int8 per output column. Two
projections per layer read a norm's output and are built so: the FFN gate/up (ffn_norm) and
the attention QKV (attn_norm; with it a 48-token prefill 1.17x / 1.23-1.25x faster and a
decode step 1.07x / 1.00-1.04x on Gemma 3 270M / SmolLM2-135M, ``benchmarks.llm_ab``, top-1
unchanged at 0.9748 / 0.9812). The attention output is the third: its input channel (head h,
dim d) is V's channel (h's kv head, d) weighted by h's attention, so V's output rows take
the 1/s_k (one value per kv head and dim, :meth:`_Builder.out_smoothing`). The down
projection stays MatMulNBits (its input, the GLU product, lost too much at per-row int8:
Gemma 3 270M top-1 0.96 -> 0.89 with it, smoothed or not). The attention's int8 GEMMs
(``attn_ranges``) are their own option: on SmolLM2-135M they cost 2.3-2.8 points of top-1 on
text longer and more varied than the 161-token check (94.2 / 94.7 % on two passages of 653 /
544 tokens, against 96.5 / 97.4 % with the FFN alone int8 and 96.6 / 96.5 % for llama.cpp),
none on Gemma 3 270M (97.1 % with them, 96.9 % without, on the first).

The folded build (``fold_offsets``, fp32 only; the manifest's ``fold_offsets``: SmolLM2's
build folds every projection but its int8 FFN gate/up; folding those too delays the first
token, see the README) is the other approximation on offer, for a decode step: the exact
form of a block with an offset (``s * q + m``) adds three small nodes and an fp32 [n_blocks,
N] MatMul to each projection, which together cost as much as the 4-bit MatMulNBits saves
over the int8 GEMM (a decode step 0.96x the int8 build's; the same build without the
correction, wrong but an upper bound, 1.30x). Folded, the offsets' whole steps become
integer zero points and what is left rides as extra weight rows over the input's block means
(:func:`.quant.fold_offsets`, a Concat and an AveragePool): one MatMulNBits per projection.
Measured against the int8 build (``benchmarks.llm_ab``, SmolLM2-135M, every load order,
2026-12-04): a decode step 1.11-1.21x faster, a 48-token prefill 0.52-0.64x (MatMulNBits
runs many rows ~2.5x slower than the int8 GEMM), top-1 vs the fp32 reference 97.5-98.75 %
(int8 build 97.5 %).

Both at once (``fold_steps``, with the int8 FFN; SmolLM2's build since the fourteenth
session): the decoder blocks sit in If nodes on the call's row count, and a call of one row
(a decode step) reads the FFN gate/up's own 4-bit blocks, folded, while a call of several
rows (a prefill chunk, a batched step) keeps the int8 GEMMs. Every weight is an initializer
of the outer graph, made once: the two branches share all of them but the gate/up, so the
model holds the gate/up twice and nothing else (:meth:`_Builder.by_rows`).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .gguf_weights import GgufModel, LlamaHParams, QTensor, dequantize, output_tensor
from .quant import (FLOAT_TYPES, NBitsWeight, can_fuse, concat_rows, fold_offsets,
                    requantize_4bit, split_rows, to_nbits)

OPSET = 17
# The output head is split into MatMulNBits nodes of at most this many rows (+ one Concat):
# onnxruntime pre-packs each initializer and frees the original after it, so the load peak
# holds one chunk twice instead of the whole head (Gemma 3's 262k x 640 in 8 chunks: peak
# RSS 701 -> 543 MB; SmolLM2's 49k x 576 in 2: 255 -> 236 MB; decode no slower)
HEAD_CHUNK_ROWS = 32768
# A tied head's candidates: its largest logits, recomputed exactly from the table's rows
# (rescore_top) after a 4-bit copy of the table in blocks of HEAD_BLOCK chose them (an 8-bit
# table is re-quantized: ~half the bytes read per token). Decode step vs the 8-bit head
# (benchmarks.llm_ab in every load order, this 2-core Zen 4 box): 4-bit blocks of 32
# SmolLM2-135M 1.06x, Gemma 3 270M 1.22x; blocks of 128 a further 1.16-1.17x on Gemma, on
# SmolLM2 within the harness's spread (64 / 128 / 256: 1.02x / 1.01x / 1.04x; the 1.07x
# first given for 128 was measured in one load order, see benchmarks.llm_ab).
# Top-1 agreement with the fp32 reference on SmolLM2 / Gemma 3 over 1,848 / 1,757
# tokens (the `models check` text and two excerpts of the design notes): 8-bit head, best 2
# rescored, 1,754 / 1,669; 4-bit blocks of 32, best 2 / 8 / 32, 1,635 / 1,751 / 1,756 (SmolLM2),
# best 8 1,665 (Gemma); blocks of 128, best 8 1,728 (SmolLM2), best 16 1,749 / 1,667. Each
# candidate row is a Gather from the memory-mapped table, whose page faults map ~64 KB
# around it into the process (Gemma 3's peak RSS +49 MB over 64 tokens with 8 candidates
# instead of 2), which keeps the count small: Gemma's peak RSS in `bench llm` 524 MB with
# the 8-bit head and 2 candidates, 543 MB with this (the smaller copy pays most of it back).
HEAD_BLOCK = 128
HEAD_RESCORE = 16
# The candidates are found in groups of (up to) HEAD_GROUP logits (top_candidates): a ReduceMax
# over the logits, a TopK over the group maxima and one over the best groups' logits instead
# of a TopK over all of them (onnxruntime's TopK keeps a heap: ~1 ns a logit, 0.26 ms a token
# for Gemma 3's 262k under the profiler). The same indices; a decode step 1.02x (Gemma 3
# 270M, every load order of benchmarks.llm_ab, 2026-12-04)
HEAD_GROUP = 64
# fold_steps: the decoder blocks go into one If (one-row call or not) per this many blocks.
# Onnxruntime keeps a weight that both branches of an If read resident beside its pre-packed
# copy until it has loaded the second branch: one If over all 30 of SmolLM2-135M's blocks
# peaked 53 MB above the RSS it settled at after loading, an If per 6 blocks 11 MB. An If
# costs a few us a call: one If a block made a decode step 1.07x the int8 build's, one If
# in all 1.10x, folding everything 1.11x (benchmarks.llm_ab, every load order, 800 steps)
STEP_BRANCH_LAYERS = 6
IR_VERSION = 10  # onnxruntime >= 1.20 reads IR 10; onnx 1.23 would default to a newer one
# The int8 FFN's share of each channel's range moved onto the weights. Chosen on a 672-token
# selection text (an excerpt of the design notes; neither the calibration nor the `models
# check` text), Gemma 3 270M top-1 vs the fp32 reference, exact blocks 0.964: alpha 0.3 0.946,
# 0.5 0.960, 0.7 0.975, 0.85 0.967.
FFN_SMOOTH_ALPHA = 0.7


PRECISIONS = {"fp32": (np.float32, TensorProto.FLOAT), "fp16": (np.float16, TensorProto.FLOAT16)}


class _Graph:
    """Nodes and initializers; every float constant is stored in the graph's float type
    (``precision``), counting the values fp16 cannot hold exactly (``rounded``)."""

    def __init__(self, precision: str = "fp32") -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0
        self._consts: dict[str, onnx.TensorProto] = {}   # the initializers by name
        self.np_float, self.float_type = PRECISIONS[precision]
        self.rounded = 0          # float constant values changed by the cast to fp16

    def name(self, base: str) -> str:
        self._n += 1
        return f"{base}_{self._n}"

    def const(self, name: str, arr: np.ndarray) -> str:
        """An initializer holding ``arr``; made once per name (the two branches of a
        fold_steps build ask for their shared weights alike). A name already holding other
        values gets a new one."""
        if arr.dtype.kind == "f" and arr.dtype != self.np_float:
            cast = arr.astype(self.np_float)
            rounded = int(np.count_nonzero(cast.astype(arr.dtype) != arr))
            arr = cast
        else:
            rounded = 0
        t = numpy_helper.from_array(np.ascontiguousarray(arr), name)
        made = self._consts.get(name)
        if made is not None:
            if (made.data_type, made.dims, made.raw_data) == (t.data_type, t.dims, t.raw_data):
                return name
            name = t.name = self.name(name)
        self._consts[name] = t
        self.rounded += rounded
        self.inits.append(t)
        return name

    @contextmanager
    def capture(self) -> Iterator[list[onnx.NodeProto]]:
        """Nodes made inside the block go to the yielded list (a subgraph's) instead of the
        graph's; initializers stay the graph's (the subgraph reads them from the outer
        scope)."""
        saved = self.nodes
        self.nodes = []
        try:
            yield self.nodes
        finally:
            self.nodes = saved

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, domain: str = "",
           outputs: list[str] | None = None, **attrs) -> list[str]:
        outs = outputs or [self.name(f"{op_type}_out") for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name(op_type),
                                           domain=domain, **attrs))
        return outs


Weight = NBitsWeight | np.ndarray   # quantized blocks, or fp32 [N, K] for F32/F16/BF16


class _Builder:
    def __init__(self, model: GgufModel, accuracy_level: int, lm_head_accuracy_level: int,
                 last_only: bool = True, precision: str = "fp32",
                 ffn_ranges: dict[int, np.ndarray] | None = None,
                 attn_ranges: dict[int, np.ndarray] | None = None,
                 out_ranges: dict[int, np.ndarray] | None = None,
                 fold: bool = False, fold_steps: bool = False) -> None:
        self.last_only = last_only
        self.fold = fold
        self.fold_steps = fold_steps and ffn_ranges is not None
        self.ffn_ranges = ffn_ranges
        self.attn_ranges = attn_ranges
        self.out_ranges = out_ranges
        self.m = model
        self.hp: LlamaHParams = model.hparams
        self.spec = self.hp.spec
        self.g = _Graph(precision)
        self.acc = accuracy_level
        self.lm_acc = lm_head_accuracy_level
        self._made: set[str] = set()
        self._weights: dict[str, Weight] = {}
        self.approximated: dict[str, tuple[str, float]] = {}   # name -> (type, max abs error)
        self.int8_ffn: dict[str, float] = {}   # int8 FFN node -> max abs weight error
        self.folded: dict[str, float] = {}     # folded-offsets node -> max abs weight error
        self.step_folded: dict[str, float] = {}   # the same for the one-row branch
        self.presents: list[str] | None = None   # inside an If branch: its present outputs
        self.head_candidates_error: float | None = None   # the 4-bit head copy's max abs error

    # -- weights ---------------------------------------------------------------------------
    def weight(self, name: str) -> Weight:
        if name not in self._weights:
            t: QTensor = self.m.tensors[name]
            if t.qtype in FLOAT_TYPES:
                self._weights[name] = dequantize(t).reshape(t.rows, t.cols)
            else:
                w = to_nbits(t)
                if t.qtype not in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K",
                                   "Q6_K"):
                    self.approximated[name] = (t.qtype, w.max_abs_error)
                self._weights[name] = w
        return self._weights[name]

    def vec(self, name: str) -> str:
        return self.g.const(name, dequantize(self.m.tensors[name]).astype(np.float32).reshape(-1))

    # -- helpers ---------------------------------------------------------------------------
    def linear(self, x: str, w: Weight, prefix: str, acc: int, out: str | None = None) -> str:
        g = self.g
        outs = [out] if out else None
        if isinstance(w, np.ndarray):
            return g.op("MatMul", [x, g.const(f"{prefix}.W", np.ascontiguousarray(w.T))],
                        outputs=outs)[0]
        if w.mins is not None and self.fold:    # one node over [x, block means of x]
            folded = fold_offsets(w, means=True)
            self.folded[prefix] = folded.max_abs_error
            x, w = self.with_means(x, w.block), folded
        ins = [x, g.const(f"{prefix}.B", w.b), g.const(f"{prefix}.scales", w.scales)]
        if w.zero_points is not None:
            ins.append(g.const(f"{prefix}.zp", w.zero_points))
        (y,) = g.op("MatMulNBits", ins, domain="com.microsoft", K=w.k, N=w.n, bits=w.bits,
                    block_size=w.block, accuracy_level=acc,
                    outputs=outs if w.mins is None else None)
        if w.mins is None:
            return y
        # block offsets: y += (sum over each block of x) @ offsets (exact)
        xs = self.block_sums(x, w.k, w.block)
        (corr,) = g.op("MatMul", [xs, g.const(f"{prefix}.offsets", w.mins)])
        return g.op("Add", [y, corr], outputs=outs)[0]

    def project(self, x: str, names: list[str], prefix: str,
                biases: list[str] | None = None) -> tuple[str | None, list[str] | None]:
        """x @ W.T for several weights of one input: (fused output, None) when their blocks
        can be stacked into one node, else (None, one output per weight)."""
        ws = [self.weight(n) for n in names]
        g = self.g
        if all(isinstance(w, NBitsWeight) for w in ws) and can_fuse(ws):  # type: ignore[arg-type]
            fused: Weight = concat_rows(ws)  # type: ignore[arg-type]
        elif all(isinstance(w, np.ndarray) for w in ws):
            fused = np.concatenate(ws, axis=0)  # type: ignore[arg-type]
        else:
            outs = [self.linear(x, w, f"{prefix}.{i}", self.acc) for i, w in enumerate(ws)]
            if biases:
                outs = [g.op("Add", [o, self.vec(b)])[0] for o, b in zip(outs, biases, strict=True)]
            return None, outs
        y = self.linear(x, fused, prefix, self.acc)
        if biases:
            bias = np.concatenate([dequantize(self.m.tensors[b]).reshape(-1) for b in biases])
            (y,) = g.op("Add", [y, g.const(f"{prefix}.bias", bias.astype(np.float32))])
        return y, None

    def split(self, y: str, sizes: list[int]) -> list[str]:
        sz = self.g.const(self.g.name("split_sizes"), np.array(sizes, np.int64))
        return self.g.op("Split", [y, sz], n_out=len(sizes), axis=-1)

    def block_sums(self, x: str, k: int, block: int) -> str:
        """[..., K] -> [..., K/block]: the sum of each block of x (a Reshape and a ReduceSum:
        a decode step 1-4 % faster than a MatMul by a [K, K/block] 0/1 matrix, which read
        ~10 MB per SmolLM2 token, benchmarks.llm_ab)."""
        g = self.g
        shape = f"shape_blocks_{k}_{block}"
        if shape not in self._made:
            self._made.add(shape)
            g.const(shape, np.array([0, 0, k // block, block], np.int64))
        (xb,) = g.op("Reshape", [x, shape])
        return g.op("ReduceSum", [xb, self.axis_last()], keepdims=0)[0]

    def with_means(self, x: str, block: int) -> str:
        """[..., K] -> [..., K + K/block]: x and the mean of each block of x (one AveragePool
        over the last axis and a Concat, made once per input: a decode step 1.02-1.03x
        faster than the block sums by a Reshape and a ReduceSum, benchmarks.llm_ab)."""
        key = f"{x}.means{block}"
        if key not in self._made:
            self._made.add(key)
            g = self.g
            (xm,) = g.op("AveragePool", [x], kernel_shape=[block], strides=[block])
            g.op("Concat", [x, xm], axis=-1, outputs=[key])
        return key

    def axis_last(self) -> str:
        if "axis_last" not in self._made:
            self._made.add("axis_last")
            self.g.const("axis_last", np.array([-1], np.int64))
        return "axis_last"

    def rms(self, residual: str, branch: str | None, weight: str,
            divide: np.ndarray | None = None) -> tuple[str, str]:
        """RMSNorm of ``residual + branch``; returns (normed, new residual). With a branch
        this is one SkipSimplifiedLayerNormalization node (add + norm fused). ``divide``:
        per-channel divisors folded into the norm weight (the int8 FFN's smoothing)."""
        g = self.g
        if divide is None:
            w = self.vec(weight)
        else:
            gamma = dequantize(self.m.tensors[weight]).astype(np.float32).reshape(-1)
            w = g.const(f"{weight}.smoothed", gamma / divide)
        if branch is None:
            (y,) = g.op("SimplifiedLayerNormalization", [residual, w], axis=-1,
                        epsilon=self.hp.rms_eps, stash_type=1)
            return y, residual
        y, total = g.name("normed"), g.name("residual")
        g.op("SkipSimplifiedLayerNormalization", [branch, residual, w], domain="com.microsoft",
             outputs=[y, "", "", total], epsilon=self.hp.rms_eps)
        return y, total

    def head_norm(self, x: str, weight: str, heads: int) -> str:
        """Per-head RMSNorm over head_dim (qwen3/gemma3 q_norm, k_norm)."""
        g, hd = self.g, self.hp.head_dim
        (r,) = g.op("Reshape", [x, g.const(g.name("shape_heads"),
                                           np.array([0, 0, heads, hd], np.int64))])
        (n,) = g.op("SimplifiedLayerNormalization", [r, self.vec(weight)], axis=-1,
                    epsilon=self.hp.rms_eps, stash_type=1)
        return g.op("Reshape", [n, g.const(g.name("shape_flat"),
                                           np.array([0, 0, heads * hd], np.int64))])[0]

    # -- graph parts -----------------------------------------------------------------------
    def embedding(self) -> str:
        """Token embedding: Gather rows of the (unpacked) block table and scale them."""
        g, hp = self.g, self.hp
        x = self.table_rows("input_ids")
        if self.spec.embed_scale:
            (x,) = g.op("Mul", [x, g.const("embed_scale",
                                           np.array(np.sqrt(hp.hidden), np.float32))])
        return x

    def table_rows(self, ids: str) -> str:
        """fp32 rows ``ids`` [...] -> [..., hidden] of the token embedding table, dequantized
        exactly from its blocks (Gather of the unpacked values, scales and offsets; the
        initializers are made once and shared by every caller)."""
        g, hp = self.g, self.hp
        w = self.weight("token_embd.weight")
        first = "embed.table" not in self._made
        self._made.add("embed.table")
        if isinstance(w, np.ndarray):
            if first:
                g.const("embed.W", w.astype(np.float32))
            return g.op("Gather", ["embed.W", ids], axis=0)[0]
        nb = w.k // w.block
        zps = (np.full(1, 8, np.uint8) if w.zero_points is None else
               w.zero_points if w.bits == 8 else None)
        if zps is None or np.any(zps != zps.flat[0]):
            raise ValueError("token_embd: per-block 4-bit zero points are not supported")
        if first:
            q = w.b if w.bits == 8 else np.stack([w.b & 0x0F, w.b >> 4], -1)
            g.const("embed.B", q.reshape(w.n, nb, w.block))
            g.const("embed.zp", np.array(zps.flat[0], np.float32))
            g.const("embed.scales", w.scales.reshape(w.n, nb, 1))
            if w.mins is not None:
                g.const("embed.offsets", np.ascontiguousarray(w.mins.T).reshape(w.n, nb, 1))
        (rows,) = g.op("Gather", ["embed.B", ids], axis=0)
        (rows_f,) = g.op("Cast", [rows], to=g.float_type)
        (centered,) = g.op("Sub", [rows_f, "embed.zp"])
        (sc,) = g.op("Gather", ["embed.scales", ids], axis=0)            # [..., nb, 1]
        (vals,) = g.op("Mul", [centered, sc])
        if w.mins is not None:
            (off,) = g.op("Gather", ["embed.offsets", ids], axis=0)
            (vals,) = g.op("Add", [vals, off])
        # [B, S, nb, block] -> [B, S, hidden]; [B, S, k, nb, block] -> [B, S, k, hidden]
        keep = 2 if ids == "input_ids" else 3
        shape = f"shape_rows_{keep}"
        if shape not in self._made:
            self._made.add(shape)
            g.const(shape, np.array([0] * keep + [hp.hidden], np.int64))
        return g.op("Reshape", [vals, shape])[0]

    def rope_tables(self, base: float, scale: float, name: str) -> tuple[str, str]:
        inv = rope_inv_freq(self.m, base, scale)
        ang = np.arange(self.hp.context_length, dtype=np.float64)[:, None] * inv[None, :]
        return (self.g.const(f"cos_{name}", np.cos(ang).astype(np.float32)),
                self.g.const(f"sin_{name}", np.sin(ang).astype(np.float32)))

    def attention_inputs(self) -> tuple[str, str]:
        g = self.g
        (msum,) = g.op("ReduceSum", ["attention_mask", g.const("axis1", np.array([1], np.int64))],
                       keepdims=0)
        (seqlens64,) = g.op("Sub", [msum, g.const("one64", np.array(1, np.int64))])
        (seqlens,) = g.op("Cast", [seqlens64], to=TensorProto.INT32)
        (mshape,) = g.op("Shape", ["attention_mask"])
        (total64,) = g.op("Gather", [mshape, g.const("idx1", np.array(1, np.int64))], axis=0)
        (total,) = g.op("Cast", [total64], to=TensorProto.INT32)
        return seqlens, total

    def layer(self, i: int, x: str, branch: str | None,
              att: tuple[str, str]) -> tuple[str, str]:
        """One decoder block; returns (residual, branch) whose sum is the block's output."""
        g, hp, spec = self.g, self.hp, self.spec
        seqlens, total = att
        p = f"blk.{i}"
        qkv_names = ([f"{p}.attn_qkv.weight"] if spec.fused_qkv else
                     [f"{p}.attn_{n}.weight" for n in "qkv"])
        # the int8 attention output's smoothing goes into V (see out_smoothing)
        o_smooth = (self.out_smoothing(i) if self.out_ranges is not None
                    and self.attn_ranges is not None else None)
        v_div = None
        if o_smooth is not None:
            v_div = np.ones(hp.n_heads * hp.head_dim + 2 * hp.n_kv_heads * hp.head_dim,
                            np.float32)
            v_div[-hp.n_kv_heads * hp.head_dim:] = o_smooth[1]
        int8_qkv = (self.int8_weights(qkv_names, self.attn_ranges[i], f"{p}.attn_qkv",
                                      row_div=v_div)
                    if self.attn_ranges is not None else None)
        xn, x = self.rms(x, branch, f"{p}.attn_norm.weight",
                         None if int8_qkv is None else int8_qkv[0])
        sizes = [hp.n_heads * hp.head_dim] + [hp.n_kv_heads * hp.head_dim] * 2
        packed: str | None
        parts: list[str] | None
        if int8_qkv is not None:
            packed, parts = self.int8_linear(xn, int8_qkv, f"{p}.attn_qkv"), None
            if spec.qkv_bias:
                bias = np.concatenate([dequantize(self.m.tensors[f"{p}.attn_{n}.bias"])
                                       .reshape(-1) for n in "qkv"]).astype(np.float32)
                if v_div is not None:
                    bias = bias / v_div
                (packed,) = g.op("Add", [packed, g.const(f"{p}.attn_qkv.bias", bias)])
        elif spec.fused_qkv:
            packed, parts = self.linear(xn, self.weight(f"{p}.attn_qkv.weight"),
                                        f"{p}.attn_qkv", self.acc), None
        else:
            biases = [f"{p}.attn_{n}.bias" for n in "qkv"] if spec.qkv_bias else None
            packed, parts = self.project(xn, [f"{p}.attn_{n}.weight" for n in "qkv"],
                                         f"{p}.attn_qkv", biases)
        if spec.qk_norm:
            q, k, v = parts or self.split(str(packed), sizes)
            q = self.head_norm(q, f"{p}.attn_q_norm.weight", hp.n_heads)
            k = self.head_norm(k, f"{p}.attn_k_norm.weight", hp.n_kv_heads)
            qkv_in = [q, k, v]
        else:
            qkv_in = [packed or g.op("Concat", parts, axis=-1)[0], "", ""]  # type: ignore[arg-type]
        sliding = hp.is_sliding(i)
        cos, sin = self.local_rope if sliding else self.global_rope
        attn, _, _ = g.op(
            "GroupQueryAttention",
            qkv_in + [f"past_key_values.{i}.key", f"past_key_values.{i}.value",
                      seqlens, total, cos, sin, "position_ids"],
            domain="com.microsoft",
            outputs=[g.name(f"{p}.attn"), self.present(i, "key"), self.present(i, "value")],
            num_heads=hp.n_heads, kv_num_heads=hp.n_kv_heads, do_rotary=1,
            rotary_interleaved=int(spec.rope_interleaved), scale=attn_scale(hp),
            # keys with q - k < window (llama.cpp's and transformers' mask): ORT's
            # local_window_size is that window (checked against the reference in the tests)
            local_window_size=hp.sliding_window if sliding else -1)
        if o_smooth is not None:
            o = self.int8_linear(attn, self.int8_weights([f"{p}.attn_output.weight"], None,
                                                         f"{p}.attn_output",
                                                         smooth=o_smooth[0]),
                                 f"{p}.attn_output")
        else:
            o = self.linear(attn, self.weight(f"{p}.attn_output.weight"), f"{p}.attn_output",
                            self.acc)
        if spec.post_norms:
            o, _ = self.rms(o, None, f"{p}.post_attention_norm.weight")
        gu_names = ([f"{p}.ffn_up.weight"] if spec.fused_gate_up else
                    [f"{p}.ffn_gate.weight", f"{p}.ffn_up.weight"])
        int8 = (self.int8_weights(gu_names, self.ffn_ranges[i], f"{p}.ffn_gate_up")
                if self.ffn_ranges is not None else None)
        gu, parts, h = self.ffn_gate_up(i, x, o, int8)
        gate, up = parts or self.split(str(gu), [hp.ffn, hp.ffn])
        if spec.activation == "gelu_tanh":
            (act,) = g.op("FastGelu", [gate], domain="com.microsoft")
        else:
            (sig,) = g.op("Sigmoid", [gate])
            (act,) = g.op("Mul", [gate, sig])
        (act,) = g.op("Mul", [act, up])
        down = self.linear(act, self.weight(f"{p}.ffn_down.weight"), f"{p}.ffn_down", self.acc)
        if spec.post_norms:
            down, _ = self.rms(down, None, f"{p}.post_ffw_norm.weight")
        return h, down

    def ffn_gate_up(self, i: int, x: str, o: str,
                    int8: tuple[np.ndarray, np.ndarray, np.ndarray] | None
                    ) -> tuple[str | None, list[str] | None, str]:
        """(the FFN's gate and up side by side [.., 2 * ffn] or None, else the two apart as
        :meth:`project` gives them, the new residual): the ffn_norm of ``x + o``, then the
        int8 GEMM (``int8``, whose smoothing the norm takes) or the weights' blocks."""
        p, spec = f"blk.{i}", self.spec
        name = f"{p}.ffn_gate_up"
        hn, h = self.rms(x, o, f"{p}.ffn_norm.weight", None if int8 is None else int8[0])
        if int8 is not None:     # one int8 GEMM for both, then a Split: a decode step 5-6 %
            # faster than two nodes (one activation quantization and one parallel section
            # fewer), a 48-token prefill the same (benchmarks.llm_ab, SmolLM2 and Gemma 3)
            return self.int8_linear(hn, int8, name), None, h
        if spec.fused_gate_up:
            return self.linear(hn, self.weight(f"{p}.ffn_up.weight"), name, self.acc), None, h
        fused, parts = self.project(hn, [f"{p}.ffn_gate.weight", f"{p}.ffn_up.weight"], name)
        return fused, parts, h

    def layers(self, x: str, branch: str | None, att: tuple[str, str],
               layers: range) -> tuple[str, ...]:
        """Decoder blocks ``layers``: (residual, branch, then inside an If branch each
        layer's present key and value)."""
        for i in layers:
            x, branch = self.layer(i, x, branch, att)
        return (x, str(branch), *(self.presents or ()))

    def present(self, i: int, kind: str) -> str:
        """The name of layer ``i``'s present ``kind`` (key, value): the graph output's, or
        inside an If branch a name of the branch's, recorded for its outputs."""
        name = f"present.{i}.{kind}"
        if self.presents is None:
            return name
        self.presents.append(self.g.name(name))
        return self.presents[-1]

    def by_rows(self, x: str, branch: str | None, att: tuple[str, str],
                layers: range) -> tuple[str, str]:
        """Decoder blocks ``layers`` as an If on the call's row count (``one_row``): several
        rows (a prefill chunk, a batched step) run them as the options ask; a call of one row
        (a decode step) runs the FFN gate/up from the weights' blocks instead of the int8
        GEMM, every block weight's offsets folded (:func:`.quant.fold_offsets`;
        ``step_folded`` gets the errors). The attention is the same in both (an int8
        attention's smoothing divides V in the KV cache both read). The weights are the
        outer graph's initializers, made once (:meth:`_Graph.const`), so a weight both
        branches read is stored and pre-packed once. Returns (residual, branch)."""
        g = self.g
        if "one_row" not in self._made:
            self._made.add("one_row")
            (n,) = g.op("Size", ["input_ids"])
            g.op("Equal", [n, g.const("one64", np.array(1, np.int64))], outputs=["one_row"])
        saved = (self.fold, self.folded, self.ffn_ranges)

        def make(tag: str) -> onnx.GraphProto:
            made = set(self._made)     # a value made in a branch is not visible outside it
            self.presents = []
            with g.capture() as nodes:
                outs = self.layers(x, branch, att, layers)
            self._made, self.presents = made, None
            return helper.make_graph(nodes, g.name(f"layers.{tag}"), [], [
                helper.make_tensor_value_info(o, g.float_type, None) for o in outs])

        self.fold, self.folded, self.ffn_ranges = True, self.step_folded, None
        try:
            then_g = make("one_row")
        finally:
            self.fold, self.folded, self.ffn_ranges = saved
        else_g = make("rows")
        names = [f"present.{i}.{kind}" for i in layers for kind in ("key", "value")]
        x, last, *_ = g.op("If", ["one_row"], then_branch=then_g, else_branch=else_g,
                           outputs=[g.name("residual"), g.name("branch"), *names])
        return x, last

    def out_smoothing(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """The int8 attention output's smoothing for layer ``i``: (multipliers [n_heads *
        head_dim] of the output weight's columns, divisors [n_kv_heads * head_dim] of V).
        Each input channel (head h, dim d) is V's channel (h's kv head, d) weighted by h's
        attention, so a divisor on V's output row divides every head of its group: the
        smoothing is one value per (kv head, d), from the group's largest range and weight."""
        hp = self.hp
        group = hp.n_heads // hp.n_kv_heads
        w = dequantize(self.m.tensors[f"blk.{i}.attn_output.weight"]).astype(np.float32)

        def per_kv(v: np.ndarray) -> np.ndarray:
            return v.reshape(hp.n_kv_heads, group, hp.head_dim).max(axis=1)

        a = np.maximum(per_kv(self.out_ranges[i]), 1e-5)            # type: ignore[index]
        wk = np.maximum(per_kv(np.abs(w).max(axis=0)), 1e-5)
        s = (a ** FFN_SMOOTH_ALPHA / wk ** (1 - FFN_SMOOTH_ALPHA)).astype(np.float32)
        return np.repeat(s[:, None, :], group, axis=1).reshape(-1), s.reshape(-1)

    def int8_weights(self, names: list[str], ranges: np.ndarray | None, key: str,
                     smooth: np.ndarray | None = None, row_div: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """An int8 projection of the normed input (see the module docstring) for the weights
        ``names`` stacked, its input's channel ``ranges`` from the calibration: (smoothing
        divisors [K], int8 weights [K, N], per-column scales [N]); records its max abs weight
        error under ``key``. ``smooth``: divisors chosen by the caller instead (``ranges``
        unused); ``row_div``: [N] divisors of the outputs (the attention output's smoothing
        moved into V: only the column scales change)."""
        # the GGUF's own values (the blocks' re-pack is exact), not cached as blocks: these
        # weights never become MatMulNBits nodes
        w = np.concatenate([dequantize(self.m.tensors[n]) for n in names],
                           axis=0).astype(np.float32)
        if row_div is not None:
            w = w / row_div[:, None]
        if smooth is None:
            a = np.maximum(ranges, 1e-5)                             # type: ignore[arg-type]
            wk = np.maximum(np.abs(w).max(axis=0), 1e-5)
            smooth = (a ** FFN_SMOOTH_ALPHA / wk ** (1 - FFN_SMOOTH_ALPHA)).astype(np.float32)
        ws = w * smooth[None, :]
        col = np.abs(ws).max(axis=1) / 127.0
        col[col == 0] = 1.0
        q = np.clip(np.rint(ws / col[:, None]), -127, 127).astype(np.int8)
        diff = q * col[:, None] / smooth[None, :] - w
        if row_div is not None:   # the error on the GGUF's own weights
            diff = diff * row_div[:, None]
        err = float(np.abs(diff).max())
        self.int8_ffn[key] = err
        return smooth, np.ascontiguousarray(q.T), col.astype(np.float32)

    def int8_linear(self, x: str, int8: tuple[np.ndarray, np.ndarray, np.ndarray],
                    prefix: str) -> str:
        """x @ the int8 weights of :meth:`int8_weights` (one DynamicQuantizeMatMul)."""
        g = self.g
        return g.op("DynamicQuantizeMatMul", [x, g.const(f"{prefix}.W8", int8[1]),
                                              g.const(f"{prefix}.scales", int8[2])],
                    domain="com.microsoft")[0]

    def build(self) -> onnx.ModelProto:
        hp, g = self.hp, self.g
        x = self.embedding()
        att = self.attention_inputs()
        self.global_rope = self.rope_tables(hp.rope_theta, hp.rope_scale, "global")
        self.local_rope = self.global_rope
        if any(hp.is_sliding(i) for i in range(hp.n_layers)):
            self.local_rope = self.rope_tables(self.spec.swa_rope_base or hp.rope_theta, 1.0,
                                               "local")
        branch: str | None = None
        n = hp.n_layers
        if self.fold_steps:   # one If per STEP_BRANCH_LAYERS blocks (see its comment)
            for lo in range(0, n, STEP_BRANCH_LAYERS):
                x, branch = self.by_rows(x, branch, att, range(lo, min(lo + STEP_BRANCH_LAYERS,
                                                                        n)))
        else:
            x, branch, *_ = self.layers(x, branch, att, range(n))
        xn, _ = self.rms(x, branch, "output_norm.weight")
        if self.last_only:
            # the head (49k x 576 for SmolLM2) runs for the last position only: a prefill of
            # S tokens needs just the next-token logits, so this saves S - 1 head products
            (xn,) = g.op("Slice", [xn, g.const("last_start", np.array([-1], np.int64)),
                                   g.const("last_end", np.array([2**62], np.int64)),
                                   g.const("axis_seq", np.array([1], np.int64))])
        # tied head: a second copy of the table (the "lm_head.*" initializers), because
        # onnxruntime's CPU MatMulNBits only pre-packs (and runs fast, 2 ms vs 330 ms per
        # token) an unshared initializer; in 4 bits when its best logits are rescored
        head_w = self.weight(output_tensor(self.m).name)
        rescore = (g.float_type == TensorProto.FLOAT and isinstance(head_w, NBitsWeight)
                   and "output.weight" not in self.m.tensors)
        # the 4-bit copy belongs to the int8-activation head (accuracy level 4); at level 1
        # the head stays the table's exact blocks, as every other weight
        if (rescore and isinstance(head_w, NBitsWeight) and head_w.bits == 8
                and self.lm_acc == 4):
            head_w = requantize_4bit(head_w, HEAD_BLOCK)
            self.head_candidates_error = head_w.max_abs_error
        self.head(xn, head_w, "logits_approx" if rescore else "logits")
        if rescore:
            self.rescore_top(xn, "logits_approx")
        return self.finish()

    def rescore_top(self, xn: str, approx: str) -> None:
        """``logits`` = ``approx`` with its HEAD_RESCORE largest values recomputed in fp32 from
        the table's exact rows (tied heads: the embedding's own initializers, no extra
        memory). The approximate head (4-bit weights, int8 activations at accuracy level 4)
        is off by a few hundredths to tenths per logit, which picks the wrong one of
        near-tied tokens; the candidates' exact scores decide instead (see HEAD_RESCORE).
        The other logits keep the approximate values (what sampling sees outside them)."""
        g = self.g
        idx = self.top_candidates(approx, min(HEAD_RESCORE, self.hp.vocab))  # [B, S, k]
        rows = self.table_rows(idx)                                       # [B, S, k, hidden]
        (col,) = g.op("Unsqueeze", [xn, self.axis_last()])               # [B, S, hidden, 1]
        (exact,) = g.op("MatMul", [rows, col])                            # [B, S, k, 1]
        (exact,) = g.op("Squeeze", [exact, self.axis_last()])
        g.op("ScatterElements", [approx, idx, exact], axis=-1, outputs=["logits"])

    def top_candidates(self, approx: str, k: int) -> str:
        """Indices [B, S, k] of the ``k`` largest of ``approx`` [B, S, V], best first, found
        through groups of ``grp`` logits (see HEAD_GROUP): the ``k`` groups with the largest
        maxima hold all of the ``k`` largest logits (a group holding one of them has a
        maximum at least the k-th largest; at most ``k`` groups hold them), so the TopK over
        those ``k * grp`` logits is the TopK over all. A vocabulary with no divisor in
        2..HEAD_GROUP leaving ``k`` groups takes one plain TopK."""
        g, v = self.g, self.hp.vocab
        kk = g.const(g.name("head_top_k"), np.array([k], np.int64))
        grp = candidate_group(v, k)
        if grp == 1:
            return g.op("TopK", [approx, kk], n_out=2, axis=-1)[1]
        (grouped,) = g.op("Reshape", [approx, g.const("head_groups_shape",
                                                      np.array([0, 0, v // grp, grp], np.int64))])
        (maxima,) = g.op("ReduceMax", [grouped], axes=[-1], keepdims=0)    # [B, S, V / grp]
        _, best = g.op("TopK", [maxima, kk], n_out=2, axis=-1)             # [B, S, k]
        (first,) = g.op("Mul", [best, g.const("head_group_size", np.array([grp], np.int64))])
        (first,) = g.op("Unsqueeze", [first, self.axis_last()])           # [B, S, k, 1]
        (cand,) = g.op("Add", [first, g.const("head_group_offsets",
                                              np.arange(grp, dtype=np.int64))])
        (cand,) = g.op("Reshape", [cand, g.const("head_candidates_shape",
                                                 np.array([0, 0, k * grp], np.int64))])
        (vals,) = g.op("GatherElements", [approx, cand], axis=-1)         # [B, S, k * grp]
        _, pick = g.op("TopK", [vals, kk], n_out=2, axis=-1)
        return g.op("GatherElements", [cand, pick], axis=-1)[0]

    def head(self, xn: str, w: Weight, name: str = "logits") -> None:
        """``name`` = xn @ head.T, in row chunks of HEAD_CHUNK_ROWS (see its comment)."""
        g = self.g
        fp32 = g.float_type == TensorProto.FLOAT
        out = name if fp32 else g.name("logits16")   # fp16: one Cast to fp32 logits
        if not isinstance(w, NBitsWeight) or w.n <= HEAD_CHUNK_ROWS:
            self.linear(xn, w, "lm_head", self.lm_acc, out=out)
        else:
            parts = [self.linear(xn, split_rows(w, r, min(r + HEAD_CHUNK_ROWS, w.n)),
                                 f"lm_head.{i}", self.lm_acc)
                     for i, r in enumerate(range(0, w.n, HEAD_CHUNK_ROWS))]
            g.op("Concat", parts, axis=-1, outputs=[out])
        if not fp32:
            g.op("Cast", [out], to=TensorProto.FLOAT, outputs=["logits"])

    def finish(self) -> onnx.ModelProto:
        hp = self.hp
        f, i64 = self.g.float_type, TensorProto.INT64
        kv = [hp.n_kv_heads, hp.head_dim]
        inputs = [helper.make_tensor_value_info("input_ids", i64, ["batch", "seq"]),
                  helper.make_tensor_value_info("attention_mask", i64, ["batch", "total_seq"]),
                  helper.make_tensor_value_info("position_ids", i64, ["batch", "seq"])]
        outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                                 ["batch", 1 if self.last_only else "seq",
                                                  hp.vocab])]
        for i in range(hp.n_layers):
            for kind in ("key", "value"):
                inputs.append(helper.make_tensor_value_info(
                    f"past_key_values.{i}.{kind}", f, ["batch", kv[0], "past_seq", kv[1]]))
                outputs.append(helper.make_tensor_value_info(
                    f"present.{i}.{kind}", f, ["batch", kv[0], "present_seq", kv[1]]))
        graph = helper.make_graph(self.g.nodes, f"{hp.arch}_gguf", inputs, outputs,
                                  self.g.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                        helper.make_opsetid("com.microsoft", 1)],
                                  producer_name="edge_runtime.gguf2onnx")
        model.ir_version = IR_VERSION
        return model


def candidate_group(vocab: int, k: int) -> int:
    """The group size of :meth:`_Builder.top_candidates`: the largest divisor of ``vocab`` up
    to HEAD_GROUP that leaves at least ``k`` groups (1: none, one plain TopK)."""
    return max((d for d in range(2, HEAD_GROUP + 1) if vocab % d == 0 and vocab // d >= k),
               default=1)


def attn_scale(hp: LlamaHParams) -> float:
    return float(hp.attn_scale or 1.0 / np.sqrt(hp.head_dim))


def rope_inv_freq(model: GgufModel, base: float, scale: float = 1.0) -> np.ndarray:
    """Inverse rope frequencies [head_dim / 2] (float64): base^(-2i/d), divided by the linear
    scale and, when the GGUF has ``rope_freqs.weight`` (Llama 3.x rope scaling, written by
    llama.cpp's converter), by those per-frequency factors."""
    hd = model.hparams.head_dim
    inv = 1.0 / (base ** (np.arange(0, hd, 2, dtype=np.float64) / hd)) / scale
    factors = model.tensors.get("rope_freqs.weight")
    if factors is not None and base == model.hparams.rope_theta:
        inv = inv / dequantize(factors).astype(np.float64).reshape(-1)[: hd // 2]
    return inv


def build_graph(model: GgufModel, accuracy_level: int = 4,
                lm_head_accuracy_level: int = 4, last_only: bool = True,
                report: dict | None = None, precision: str = "fp32",
                ffn_ranges: dict[int, np.ndarray] | None = None,
                attn_ranges: dict[int, np.ndarray] | None = None,
                out_ranges: dict[int, np.ndarray] | None = None,
                fold_offsets: bool = False, fold_steps: bool = False) -> onnx.ModelProto:
    """The decoder as an in-memory ModelProto (no I/O). ``last_only``: ``logits`` is
    [B, 1, V], the last position's (what generation needs); else [B, S, V]. ``report``, when
    given, receives ``approximated``: {tensor: (type, max abs error)} for tensors whose
    block type had to be re-quantized (empty for the exactly mapped types), and
    ``fp16_rounded``: how many float constant values (scales, block offsets, norms, rope
    tables) the ``precision="fp16"`` variant could not hold exactly (0 for fp32).

    ``precision`` "fp16" (for the CUDA / TensorRT providers: their GroupQueryAttention is
    fp16-only) makes activations, KV cache and float constants fp16; the 4/8-bit weight
    blocks are unchanged and ``logits`` stays fp32 (one Cast).

    ``ffn_ranges`` (fp32 only): per layer, the FFN input's channel ranges over a calibration
    text (:func:`.reference.ffn_input_ranges`); the FFN gate/up projections are then the int8
    FFN of the module docstring. ``attn_ranges`` and ``out_ranges`` (fp32 only), the same for
    the attention QKV and output projections. ``report["int8_ffn"]`` gets {node: max abs
    weight error} for every int8 projection. ``report["head_candidates_error"]``: the max abs
    weight error of a tied head's 4-bit copy (None when the head is the table's own blocks).

    ``fold_offsets`` (fp32 only): each weight with block offsets (Q4_1, Q5_1, Q4_K, Q5_K)
    that stays in blocks is one MatMulNBits over ``[x, block means of x]``, the offsets
    folded in (:func:`.quant.fold_offsets`, approximate), instead of the exact form's
    correction (see the module docstring); ``report["folded"]`` gets {node: max abs weight
    error}.

    ``fold_steps`` (fp32, with ``ffn_ranges``): in a call of one row (a decode step) the FFN
    gate/up read the weights' blocks instead of the int8 GEMM, every block weight's offsets
    folded; calls of several rows (prefill chunks, batched steps) run the blocks as the
    other options ask (an If per STEP_BRANCH_LAYERS blocks, :meth:`_Builder.by_rows`).
    ``report["step_folded"]`` gets the step's {node: max abs weight error}."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, not {precision!r}")
    if (ffn_ranges is not None or attn_ranges is not None) and precision != "fp32":
        raise ValueError("the int8 projections are a CPU build (fp32); the fp16 variant keeps "
                         "the blocks")
    if (fold_offsets or fold_steps) and precision != "fp32":
        raise ValueError("folded offsets are a CPU build (fp32); the fp16 variant keeps the "
                         "exact form")
    b = _Builder(model, accuracy_level, lm_head_accuracy_level, last_only, precision,
                 ffn_ranges, attn_ranges, out_ranges, fold_offsets, fold_steps)
    proto = b.build()
    if report is not None:
        report["step_folded"] = dict(b.step_folded)
        report["int8_ffn"] = dict(b.int8_ffn)
        report["folded"] = dict(b.folded)
        report["approximated"] = dict(b.approximated)
        report["fp16_rounded"] = b.g.rounded
        report["head_candidates_error"] = b.head_candidates_error
    return proto

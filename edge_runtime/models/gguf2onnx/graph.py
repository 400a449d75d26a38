"""Build the ONNX decoder graph (optimum / onnxruntime-genai naming) from GGUF blocks.

Inputs: ``input_ids`` [B,S] int64, ``attention_mask`` [B,T] int64 (T = past + new tokens),
``position_ids`` [B,S] int64, ``past_key_values.{i}.key|value`` [B,kv_heads,P,head_dim] fp32.
Outputs: ``logits`` [B,1,V] fp32 (last position; [B,S,V] when built with
``last_only=False``, model_config.json "logits": "all"), ``present.{i}.key|value``.

Attention is com.microsoft ``GroupQueryAttention`` (rotary inside, interleaved pairs as in
llama.cpp's "norm" rope on the GGUF's permuted Q/K rows). When the caller binds the same
buffer to ``past_key_values.i.*`` and ``present.i.*`` (shape [B,kv,max_len,hd]) GQA appends in
place: the engine's KV cache is allocated once. Linear layers are ``MatMulNBits``; see
:mod:`.quant` for the exact block mapping.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .gguf_weights import GgufModel, LlamaHParams, output_tensor
from .quant import BLOCK, NBitsWeight, concat_rows, to_nbits

OPSET = 17
IR_VERSION = 10  # onnxruntime >= 1.20 reads IR 10; onnx 1.23 would default to a newer one


class _Graph:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def name(self, base: str) -> str:
        self._n += 1
        return f"{base}_{self._n}"

    def const(self, name: str, arr: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, domain: str = "",
           outputs: list[str] | None = None, **attrs) -> list[str]:
        outs = outputs or [self.name(f"{op_type}_out") for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name(op_type),
                                           domain=domain, **attrs))
        return outs


class _Builder:
    def __init__(self, model: GgufModel, accuracy_level: int, lm_head_accuracy_level: int,
                 last_only: bool = True) -> None:
        self.last_only = last_only
        self.m = model
        self.hp: LlamaHParams = model.hparams
        self.g = _Graph()
        self.acc = accuracy_level
        self.lm_acc = lm_head_accuracy_level
        self._made: set[str] = set()

    # -- helpers ---------------------------------------------------------------------------
    def linear(self, x: str, w: NBitsWeight, prefix: str, acc: int) -> str:
        g = self.g
        ins = [x, g.const(f"{prefix}.B", w.b), g.const(f"{prefix}.scales", w.scales)]
        if w.zero_points is not None:
            ins.append(g.const(f"{prefix}.zp", w.zero_points))
        (y,) = g.op("MatMulNBits", ins, domain="com.microsoft", K=w.k, N=w.n, bits=w.bits,
                    block_size=BLOCK, accuracy_level=acc)
        if w.mins is None:
            return y
        # Q4_1 block offset: y += (sum over each 32-block of x) @ offsets (exact).
        (xs,) = g.op("MatMul", [x, self.block_sum_matrix(w.k)])
        (corr,) = g.op("MatMul", [xs, g.const(f"{prefix}.offsets", w.mins)])
        (out,) = g.op("Add", [y, corr])
        return out

    def block_sum_matrix(self, k: int) -> str:
        """[K, K/32] 0/1 matrix: x @ S = per-block sums of x (one node instead of two)."""
        name = f"block_sum_{k}"
        if name not in self._made:
            self._made.add(name)
            self.g.const(name, np.kron(np.eye(k // BLOCK, dtype=np.float32),
                                       np.ones((BLOCK, 1), np.float32)))
        return name

    def rms(self, residual: str, branch: str | None, weight: str) -> tuple[str, str]:
        """RMSNorm of ``residual + branch``; returns (normed, new residual). With a branch
        this is one SkipSimplifiedLayerNormalization node (add + norm fused)."""
        g = self.g
        w = g.const(weight, self.m.tensors[weight].raw.astype(np.float32).reshape(-1))
        if branch is None:
            (y,) = g.op("SimplifiedLayerNormalization", [residual, w], axis=-1,
                        epsilon=self.hp.rms_eps, stash_type=1)
            return y, residual
        y, total = g.name("normed"), g.name("residual")
        g.op("SkipSimplifiedLayerNormalization", [branch, residual, w], domain="com.microsoft",
             outputs=[y, "", "", total], epsilon=self.hp.rms_eps)
        return y, total

    # -- graph parts -----------------------------------------------------------------------
    def embedding(self, emb: NBitsWeight) -> str:
        """Token embedding: Gather rows of the Q8_0 table (uint8 = q + 128) and scale them."""
        g, hp = self.g, self.hp
        nb = hp.hidden // BLOCK
        table = g.const("embed.B", emb.b)                                 # [V, nb, 32] uint8
        scales = g.const("embed.scales", emb.scales.reshape(hp.vocab, nb, 1))
        (rows,) = g.op("Gather", [table, "input_ids"], axis=0)           # [B,S,nb,32]
        (rows_f,) = g.op("Cast", [rows], to=TensorProto.FLOAT)
        (centered,) = g.op("Sub", [rows_f, g.const("c128", np.array(128.0, np.float32))])
        (sc,) = g.op("Gather", [scales, "input_ids"], axis=0)            # [B,S,nb,1]
        (vals,) = g.op("Mul", [centered, sc])
        return g.op("Reshape", [vals, g.const("shape_hidden",
                                                np.array([0, 0, hp.hidden], np.int64))])[0]

    def attention_inputs(self) -> tuple[str, str, str, str]:
        g, hp = self.g, self.hp
        (msum,) = g.op("ReduceSum", ["attention_mask", g.const("axis1", np.array([1], np.int64))],
                       keepdims=0)
        (seqlens64,) = g.op("Sub", [msum, g.const("one64", np.array(1, np.int64))])
        (seqlens,) = g.op("Cast", [seqlens64], to=TensorProto.INT32)
        (mshape,) = g.op("Shape", ["attention_mask"])
        (total64,) = g.op("Gather", [mshape, g.const("idx1", np.array(1, np.int64))], axis=0)
        (total,) = g.op("Cast", [total64], to=TensorProto.INT32)
        inv = 1.0 / (hp.rope_theta ** (np.arange(0, hp.head_dim, 2, dtype=np.float64) / hp.head_dim))
        ang = np.arange(hp.context_length, dtype=np.float64)[:, None] * inv[None, :]
        cos = g.const("cos_cache", np.cos(ang).astype(np.float32))
        sin = g.const("sin_cache", np.sin(ang).astype(np.float32))
        return seqlens, total, cos, sin

    def layer(self, i: int, x: str, branch: str | None,
              att: tuple[str, str, str, str]) -> tuple[str, str]:
        """One decoder block; returns (residual, branch) whose sum is the block's output."""
        g, hp, t = self.g, self.hp, self.m.tensors
        seqlens, total, cos, sin = att
        p = f"blk.{i}"
        xn, x = self.rms(x, branch, f"{p}.attn_norm.weight")
        qkv_w = concat_rows([to_nbits(t[f"{p}.attn_{n}.weight"]) for n in ("q", "k", "v")])
        qkv = self.linear(xn, qkv_w, f"{p}.attn_qkv", self.acc)
        attn, _, _ = g.op(
            "GroupQueryAttention",
            [qkv, "", "", f"past_key_values.{i}.key", f"past_key_values.{i}.value",
             seqlens, total, cos, sin, "position_ids"],
            domain="com.microsoft",
            outputs=[g.name(f"{p}.attn"), f"present.{i}.key", f"present.{i}.value"],
            num_heads=hp.n_heads, kv_num_heads=hp.n_kv_heads, do_rotary=1, rotary_interleaved=1,
            scale=float(1.0 / np.sqrt(hp.head_dim)), local_window_size=-1)
        o = self.linear(attn, to_nbits(t[f"{p}.attn_output.weight"]), f"{p}.attn_output", self.acc)
        hn, h = self.rms(x, o, f"{p}.ffn_norm.weight")
        gu_w = concat_rows([to_nbits(t[f"{p}.ffn_{n}.weight"]) for n in ("gate", "up")])
        gu = self.linear(hn, gu_w, f"{p}.ffn_gate_up", self.acc)
        gate, up = g.op("Split", [gu, self.split_ffn], n_out=2, axis=-1)
        (sig,) = g.op("Sigmoid", [gate])
        (silu,) = g.op("Mul", [gate, sig])
        (act,) = g.op("Mul", [silu, up])
        down = self.linear(act, to_nbits(t[f"{p}.ffn_down.weight"]), f"{p}.ffn_down", self.acc)
        return h, down

    def build(self) -> onnx.ModelProto:
        hp, g = self.hp, self.g
        emb_w = to_nbits(self.m.tensors["token_embd.weight"])
        if emb_w.bits != 8 or emb_w.mins is not None:
            raise ValueError("token_embd must be Q8_0 for this builder")
        self.split_ffn = g.const("split_ffn", np.array([hp.ffn, hp.ffn], np.int64))
        x = self.embedding(emb_w)
        att = self.attention_inputs()
        branch = None
        for i in range(hp.n_layers):
            x, branch = self.layer(i, x, branch, att)
        xn, _ = self.rms(x, branch, "output_norm.weight")
        if self.last_only:
            # the head (49k x 576 for SmolLM2) runs for the last position only: a prefill of
            # S tokens needs just the next-token logits, so this saves S - 1 head products
            (xn,) = g.op("Slice", [xn, g.const("last_start", np.array([-1], np.int64)),
                                   g.const("last_end", np.array([2**62], np.int64)),
                                   g.const("axis_seq", np.array([1], np.int64))])
        out_t = output_tensor(self.m)
        if out_t.name == "token_embd.weight":
            # tied: a second copy of the table, because onnxruntime's CPU MatMulNBits only
            # pre-packs (and runs fast, 2 ms vs 330 ms per token) an unshared initializer
            ins = [xn, g.const("lm_head.B", emb_w.b), g.const("lm_head.scales", emb_w.scales),
                   g.const("lm_head.zp", emb_w.zero_points)]
            g.op("MatMulNBits", ins, domain="com.microsoft", outputs=["logits"], K=emb_w.k,
                 N=emb_w.n, bits=8, block_size=BLOCK, accuracy_level=self.lm_acc)
        else:
            y = self.linear(xn, to_nbits(out_t), "lm_head", self.lm_acc)
            g.op("Identity", [y], outputs=["logits"])
        return self.finish()

    def finish(self) -> onnx.ModelProto:
        hp = self.hp
        f, i64 = TensorProto.FLOAT, TensorProto.INT64
        kv = [hp.n_kv_heads, hp.head_dim]
        inputs = [helper.make_tensor_value_info("input_ids", i64, ["batch", "seq"]),
                  helper.make_tensor_value_info("attention_mask", i64, ["batch", "total_seq"]),
                  helper.make_tensor_value_info("position_ids", i64, ["batch", "seq"])]
        outputs = [helper.make_tensor_value_info("logits", f, ["batch", 1 if self.last_only
                                                              else "seq", hp.vocab])]
        for i in range(hp.n_layers):
            for kind in ("key", "value"):
                inputs.append(helper.make_tensor_value_info(
                    f"past_key_values.{i}.{kind}", f, ["batch", kv[0], "past_seq", kv[1]]))
                outputs.append(helper.make_tensor_value_info(
                    f"present.{i}.{kind}", f, ["batch", kv[0], "present_seq", kv[1]]))
        graph = helper.make_graph(self.g.nodes, "llama_gguf", inputs, outputs, self.g.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                        helper.make_opsetid("com.microsoft", 1)],
                                  producer_name="edge_runtime.gguf2onnx")
        model.ir_version = IR_VERSION
        return model


def build_graph(model: GgufModel, accuracy_level: int = 4,
                lm_head_accuracy_level: int = 4, last_only: bool = True) -> onnx.ModelProto:
    """The decoder as an in-memory ModelProto (no I/O). ``last_only``: ``logits`` is
    [B, 1, V], the last position's (what generation needs); else [B, S, V]."""
    return _Builder(model, accuracy_level, lm_head_accuracy_level, last_only).build()

"""What differs between the decoder architectures the builder takes: one small record each.

The graph (:mod:`.graph`) and the numpy reference (:mod:`.reference`) are written once for a
pre-norm decoder with grouped-query attention; an :class:`ArchSpec` switches the parts that
differ. Sources: llama.cpp's ``llama-model.cpp`` graphs and ``convert_hf_to_gguf.py`` (which
permutes Llama's Q/K rows for interleaved rope, and stores Gemma's norm weights as ``1 + w``).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ArchSpec:
    name: str
    rope_interleaved: bool = False   # llama: pairs (2i, 2i+1); the others: halves (NEOX)
    qkv_bias: bool = False           # qwen2: attn_{q,k,v}.bias
    qk_norm: bool = False            # qwen3, gemma3: per-head RMSNorm of q and k before rope
    post_norms: bool = False         # gemma3: post_attention_norm, post_ffw_norm on branches
    embed_scale: bool = False        # gemma3: embeddings times sqrt(hidden)
    activation: str = "silu"         # "silu" (SwiGLU) or "gelu_tanh" (GeGLU)
    swa_pattern: int = 0             # gemma3: 6 -> layers 5, 11, ... global, others sliding
                                     # (a GGUF's attention.sliding_window_pattern wins)
    swa_rope_base: float = 0.0       # rope base of the sliding layers (0: the global one)
    fused_qkv: bool = False          # phi3: one attn_qkv tensor
    fused_gate_up: bool = False      # phi3: ffn_up holds gate | up
    default_chat_template: str = ""  # used when the GGUF carries none
    window_caps_context: bool = False  # phi3: every layer windowed -> context <= the window
    unsupported_tensors: tuple[str, ...] = ()   # present = a variant the builder cannot do

    def layer_tensors(self) -> tuple[str, ...]:
        """Per-layer tensor names (without ``blk.i.`` and ``.weight``) the GGUF must hold."""
        attn = ("attn_qkv",) if self.fused_qkv else ("attn_q", "attn_k", "attn_v")
        ffn = ("ffn_up",) if self.fused_gate_up else ("ffn_gate", "ffn_up")
        names = ("attn_norm",) + attn + ("attn_output", "ffn_norm") + ffn + ("ffn_down",)
        if self.qk_norm:
            names += ("attn_q_norm", "attn_k_norm")
        if self.post_norms:
            names += ("post_attention_norm", "post_ffw_norm")
        return names


# Gemma's turn format; system text goes at the start of the next user turn (Gemma has no
# system role), as in Google's own template.
GEMMA_TEMPLATE = (
    "{% set ns = namespace(system='') %}{% for message in messages %}"
    "{% if message['role'] == 'system' %}{% set ns.system = ns.system + message['content'] | trim"
    " + '\n\n' %}{% else %}{% set role = 'model' if message['role'] == 'assistant' else 'user' %}"
    "{{ '<start_of_turn>' + role + '\n' + (ns.system if role == 'user' else '')"
    " + message['content'] | trim + '<end_of_turn>\n' }}"
    "{% if role == 'user' %}{% set ns.system = '' %}{% endif %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}")

ARCHS: dict[str, ArchSpec] = {
    "llama": ArchSpec("llama", rope_interleaved=True),
    "qwen2": ArchSpec("qwen2", qkv_bias=True),
    "qwen3": ArchSpec("qwen3", qk_norm=True),
    "gemma3": ArchSpec("gemma3", qk_norm=True, post_norms=True, embed_scale=True,
                       activation="gelu_tanh", swa_pattern=6, swa_rope_base=10000.0,
                       default_chat_template=GEMMA_TEMPLATE),
    "phi3": ArchSpec("phi3", fused_qkv=True, fused_gate_up=True, window_caps_context=True,
                     unsupported_tensors=("rope_factors_long.weight",)),   # LongRoPE (128k)
}

"""Tiny random GGUFs of every supported architecture and block type, written with the gguf
package's own writer (``GGUFWriter``; ``gguf.quants.quantize`` where it implements the type,
random blocks with sane fp16 scales for the K types it cannot quantize). No downloads.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.llm_fixtures import TINY_CHATML, TINY_CORPUS, _tiny_vocab

BLOCK_TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K")
ARCH_NAMES = ("llama", "qwen2", "qwen3", "gemma3", "phi3")
SPM_SPACE = "\u2581"
# sizes: K-quant super-blocks need rows of 256 along K
HIDDEN, FFN, HEADS, KV, HEAD_DIM, LAYERS, SLIDING = 256, 512, 4, 2, 64, 2, 5


def _k_blocks(rng: np.random.Generator, qtype: str, rows: int, cols: int) -> np.ndarray:
    """Random K-quant super-blocks whose scales keep weights around +-0.1."""
    import gguf

    _, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[qtype]]
    nb = cols // 256
    raw = rng.integers(0, 256, (rows, nb, size), dtype=np.uint8)

    def f16(scale: float) -> np.ndarray:
        v = (rng.random((rows, nb)) * scale + scale / 4).astype(np.float16)
        return v[..., None].view(np.uint8).reshape(rows, nb, 2)

    if qtype == "Q6_K":
        raw[..., 208:210] = f16(0.1 / (127 * 32))
    else:
        top = 15 if qtype == "Q4_K" else 31
        raw[..., 0:2] = f16(0.1 / (63 * top))    # d
        raw[..., 2:4] = f16(0.05 / 63)           # dmin
    return raw.reshape(rows, nb * size)


def quantized(rng: np.random.Generator, qtype: str, rows: int, cols: int,
              scale: float = 0.05) -> tuple[np.ndarray, object]:
    """(raw bytes [rows, bytes], GGMLQuantizationType) of a random weight."""
    import gguf

    qt = gguf.GGMLQuantizationType[qtype]
    if qtype.endswith("_K"):
        return _k_blocks(rng, qtype, rows, cols), qt
    w = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
    return gguf.quants.quantize(w, qt), qt


def _spm_vocab(n_merges: int) -> tuple[list[str], list[int], list[float]]:
    """A SentencePiece-style vocab: specials, 256 byte tokens, characters and greedy merges
    of TINY_CORPUS with spaces as U+2581; score = -(order added)."""
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
    types = [3, 3, 3, 2, 3, 3]
    tokens = specials + [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256
    text = TINY_CORPUS.replace(" ", SPM_SPACE)
    chars = sorted(set(text) | {"\n"})
    tokens += chars
    types += [1] * len(chars)
    words = [list(SPM_SPACE + w if i else w) for i, w in enumerate(TINY_CORPUS.split(" "))]
    for _ in range(n_merges):
        counts: dict[tuple[str, str], int] = {}
        for w in words:
            for a, b in zip(w, w[1:], strict=False):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        (a, b), _ = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        if a + b in tokens:
            break
        tokens.append(a + b)
        types.append(1)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [a + b]
                i += 1
    scores = [0.0] * len(specials) + [0.0] * 256 + [-float(i) for i in range(len(tokens) - 262)]
    return tokens, types, scores


def write_arch_gguf(path: Path, arch: str, qtype: str = "Q4_1", seed: int = 0,
                    untied: bool = False, embed_qtype: str | None = None,
                    chat_template: str = TINY_CHATML) -> Path:
    """2 layers of ``arch`` (hidden 256, 4 heads / 2 KV heads of 64, ffn 512), every linear
    weight and the token embedding in ``qtype`` (``embed_qtype`` for the embedding)."""
    import gguf

    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), arch)
    spm = arch == "gemma3"
    if spm:
        tokens, types, scores = _spm_vocab(40)
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_scores(scores)
        w.add_bos_token_id(2)
        w.add_eos_token_id(1)
        w.add_add_bos_token(True)
        w.add_add_space_prefix(False)
    else:
        tokens, types, merges = _tiny_vocab(40)
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("smollm")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_add_bos_token(False)
        w.add_chat_template(chat_template)
    w.add_block_count(LAYERS)
    w.add_context_length(128)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(10000.0 if arch != "gemma3" else 1e6)
    w.add_layer_norm_rms_eps(1e-6)
    if arch == "gemma3":
        w.add_sliding_window(SLIDING)
        w.add_uint32(f"{arch}.attention.sliding_window_pattern", 2)   # layer 0 sliding, 1 global

    def norm(n: int) -> np.ndarray:
        return (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    def add(name: str, rows: int, cols: int, qt: str = qtype) -> None:
        raw, t = quantized(rng, qt, rows, cols)
        w.add_tensor(name, raw, raw_dtype=t)

    add("token_embd.weight", len(tokens), HIDDEN, embed_qtype or qtype)
    if arch == "llama":   # Llama 3.x rope scaling: per-frequency factors
        w.add_tensor("rope_freqs.weight", np.linspace(1.0, 8.0, HEAD_DIM // 2, dtype=np.float32))
    q, kv = HEADS * HEAD_DIM, KV * HEAD_DIM
    for i in range(LAYERS):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", norm(HIDDEN))
        w.add_tensor(p + "ffn_norm.weight", norm(HIDDEN))
        if arch == "phi3":
            add(p + "attn_qkv.weight", q + 2 * kv, HIDDEN)
            add(p + "ffn_up.weight", 2 * FFN, HIDDEN)
        else:
            add(p + "attn_q.weight", q, HIDDEN)
            add(p + "attn_k.weight", kv, HIDDEN)
            add(p + "attn_v.weight", kv, HIDDEN)
            add(p + "ffn_gate.weight", FFN, HIDDEN)
            add(p + "ffn_up.weight", FFN, HIDDEN)
        add(p + "attn_output.weight", HIDDEN, q)
        add(p + "ffn_down.weight", HIDDEN, FFN)
        if arch == "qwen2":
            for n, size in (("q", q), ("k", kv), ("v", kv)):
                w.add_tensor(p + f"attn_{n}.bias", (0.1 * rng.standard_normal(size))
                             .astype(np.float32))
        if arch in ("qwen3", "gemma3"):
            w.add_tensor(p + "attn_q_norm.weight", norm(HEAD_DIM))
            w.add_tensor(p + "attn_k_norm.weight", norm(HEAD_DIM))
        if arch == "gemma3":
            w.add_tensor(p + "post_attention_norm.weight", norm(HIDDEN))
            w.add_tensor(p + "post_ffw_norm.weight", norm(HIDDEN))
    w.add_tensor("output_norm.weight", np.full(HIDDEN, 0.5, np.float32))
    if untied:
        add("output.weight", len(tokens), HIDDEN)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def build_variants(tmp: Path, variants: dict, archs: tuple = (("llama", "Q4_1"),
                                                              ("gemma3", "Q4_K"))) -> dict:
    """A tiny GGUF of each ``(arch, qtype)`` built once per variant (``{key: build_llm
    keyword arguments}``): ``{(arch, key): model dir, (arch, "gguf"): the GGUF}``."""
    from edge_runtime.models.gguf2onnx.build import build_llm

    out: dict = {}
    for arch, qtype in archs:
        g = out[arch, "gguf"] = write_arch_gguf(tmp / f"{arch}.gguf", arch, qtype)
        for key, kwargs in variants.items():
            out[arch, key] = tmp / f"{arch}-{key}"
            build_llm(g, out[arch, key], **kwargs)
    return out

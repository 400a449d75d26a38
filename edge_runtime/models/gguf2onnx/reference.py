"""An fp32 numpy forward pass over the dequantized GGUF weights, and the fidelity check.

The reference follows llama.cpp's Llama graph: RMSNorm, rope on interleaved pairs (the GGUF
stores Q/K rows permuted for that), grouped-query causal attention, SwiGLU, tied or separate
output head. It is slow (seconds for a few hundred tokens) and meant for checks only.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np

from .gguf_weights import GgufModel, dequantize, output_tensor, read_gguf

log = logging.getLogger(__name__)

DEFAULT_TEXT = (
    "The sky looks blue because sunlight is scattered by the gases in the atmosphere. "
    "Blue light has a shorter wavelength than red light, so it is scattered much more "
    "strongly. This effect is called Rayleigh scattering, after the British physicist "
    "Lord Rayleigh, who described it in the nineteenth century. At sunrise and sunset the "
    "light travels through more air before it reaches us, so most of the blue is scattered "
    "away and the sky turns orange and red. Clouds are white because their water droplets "
    "are large enough to scatter all colours almost equally. On the Moon there is no air, "
    "so the sky stays black even during the day. Astronauts have described the view as "
    "stark and beautiful, with the Earth hanging like a bright marble in the darkness. "
    "Scientists still study how particles and pollution change the colour of the sky."
)


def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rope(x: np.ndarray, pos: np.ndarray, theta: float) -> np.ndarray:
    """x [S, heads, hd]; rotate pairs (2i, 2i+1) by pos * theta^(-2i/hd)."""
    hd = x.shape[-1]
    inv = 1.0 / (theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    ang = pos[:, None].astype(np.float64) * inv[None, :]
    cos, sin = np.cos(ang).astype(np.float32)[:, None, :], np.sin(ang).astype(np.float32)[:, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * cos - x1 * sin
    out[..., 1::2] = x0 * sin + x1 * cos
    return out


def reference_logits(model: GgufModel, ids: list[int]) -> np.ndarray:
    """fp32 logits [S, V] for the token ids ``ids`` (teacher-forced, no cache)."""
    hp, t = model.hparams, model.tensors
    s = len(ids)
    x = dequantize(t["token_embd.weight"])[np.asarray(ids)]
    pos = np.arange(s)
    mask = np.triu(np.full((s, s), -np.inf, np.float32), k=1)
    group = hp.n_heads // hp.n_kv_heads
    for i in range(hp.n_layers):
        p = f"blk.{i}"
        w = {n: dequantize(t[f"{p}.{n}.weight"]) for n in
             ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
              "ffn_gate", "ffn_up", "ffn_down")}
        xn = _rms(x, w["attn_norm"], hp.rms_eps)
        q = (xn @ w["attn_q"].T).reshape(s, hp.n_heads, hp.head_dim)
        k = (xn @ w["attn_k"].T).reshape(s, hp.n_kv_heads, hp.head_dim)
        v = (xn @ w["attn_v"].T).reshape(s, hp.n_kv_heads, hp.head_dim)
        q, k = _rope(q, pos, hp.rope_theta), _rope(k, pos, hp.rope_theta)
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) / np.float32(np.sqrt(hp.head_dim)) + mask
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        attn = np.einsum("hqk,khd->qhd", probs, v).reshape(s, hp.n_heads * hp.head_dim)
        h = x + attn @ w["attn_output"].T
        hn = _rms(h, w["ffn_norm"], hp.rms_eps)
        gate, up = hn @ w["ffn_gate"].T, hn @ w["ffn_up"].T
        x = h + ((gate / (1.0 + np.exp(-gate))) * up) @ w["ffn_down"].T
    xn = _rms(x, dequantize(t["output_norm.weight"]), hp.rms_eps)
    return (xn @ dequantize(output_tensor(model)).T).astype(np.float32)


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z.astype(np.float64)
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _perplexity(logits: np.ndarray, ids: list[int]) -> float:
    lp = _log_softmax(logits[:-1])
    nll = -lp[np.arange(len(ids) - 1), np.asarray(ids[1:])]
    return float(np.exp(nll.mean()))


def onnx_logits(model_dir: Path, ids: list[int], threads: int = 2) -> np.ndarray:
    """Logits [S, V] of the built ONNX model for ``ids``, teacher-forced: one prefill call
    when the model outputs every position ("logits": "all"), else token by token through
    the KV cache (a "last"-only model: the decode path the engine runs)."""
    from ...onnx_session import build_session

    cfg = json.loads((model_dir / "model_config.json").read_text())
    sess = build_session(model_dir / cfg["model_file"], threads=threads, what="built LLM")
    layers = range(cfg["num_layers"])
    names = ["logits"] + [f"present.{i}.{k}" for i in layers for k in ("key", "value")]
    past = {f"past_key_values.{i}.{k}": np.zeros((1, cfg["num_key_value_heads"], 0,
                                                   cfg["head_dim"]), np.float32)
            for i in layers for k in ("key", "value")}
    chunks = [ids] if cfg.get("logits", "all") == "all" else [[t] for t in ids]
    out, done = [], 0
    for chunk in chunks:
        s = len(chunk)
        feeds = {"input_ids": np.asarray([chunk], np.int64),
                 "attention_mask": np.ones((1, done + s), np.int64),
                 "position_ids": np.arange(done, done + s, dtype=np.int64)[None], **past}
        res = sess.run(names, feeds)
        out.append(res[0][0])
        past = {n.replace("present", "past_key_values"): v for n, v in zip(names[1:], res[1:])}
        done += s
    return np.concatenate(out, axis=0)


def check_fidelity(gguf_path: Path, model_dir: Path, text: str | None = None) -> dict:
    """Compare the ONNX model with the fp32 GGUF reference on ``text`` (teacher forced).

    Returns ``top1_agreement`` (share of positions whose argmax matches), ``max_abs_diff``
    of logits, both perplexities, ``tokens`` (sequence length) and ``seconds``.
    """
    from tokenizers import Tokenizer

    t0 = time.perf_counter()
    model_dir = Path(model_dir)
    model = read_gguf(Path(gguf_path))
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    ids = tok.encode(text or DEFAULT_TEXT).ids
    ref = reference_logits(model, ids)
    got = onnx_logits(model_dir, ids)
    agree = float(np.mean(ref.argmax(-1) == got.argmax(-1)))
    result = {"top1_agreement": round(agree, 4),
              "max_abs_diff": float(np.abs(ref - got).max()),
              "perplexity_onnx": round(_perplexity(got, ids), 4),
              "perplexity_reference": round(_perplexity(ref, ids), 4),
              "tokens": len(ids), "seconds": round(time.perf_counter() - t0, 2)}
    log.info("fidelity %s", result)
    return result

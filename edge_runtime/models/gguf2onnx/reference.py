"""An fp32 numpy forward pass over the dequantized GGUF weights, and the fidelity check.

The reference follows llama.cpp's graphs for the architectures in :data:`.arch.ARCHS`:
RMSNorm, rope on interleaved pairs (Llama: the GGUF stores Q/K rows permuted for that) or on
halves, optional QKV bias, q/k norm, post-branch norms, scaled embeddings, causal or
sliding-window grouped-query attention, SwiGLU or GeGLU, tied or separate output head.
It is slow (seconds for a few hundred tokens) and meant for checks only.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ProviderError
from .gguf_weights import GgufModel, QTensor, dequantize, output_tensor, read_gguf

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

# The text the int8 FFN build calibrates its smoothing on (``ffn_input_ranges``): prose,
# a question with a number and a short chat, none of it the fidelity check's text.
CALIBRATION_TEXT = (
    "The old lighthouse keeper climbed the spiral stairs every evening at dusk. He trimmed "
    "the wick, polished the great lens, and watched the ships pass along the rocky coast. In "
    "winter the storms came from the north, and the waves broke over the harbour wall. "
    "Children from the village sometimes visited him, asking about shipwrecks and sea "
    "monsters. He told them about the tides, the moon, and the stars sailors used to find "
    "their way home.\nQuestion: How many minutes are in three hours? Answer: There are 180 "
    "minutes in three hours, because each hour has 60 minutes.\nUser: Can you suggest a "
    "quick dinner with rice and vegetables?\nAssistant: Try a vegetable fried rice: "
    "stir-fry onions, peppers and peas, add cooked rice and soy sauce, and finish with a "
    "beaten egg.\n"
)


def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rope(x: np.ndarray, pos: np.ndarray, inv: np.ndarray, interleaved: bool) -> np.ndarray:
    """x [S, heads, hd]; rotate pairs (2i, 2i+1) (interleaved, Llama) or (i, i + hd/2)
    (NEOX) by pos * inv[i]."""
    ang = pos[:, None].astype(np.float64) * inv[None, :]
    cos = np.cos(ang).astype(np.float32)[:, None, :]
    sin = np.sin(ang).astype(np.float32)[:, None, :]
    half = x.shape[-1] // 2
    x0, x1 = (x[..., 0::2], x[..., 1::2]) if interleaved else (x[..., :half], x[..., half:])
    r0, r1 = x0 * cos - x1 * sin, x0 * sin + x1 * cos
    out = np.empty_like(x)
    if interleaved:
        out[..., 0::2], out[..., 1::2] = r0, r1
    else:
        out[..., :half], out[..., half:] = r0, r1
    return out


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def _embed_rows(t: QTensor, ids: list[int]) -> np.ndarray:
    """fp32 rows ``ids`` of the embedding table, dequantizing those rows only."""
    if t.qtype == "F32" or t.raw.ndim != 2:
        return dequantize(t)[np.asarray(ids)]
    rows = QTensor(t.name, t.qtype, len(ids), t.cols, np.ascontiguousarray(t.raw[ids]))
    return dequantize(rows).reshape(len(ids), t.cols)


def reference_logits(model: GgufModel, ids: list[int],
                     ffn_inputs: dict[int, np.ndarray] | None = None,
                     attn_inputs: dict[int, np.ndarray] | None = None,
                     out_inputs: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """fp32 logits [S, V] for the token ids ``ids`` (teacher-forced, no cache).

    With ``ffn_inputs`` given, it receives per layer the largest magnitude of each channel
    of the FFN's input (the ffn_norm output) over the sequence, and the output head is not
    run (an empty array is returned); ``attn_inputs`` the same for the attention's input (the
    attn_norm output), ``out_inputs`` for the attention output projection's input (the
    heads' weighted values)."""
    from .graph import attn_scale, rope_inv_freq

    hp, t, spec = model.hparams, model.tensors, model.hparams.spec
    s = len(ids)
    x = _embed_rows(t["token_embd.weight"], ids)
    if spec.embed_scale:
        x = x * np.float32(np.sqrt(hp.hidden))
    pos = np.arange(s)
    causal = np.triu(np.full((s, s), -np.inf, np.float32), k=1)
    window = causal.copy()
    if hp.sliding_window:
        window[pos[:, None] - pos[None, :] >= hp.sliding_window] = -np.inf
    inv_global = rope_inv_freq(model, hp.rope_theta, hp.rope_scale)
    inv_local = rope_inv_freq(model, spec.swa_rope_base or hp.rope_theta, 1.0)
    group = hp.n_heads // hp.n_kv_heads
    nq, nkv = hp.n_heads * hp.head_dim, hp.n_kv_heads * hp.head_dim

    def w(name: str) -> np.ndarray:
        return dequantize(t[name])

    for i in range(hp.n_layers):
        p = f"blk.{i}"
        sliding = hp.is_sliding(i)
        xn = _rms(x, w(f"{p}.attn_norm.weight"), hp.rms_eps)
        if attn_inputs is not None:
            attn_inputs[i] = np.abs(xn).max(axis=0).astype(np.float32)
        if spec.fused_qkv:
            qkv = xn @ w(f"{p}.attn_qkv.weight").T
            q, k, v = qkv[:, :nq], qkv[:, nq:nq + nkv], qkv[:, nq + nkv:]
        else:
            q, k, v = (xn @ w(f"{p}.attn_{n}.weight").T for n in "qkv")
        if spec.qkv_bias:
            q, k, v = (y + w(f"{p}.attn_{n}.bias") for y, n in zip((q, k, v), "qkv",
                                                                    strict=True))
        q = q.reshape(s, hp.n_heads, hp.head_dim)
        k = k.reshape(s, hp.n_kv_heads, hp.head_dim)
        v = v.reshape(s, hp.n_kv_heads, hp.head_dim)
        if spec.qk_norm:
            q = _rms(q, w(f"{p}.attn_q_norm.weight"), hp.rms_eps)
            k = _rms(k, w(f"{p}.attn_k_norm.weight"), hp.rms_eps)
        inv = inv_local if sliding else inv_global
        q = _rope(q, pos, inv, spec.rope_interleaved)
        k = _rope(k, pos, inv, spec.rope_interleaved)
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) * np.float32(attn_scale(hp))
        scores = scores + (window if sliding else causal)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        attn = np.einsum("hqk,khd->qhd", probs, v).reshape(s, nq)
        if out_inputs is not None:
            out_inputs[i] = np.abs(attn).max(axis=0).astype(np.float32)
        o = attn @ w(f"{p}.attn_output.weight").T
        if spec.post_norms:
            o = _rms(o, w(f"{p}.post_attention_norm.weight"), hp.rms_eps)
        h = x + o
        hn = _rms(h, w(f"{p}.ffn_norm.weight"), hp.rms_eps)
        if ffn_inputs is not None:
            ffn_inputs[i] = np.abs(hn).max(axis=0).astype(np.float32)
        if spec.fused_gate_up:
            gu = hn @ w(f"{p}.ffn_up.weight").T
            gate, up = gu[:, :hp.ffn], gu[:, hp.ffn:]
        else:
            gate, up = hn @ w(f"{p}.ffn_gate.weight").T, hn @ w(f"{p}.ffn_up.weight").T
        act = _gelu_tanh(gate) if spec.activation == "gelu_tanh" else gate / (1.0 + np.exp(-gate))
        down = (act * up) @ w(f"{p}.ffn_down.weight").T
        if spec.post_norms:
            down = _rms(down, w(f"{p}.post_ffw_norm.weight"), hp.rms_eps)
        x = h + down
    if ffn_inputs is not None:
        return np.zeros((s, 0), np.float32)
    xn = _rms(x, dequantize(t["output_norm.weight"]), hp.rms_eps)
    return (xn @ dequantize(output_tensor(model)).T).astype(np.float32)


def ffn_input_ranges(model: GgufModel, ids: list[int],
                     attn: dict[int, np.ndarray] | None = None,
                     out: dict[int, np.ndarray] | None = None) -> dict[int, np.ndarray]:
    """Per layer, each FFN input channel's largest magnitude over ``ids`` (the calibration
    of the int8 FFN build: see :mod:`.graph`); ``attn``, when given, receives the same for
    the attention's input (the int8 QKV), ``out`` for the attention output projection's."""
    ranges: dict[int, np.ndarray] = {}
    reference_logits(model, ids, ffn_inputs=ranges, attn_inputs=attn, out_inputs=out)
    return ranges


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z.astype(np.float64)
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _perplexity(logits: np.ndarray, ids: list[int]) -> float:
    lp = _log_softmax(logits[:-1])
    nll = -lp[np.arange(len(ids) - 1), np.asarray(ids[1:])]
    return float(np.exp(nll.mean()))


def open_built(model_dir: Path, provider: str, threads: int, max_len: int,
               batch: int = 1, step_ops: Path | None = None) -> tuple[Any, dict]:
    """(:class:`~edge_runtime.llm.providers.OpenedSession`, model_config) of the built model
    on ``provider``, opened as :class:`~edge_runtime.llm.OnnxLlmEngine` opens it (TensorRT
    with its cache folder and shape profiles for ``max_len`` tokens and ``batch`` rows; on
    the CPU with ``step_ops``, the library of :mod:`edge_runtime.llm.step_ops`, the model's
    step-ops graph when it has one: ``cfg["opened_file"]`` names the graph opened).
    ProviderError when onnxruntime cannot start ``provider``."""
    from ...llm.providers import open_session, provider_hint, trt_profiles
    from ...llm.runner import PREFILL_CHUNK
    from ...llm.step_ops import variant_of

    cfg = json.loads((model_dir / "model_config.json").read_text())
    profiles = trt_profiles(cfg, max_len, batch, PREFILL_CHUNK) if provider == "tensorrt" \
        else None
    variant = variant_of(model_dir, cfg, step_ops) if step_ops and provider == "cpu" else None
    path = variant or model_dir / cfg["model_file"]
    cfg["opened_file"] = path.name
    opened = open_session(path, [provider], threads, model_dir / "trt_cache", profiles,
                          custom_ops=step_ops if variant else None)
    if opened.device != provider:          # this onnxruntime lacks the provider altogether
        raise ProviderError(f"onnxruntime could not start its {provider} provider "
                            f"(got {opened.providers})", hint=provider_hint(provider))
    return opened, cfg


def onnx_logits(model_dir: Path, ids: list[int], threads: int = 2,
                provider: str = "cpu", max_len: int = 0,
                opened: tuple[Any, dict] | None = None,
                step_ops: Path | None = None) -> np.ndarray:
    """Logits [S, V] of the built ONNX model for ``ids``, teacher-forced: one prefill call
    when the model outputs every position ("logits": "all"), else token by token through
    the engine's KV cache runner (a "last"-only model: the decode path it runs). ``provider``:
    cpu, cuda or tensorrt (ProviderError when onnxruntime cannot start it); ``max_len``:
    the runner's cache, at least ``len(ids)`` (an engine's, to share its TensorRT engine);
    ``opened``: a session from :func:`open_built` to use instead of opening one;
    ``step_ops``: as for :func:`open_built`."""
    max_len = max(int(max_len), len(ids))
    session, cfg = opened or open_built(model_dir, provider, threads, max_len,
                                        step_ops=step_ops)
    if cfg.get("logits", "all") == "last":
        # the engine's own decode path: the KV cache bound in place (on the GPU for the
        # fp16 variant under CUDA), one token a call, no cache copied between calls
        from ...llm.runner import KvRunner
        runner = KvRunner(session, cfg, max_len)
        return np.stack([runner.feed([t]).copy() for t in ids])
    empty = np.zeros((1, cfg["num_key_value_heads"], 0, cfg["head_dim"]),
                     np.float16 if cfg.get("kv_cache_dtype") == "float16" else np.float32)
    feeds = {"input_ids": np.asarray([ids], np.int64),
             "attention_mask": np.ones((1, len(ids)), np.int64),
             "position_ids": np.arange(len(ids), dtype=np.int64)[None],
             **{f"past_key_values.{i}.{k}": empty
                for i in range(cfg["num_layers"]) for k in ("key", "value")}}
    return session.session.run(["logits"], feeds)[0][0]


def batched_top1(model_dir: Path, ids: list[int], ref_top: np.ndarray, threads: int = 2,
                 provider: str = "cpu", opened: tuple[Any, dict] | None = None) -> float:
    """Top-1 agreement with ``ref_top`` (the reference's argmax per position of ``ids``)
    through the batched decode the daemon runs with ``llm.max_batch`` > 1: two rows of
    different lengths in one step (row 0 from the first token, row 1 after a prefill of
    the first half), teacher-forced, over every position each row computes. ``opened``:
    as for :func:`onnx_logits`."""
    from ...llm.batch_runner import BatchKvRunner

    session, cfg = opened or open_built(model_dir, provider, threads, len(ids) + 1, 2)
    runner = BatchKvRunner(session, cfg, len(ids) + 1, 2)
    half = max(1, len(ids) // 2)
    hits = []
    for slot, n in ((0, 1), (1, half)):
        logits = runner.prefill(slot, ids[:n], reuse=False)
        assert logits is not None                         # no limit: the prefill is whole
        hits.append(int(logits.argmax()) == ref_top[n - 1])
    for i in range(1, len(ids)):
        feeds = {0: ids[i]}
        if half - 1 + i < len(ids):
            feeds[1] = ids[half - 1 + i]
        out = runner.step(feeds)
        hits.append(int(out[0].argmax()) == ref_top[i])
        if 1 in out:
            hits.append(int(out[1].argmax()) == ref_top[half - 1 + i])
    return float(np.mean(hits))


def text_ids(model: GgufModel, model_dir: Path, text: str) -> list[int]:
    """``text`` as the engine feeds a prompt: the built tokenizer's ids, BOS first where the
    model adds one (Gemma needs it), cut to what a short-context model can hold."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    ids = tok.encode(text, add_special_tokens=False).ids
    if model.metadata.get("add_bos"):
        ids = [model.bos_id] + ids
    return ids[:model.hparams.context_length]


def compare_logits(ref: np.ndarray, got: np.ndarray, ids: list[int]) -> dict:
    """``top1_agreement`` (share of positions whose argmax matches), ``max_abs_diff`` of
    the logits, both perplexities and ``tokens``: the ONNX logits ``got`` against the fp32
    reference ``ref`` for the same ``ids``."""
    return {"top1_agreement": round(float(np.mean(ref.argmax(-1) == got.argmax(-1))), 4),
            "max_abs_diff": float(np.abs(ref - got).max()),
            "perplexity_onnx": round(_perplexity(got, ids), 4),
            "perplexity_reference": round(_perplexity(ref, ids), 4),
            "tokens": len(ids)}


def check_fidelity(gguf_path: Path, model_dir: Path, text: str | None = None,
                   provider: str = "cpu", step_ops: Path | None = None) -> dict:
    """Compare the ONNX model, run on ``provider`` (with ``step_ops``: as the engine runs
    it, see :func:`open_built`), with the fp32 GGUF reference on ``text`` (teacher forced):
    :func:`compare_logits`' figures, the provider, the ``graph`` file and ``seconds``."""
    t0 = time.perf_counter()
    model_dir = Path(model_dir)
    model = read_gguf(Path(gguf_path))
    ids = text_ids(model, model_dir, text or DEFAULT_TEXT)
    ref = reference_logits(model, ids)
    opened = open_built(model_dir, provider, 2, len(ids), step_ops=step_ops)
    got = onnx_logits(model_dir, ids, provider=provider, opened=opened)
    result = {**compare_logits(ref, got, ids), "provider": provider,
              "graph": opened[1]["opened_file"],
              "seconds": round(time.perf_counter() - t0, 2)}
    log.info("fidelity %s", result)
    return result

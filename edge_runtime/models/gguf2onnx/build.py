"""``build_llm``: GGUF -> model.onnx + tokenizer.json + model_config.json (no torch)."""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Literal

import onnx

from ...errors import ModelLoadError
from .graph import HEAD_BLOCK, HEAD_RESCORE, PRECISIONS, build_graph
from .gguf_weights import GgufModel, read_gguf, sha256_file
from .tokenizer import write_tokenizer

log = logging.getLogger(__name__)

BUILDER_VERSION = "gguf2onnx-10"   # 2: last-position logits; 3: architectures; 4: head in
#                                   row chunks, fp16 variant; 5: int8 gate/up in one node;
#                                   6: int8 QKV too; 7: int8 attention output, block sums by
#                                   ReduceSum, the head's top 2 rescored exactly; 8: a tied
#                                   head in 4-bit blocks of 128, its top 16 rescored exactly;
#                                   9: those 16 found through groups of 64 logits; 10:
#                                   int8_attention its own option (int8_ffn alone: the FFN)
MODEL_FILE = "model.onnx"
EXTERNAL_DATA_FILE = "model.onnx.data"


def _end_of_turn_ids(model: GgufModel) -> list[int]:
    ids = {model.eos_id}
    for name in ("<|im_end|>", "<|eot_id|>", "<|end_of_turn|>", "<end_of_turn>", "<|endoftext|>"):
        if name in model.tokens:
            ids.add(model.tokens.index(name))
    return sorted(ids)


SAMPLE_CHAT: tuple[tuple[Literal["system", "user", "assistant"], str], ...] = (
    ("system", "Be brief."), ("user", "Hi."), ("assistant", "Hello."),
    ("user", "Why is the sky blue?"))


def check_chat_template(template: str, source: str) -> None:
    """Render a system + two-turn chat with the engine's own renderer; ModelLoadError when
    the template does not parse or render (before anything is built)."""
    from jinja2 import TemplateError

    from ...llm.prompt import ChatPrompt
    from ...types import Message

    try:
        ChatPrompt(template, lambda s: []).render([Message(r, c) for r, c in SAMPLE_CHAT])
    except (TemplateError, ModelLoadError, TypeError, ValueError) as exc:
        raise ModelLoadError(f"the chat template in {source} cannot be rendered by the "
                             f"engine's renderer: {getattr(exc, 'message', None) or exc}",
                             hint="use a GGUF whose tokenizer.chat_template is plain Jinja "
                             "(system, user and assistant roles)") from None


def model_config(model: GgufModel, sha256: str, accuracy_level: int) -> dict:
    hp = model.hparams
    return {
        "builder_version": BUILDER_VERSION,
        "architecture": hp.arch,
        "model_file": MODEL_FILE,
        "external_data_file": EXTERNAL_DATA_FILE,
        "name": model.metadata.get("name", ""),
        "source_file": model.path.name,
        "source_sha256": sha256,
        "num_layers": hp.n_layers,
        "hidden_size": hp.hidden,
        "num_attention_heads": hp.n_heads,
        "num_key_value_heads": hp.n_kv_heads,
        "head_dim": hp.head_dim,
        "vocab_size": hp.vocab,
        "context_length": hp.context_length,
        "context_length_trained": hp.context_length_trained,
        "sliding_window": hp.sliding_window,
        "rope_theta": hp.rope_theta,
        "rms_eps": hp.rms_eps,
        "bos_token_id": model.bos_id,
        "eos_token_id": model.eos_id,
        "end_of_turn_token_ids": _end_of_turn_ids(model),
        "add_bos_token": bool(model.metadata.get("add_bos", False)),
        "chat_template": model.chat_template or hp.spec.default_chat_template,
        "tokenizer_kind": "spm" if model.metadata.get("tokenizer_model") == "llama" else
        "byte_level",
        "accuracy_level": accuracy_level,
        "kv_cache_dtype": "float32",
        "io": {"inputs": ["input_ids", "attention_mask", "position_ids",
                          "past_key_values.{i}.key", "past_key_values.{i}.value"],
               "outputs": ["logits", "present.{i}.key", "present.{i}.value"],
               "kv_layout": "batch,kv_heads,seq,head_dim",
               "past_present_share_buffer": True},
    }


def build_llm(gguf_path: Path, out_dir: Path, *, accuracy_level: int = 4,
              lm_head_accuracy_level: int = 4, last_only: bool = True,
              precision: str = "fp32", int8_ffn: bool = False,
              int8_attention: bool = False, fold_offsets: bool = False,
              fold_steps: bool = False) -> dict:
    """Convert ``gguf_path`` into ``out_dir`` and return a small info dict.

    The weights are the GGUF's own blocks, re-packed bit-exactly. ``accuracy_level`` is
    MatMulNBits' compute type for the 4-bit decoder layers: 4 (default) = int8 activations
    in blocks of 32, as llama.cpp computes Q4_1 x Q8_1 (top-1 agreement with the fp32
    reference 97.5 % over 161 tokens, decode 1.5x llama.cpp's speed, batched steps scale
    better); 1 = fp32 activations (99.4 %, decode about llama.cpp's speed, batched rows
    bit-identical to single rows). ``lm_head_accuracy_level`` is the same for the 8-bit tied
    output head, where 4 is needed for speed (level 1 dequantizes 28 M weights per call:
    330 ms per token). ``last_only`` (default) runs the output head for the last position
    only: a prefill needs the next-token logits alone (TTFT 174 -> 108 ms for 48 tokens,
    together with level 4). The GGUF is read and checked first (unsupported architecture or
    block type, truncated file, no tokenizer: a typed ModelLoadError before anything is
    written); the model is built in a temporary sibling directory that then replaces
    ``out_dir``, so a failed build leaves the previously built model as it was.
    ``precision`` "fp16" builds the variant for the CUDA / TensorRT providers (fp16
    activations and KV cache, the same weight blocks; see :func:`.graph.build_graph`).
    ``int8_ffn`` (fp32 builds; ignored for fp16) makes the FFN gate/up projections int8
    GEMMs calibrated on :data:`.reference.CALIBRATION_TEXT` (prefill much faster, an
    approximation the build log reports; see :mod:`.graph`); ``int8_attention`` the same for
    the attention QKV and output projections. ``fold_offsets`` (fp32 builds; ignored for
    fp16) makes each weight with block offsets that stays in blocks one MatMulNBits node, its
    offsets folded in (decode faster, an approximation the build log reports; see
    :func:`.quant.fold_offsets`). ``fold_steps`` (with ``int8_ffn``; ignored for fp16) gives a
    decode step of one row the FFN gate/up's own blocks (offsets folded), while prefill
    chunks and batched steps keep the int8 GEMMs (both in the model; see
    :func:`.graph.build_graph`).
    """
    t0 = time.perf_counter()
    if precision not in PRECISIONS:
        raise ModelLoadError(f"unknown precision {precision!r}; the builder makes "
                             f"{', '.join(PRECISIONS)}", hint="use --precision fp32 or fp16")
    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    model = read_gguf(gguf_path)     # every typed input error is raised here, before any I/O
    check_chat_template(model.chat_template or model.hparams.spec.default_chat_template,
                        gguf_path.name)
    sha = sha256_file(gguf_path)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".building",
                                 dir=out_dir.parent))
    try:
        info = _build_into(model, sha, work, accuracy_level, lm_head_accuracy_level, last_only,
                           precision, int8_ffn and precision == "fp32",
                           int8_attention and precision == "fp32",
                           fold_offsets and precision == "fp32",
                           fold_steps=fold_steps and int8_ffn and precision == "fp32")
        _swap_dir(work, out_dir)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    info["model_dir"] = str(out_dir)
    info["seconds"] = round(time.perf_counter() - t0, 2)
    log.info("built %s", info)
    return info


def _calibrate_int8(model: GgufModel, out_dir: Path) -> tuple[dict, dict, dict]:
    """The int8 build's calibration: (FFN input ranges, attention input ranges, attention
    output input ranges) of the numpy reference over CALIBRATION_TEXT, tokenized as the
    engine feeds a prompt."""
    from .reference import CALIBRATION_TEXT, ffn_input_ranges, text_ids

    ids = text_ids(model, out_dir, CALIBRATION_TEXT)
    t0 = time.perf_counter()
    attn: dict = {}
    out: dict = {}
    ffn = ffn_input_ranges(model, ids, attn=attn, out=out)
    log.info("int8 projections calibrated on %d tokens in %.1f s", len(ids),
             time.perf_counter() - t0)
    return ffn, attn, out


def _swap_dir(new: Path, out_dir: Path) -> None:
    """Put ``new`` in place of ``out_dir``: two renames, the old model removed last (a reader
    sees the old directory or the new one, never a partial one)."""
    old = None
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(out_dir, old)
    os.replace(new, out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _build_into(model: GgufModel, sha: str, out_dir: Path, accuracy_level: int,
                lm_head_accuracy_level: int, last_only: bool, precision: str = "fp32",
                int8_ffn: bool = False, int8_attention: bool = False,
                fold_offsets: bool = False, *, fold_steps: bool = False) -> dict:
    out_dir.chmod(0o755)
    write_tokenizer(model, out_dir)
    report: dict = {}
    ffn, attn, out = (_calibrate_int8(model, out_dir) if int8_ffn or int8_attention
                      else (None, None, None))
    if not int8_ffn:
        ffn = None
    if not int8_attention:
        attn = out = None
    proto = build_graph(model, accuracy_level=accuracy_level,
                        lm_head_accuracy_level=lm_head_accuracy_level, last_only=last_only,
                        report=report, precision=precision, ffn_ranges=ffn, attn_ranges=attn,
                        out_ranges=out, fold_offsets=fold_offsets, fold_steps=fold_steps)
    types = dict(Counter(t.qtype for t in model.tensors.values()))
    for name, (qtype, err) in sorted(report["approximated"].items()):
        log.warning("%s: GGUF type %s has no exact ONNX form; re-quantized to 8-bit blocks of "
                    "32, max abs error vs the GGUF dequantization %.3g", name, qtype, err)
    if report["int8_ffn"]:
        log.warning("int8 build: %d projections (each layer's %s) are int8 GEMMs (smoothed, "
                    "per-column int8 weights, int8 activations), largest abs weight error "
                    "%.3g; `models check` measures the cost", len(report["int8_ffn"]),
                    " and ".join(what for what, on in (
                        ("FFN gate/up", int8_ffn),
                        ("attention QKV and output", int8_attention)) if on),
                    max(report["int8_ffn"].values()))
    if report["folded"]:
        log.warning("folded offsets: %d projections are one MatMulNBits each, the part of "
                    "their block offsets integer zero points miss as extra weight rows over "
                    "the input's block means, largest abs weight error %.3g; `models check` "
                    "measures the cost", len(report["folded"]), max(report["folded"].values()))
    if fold_steps:
        log.warning("folded steps: in a call of one row (a decode step) the FFN gate/up read "
                    "the weights' blocks instead of the int8 GEMMs, which keep calls of "
                    "several rows (both are in the model); the step's block weights with "
                    "offsets, %d, are folded (largest abs weight error %.3g)",
                    len(report["step_folded"]), max(report["step_folded"].values(), default=0))
    if report["head_candidates_error"] is not None:
        log.info("output head: a 4-bit copy of the 8-bit table (blocks of %d) picks the %d "
                 "candidates whose logits are then computed exactly (max abs weight error of "
                 "the copy %.3g; the other logits keep it)", HEAD_BLOCK,
                 min(HEAD_RESCORE, model.hparams.vocab), report["head_candidates_error"])
    if not report["approximated"]:
        log.info("%s weight blocks mapped exactly (%s)",
                 "the other" if report["int8_ffn"] or report["folded"] else "all", types)
    if report["fp16_rounded"]:
        log.warning("fp16 variant: %d float constant values (block scales and offsets, norm "
                    "weights, rope tables) rounded to fp16; `models check` measures the cost",
                    report["fp16_rounded"])
    # Weights go to an external data file: onnxruntime memory-maps it instead of copying
    # the protobuf (measured peak RSS 241 MB vs 309 MB for one 151 MB file).
    onnx.save_model(proto, str(out_dir / MODEL_FILE), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=EXTERNAL_DATA_FILE,
                    size_threshold=1024)
    (out_dir / EXTERNAL_DATA_FILE).chmod(0o644)
    cfg = model_config(model, sha, accuracy_level)
    cfg["lm_head_accuracy_level"] = lm_head_accuracy_level
    cfg["precision"] = precision
    cfg["kv_cache_dtype"] = "float16" if precision == "fp16" else "float32"
    cfg["fp16_rounded_values"] = report["fp16_rounded"]
    cfg["logits"] = "last" if last_only else "all"   # [B,1,V] or [B,S,V]
    cfg["tensor_types"] = types
    cfg["approximated_tensors"] = {n: {"type": q, "max_abs_error": e}
                                   for n, (q, e) in report["approximated"].items()}
    cfg["int8_ffn"] = int8_ffn
    cfg["int8_attention"] = int8_attention
    cfg["fold_offsets"] = fold_offsets
    cfg["folded_projections"] = len(report["folded"])
    cfg["fold_steps"] = fold_steps
    cfg["head_candidates_4bit"] = report["head_candidates_error"] is not None
    (out_dir / "model_config.json").write_text(json.dumps(cfg, indent=2))
    size = sum(p.stat().st_size for p in out_dir.iterdir() if p.is_file())
    return {"model_file": MODEL_FILE, "external_data": EXTERNAL_DATA_FILE,
            "bytes_on_disk": size, "layers": model.hparams.n_layers,
            "architecture": model.hparams.arch, "vocab": model.hparams.vocab,
            "source_sha256": sha, "accuracy_level": accuracy_level,
            "builder_version": BUILDER_VERSION, "precision": precision,
            "int8_ffn": int8_ffn, "int8_attention": int8_attention,
            "fold_offsets": fold_offsets, "fold_steps": fold_steps,
            "approximated_tensors": len(report["approximated"])}

"""Read a Llama-architecture GGUF: hyper-parameters, tokenizer metadata and raw quantized blocks.

Only the ``gguf`` and ``numpy`` packages are used, so this runs on a Jetson without torch.
Weights stay in the GGUF's own block format; :mod:`.quant` turns those blocks into the
layouts the ONNX contrib ops want, and :func:`dequantize` gives fp32 for the reference pass.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelLoadError, ModelMissingError

log = logging.getLogger(__name__)

BUILD_HINT = "run `edge-runtime models pull` then `edge-runtime models build`"


@dataclass(frozen=True)
class LlamaHParams:
    """Shapes of a Llama decoder; all sizes are element counts."""

    n_layers: int
    hidden: int
    ffn: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab: int
    context_length: int
    rope_theta: float
    rms_eps: float


@dataclass
class QTensor:
    """One GGUF tensor: ``rows`` x ``cols`` logical fp values stored as ``qtype`` blocks.

    ``raw`` holds the GGUF bytes with shape [rows, bytes_per_row] (uint8) for quantized
    types, or the fp32 values themselves for F32 tensors.
    """

    name: str
    qtype: str
    rows: int
    cols: int
    raw: np.ndarray


@dataclass
class GgufModel:
    path: Path
    hparams: LlamaHParams
    tensors: dict[str, QTensor]
    tokens: list[str]
    token_types: list[int]
    merges: list[str]
    bos_id: int
    eos_id: int
    chat_template: str
    metadata: dict[str, Any] = field(default_factory=dict)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def _field(reader: Any, key: str, default: Any = None) -> Any:
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


def _str_list(reader: Any, key: str) -> list[str]:
    f = reader.fields.get(key)
    if f is None:
        return []
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]


def read_gguf(path: Path) -> GgufModel:
    """Parse ``path``; raise ModelMissingError if absent, ModelLoadError if not a Llama GGUF."""
    import gguf  # build-time dependency (extra "build")

    path = Path(path)
    if not path.is_file():
        raise ModelMissingError(f"GGUF file not found: {path}", hint=BUILD_HINT)
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as exc:  # gguf raises ValueError/struct.error on bad files
        raise ModelLoadError(f"cannot parse GGUF {path}: {exc}", hint=BUILD_HINT) from exc
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ModelLoadError(f"unsupported GGUF architecture {arch!r} in {path} (only 'llama')",
                             hint="use a Llama-architecture GGUF such as SmolLM2")
    p = f"{arch}."
    hidden = int(_field(reader, p + "embedding_length"))
    n_heads = int(_field(reader, p + "attention.head_count"))
    tokens = _str_list(reader, "tokenizer.ggml.tokens")
    hp = LlamaHParams(
        n_layers=int(_field(reader, p + "block_count")),
        hidden=hidden,
        ffn=int(_field(reader, p + "feed_forward_length")),
        n_heads=n_heads,
        n_kv_heads=int(_field(reader, p + "attention.head_count_kv", n_heads)),
        head_dim=int(_field(reader, p + "rope.dimension_count", hidden // n_heads)),
        vocab=int(_field(reader, p + "vocab_size", len(tokens))),
        context_length=int(_field(reader, p + "context_length", 2048)),
        rope_theta=float(_field(reader, p + "rope.freq_base", 10000.0)),
        rms_eps=float(_field(reader, p + "attention.layer_norm_rms_epsilon", 1e-5)),
    )
    tensors: dict[str, QTensor] = {}
    for t in reader.tensors:
        cols = int(t.shape[0])
        rows = int(np.prod(t.shape[1:])) if len(t.shape) > 1 else 1
        data = np.asarray(t.data)
        qtype = t.tensor_type.name
        if qtype == "F32":
            data = data.reshape(rows, cols) if rows > 1 else data.reshape(cols)
        tensors[t.name] = QTensor(t.name, qtype, rows, cols, data)
    tt_field = reader.fields.get("tokenizer.ggml.token_type")
    token_types = [int(tt_field.parts[i][0]) for i in tt_field.data] if tt_field else []
    model = GgufModel(
        path=path, hparams=hp, tensors=tensors, tokens=tokens, token_types=token_types,
        merges=_str_list(reader, "tokenizer.ggml.merges"),
        bos_id=int(_field(reader, "tokenizer.ggml.bos_token_id", 1)),
        eos_id=int(_field(reader, "tokenizer.ggml.eos_token_id", 2)),
        chat_template=str(_field(reader, "tokenizer.chat_template", "") or ""),
        metadata={"name": _field(reader, "general.name", ""),
                  "file_type": _field(reader, "general.file_type"),
                  "tokenizer_pre": _field(reader, "tokenizer.ggml.pre", ""),
                  "tokenizer_model": _field(reader, "tokenizer.ggml.model", "gpt2"),
                  "add_bos": bool(_field(reader, "tokenizer.ggml.add_bos_token", False))},
    )
    _check_tensors(model)
    return model


def _check_tensors(model: GgufModel) -> None:
    hp = model.hparams
    need = ["token_embd.weight", "output_norm.weight"]
    for i in range(hp.n_layers):
        need += [f"blk.{i}.{n}.weight" for n in ("attn_norm", "attn_q", "attn_k", "attn_v",
                                                    "attn_output", "ffn_norm", "ffn_gate",
                                                    "ffn_up", "ffn_down")]
    missing = [n for n in need if n not in model.tensors]
    if missing:
        raise ModelLoadError(f"GGUF {model.path} lacks tensors {missing[:4]}...",
                             hint="the file is truncated or not a Llama decoder")


def dequantize(t: QTensor) -> np.ndarray:
    """fp32 values of ``t`` with shape [rows, cols] (or [cols] for vectors)."""
    if t.qtype == "F32":
        return np.asarray(t.raw, dtype=np.float32)
    import gguf

    out = gguf.quants.dequantize(t.raw, gguf.GGMLQuantizationType[t.qtype])
    return np.asarray(out, dtype=np.float32).reshape(t.rows, t.cols)


def output_tensor(model: GgufModel) -> QTensor:
    """The lm_head weight: ``output.weight`` or, when tied, the token embedding."""
    return model.tensors.get("output.weight") or model.tensors["token_embd.weight"]

"""Read a decoder GGUF (see :data:`.arch.ARCHS`): hyper-parameters, tokenizer metadata and
raw quantized blocks.

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
from .arch import ARCHS, ArchSpec

log = logging.getLogger(__name__)

BUILD_HINT = "run `edge-runtime models pull` then `edge-runtime models build`"


class GgufParseError(ModelLoadError):
    """The file is not a readable GGUF (truncated, corrupt or another format)."""


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
    arch: str = "llama"
    sliding_window: int = 0          # 0: every layer attends to the whole context
    rope_scale: float = 1.0          # linear rope scaling factor (positions / factor)
    attn_scale: float = 0.0          # 0: 1 / sqrt(head_dim)
    context_length_trained: int = 0
    swa_pattern: int = 0             # every n-th layer global, the others sliding (gemma3: 6)

    @property
    def spec(self) -> ArchSpec:
        return ARCHS[self.arch]

    def is_sliding(self, layer: int) -> bool:
        return (self.sliding_window > 0 and self.swa_pattern > 0
                and (layer + 1) % self.swa_pattern != 0)


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
    scores: list[float] = field(default_factory=list)
    bos_id: int = 1
    eos_id: int = 2
    chat_template: str = ""
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


MAX_CONTEXT = 8192   # rope tables and the engine's context stop here (a voice turn is short)
SUPPORTED_TOKENIZERS = ("gpt2", "llama")


def read_gguf(path: Path) -> GgufModel:
    """Parse ``path``; raise ModelMissingError if absent, ModelLoadError (one line naming the
    problem and what is supported) for an unsupported, truncated or incomplete GGUF."""
    import gguf  # build-time dependency (extra "build")

    path = Path(path)
    if not path.is_file():
        raise ModelMissingError(f"GGUF file not found: {path}", hint=BUILD_HINT)
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as exc:  # gguf raises ValueError/struct.error on bad files
        raise GgufParseError(f"cannot parse GGUF {path}: {exc} (truncated or not a GGUF file)",
                             hint="pull the file again: `edge-runtime models pull --force`"
                             ) from exc
    arch = _field(reader, "general.architecture")
    if arch not in ARCHS:
        raise ModelLoadError(f"unsupported GGUF architecture {arch!r} in {path.name}; "
                             f"supported: {', '.join(ARCHS)}",
                             hint="use a GGUF of one of the supported architectures")
    try:
        return _read(reader, path, str(arch))
    except (TypeError, ValueError) as exc:
        raise ModelLoadError(f"GGUF {path.name}: bad or missing hyper-parameter ({exc})",
                             hint="the file is corrupt or was written by an unknown converter"
                             ) from exc


def _int_or(value: Any, default: int) -> int:
    return int(value) if isinstance(value, (int, np.integer)) else default


def _read(reader: Any, path: Path, arch: str) -> GgufModel:
    p = f"{arch}."
    hidden = int(_field(reader, p + "embedding_length"))
    n_heads = int(_field(reader, p + "attention.head_count"))
    tokens = _str_list(reader, "tokenizer.ggml.tokens")
    tok_model = _field(reader, "tokenizer.ggml.model", "")
    if not tokens or tok_model not in SUPPORTED_TOKENIZERS:
        what = "has no tokenizer (tokenizer.ggml.tokens)" if not tokens else \
            f"has tokenizer model {tok_model!r}"
        raise ModelLoadError(f"GGUF {path.name} {what}; the builder needs an embedded "
                             f"tokenizer of type {' or '.join(SUPPORTED_TOKENIZERS)}",
                             hint="use a GGUF converted with its tokenizer (llama.cpp's "
                             "convert_hf_to_gguf.py writes it)")
    head_dim = int(_field(reader, p + "attention.key_length",
                          _field(reader, p + "rope.dimension_count", hidden // n_heads)))
    ctx = int(_field(reader, p + "context_length", 2048))
    window = int(_field(reader, p + "attention.sliding_window", 0) or 0)
    usable = min(ctx, window) if window and ARCHS[arch].window_caps_context else ctx
    scaling = _field(reader, p + "rope.scaling.type", "none")
    factor = float(_field(reader, p + "rope.scaling.factor", 1.0) or 1.0)
    hp = LlamaHParams(
        n_layers=int(_field(reader, p + "block_count")),
        hidden=hidden,
        ffn=int(_field(reader, p + "feed_forward_length")),
        n_heads=n_heads,
        n_kv_heads=int(_field(reader, p + "attention.head_count_kv", n_heads)),
        head_dim=head_dim,
        vocab=int(_field(reader, p + "vocab_size", len(tokens))),
        context_length=min(usable, MAX_CONTEXT),
        rope_theta=float(_field(reader, p + "rope.freq_base", 10000.0)),
        rms_eps=float(_field(reader, p + "attention.layer_norm_rms_epsilon", 1e-5)),
        arch=arch,
        sliding_window=window if ARCHS[arch].swa_pattern else 0,
        rope_scale=factor if scaling == "linear" else 1.0,
        context_length_trained=ctx,
        swa_pattern=_int_or(_field(reader, p + "attention.sliding_window_pattern"),
                            ARCHS[arch].swa_pattern),
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
    sc_field = reader.fields.get("tokenizer.ggml.scores")
    scores = [float(sc_field.parts[i][0]) for i in sc_field.data] if sc_field else []
    model = GgufModel(
        path=path, hparams=hp, tensors=tensors, tokens=tokens, token_types=token_types,
        merges=_str_list(reader, "tokenizer.ggml.merges"), scores=scores,
        bos_id=int(_field(reader, "tokenizer.ggml.bos_token_id", 1)),
        eos_id=int(_field(reader, "tokenizer.ggml.eos_token_id", 2)),
        chat_template=str(_field(reader, "tokenizer.chat_template", "") or ""),
        metadata={"name": _field(reader, "general.name", ""),
                  "file_type": _field(reader, "general.file_type"),
                  "tokenizer_pre": _field(reader, "tokenizer.ggml.pre", ""),
                  "tokenizer_model": tok_model,
                  "add_bos": bool(_field(reader, "tokenizer.ggml.add_bos_token", False)),
                  "add_space_prefix": bool(_field(reader, "tokenizer.ggml.add_space_prefix",
                                                  tok_model == "llama"))},
    )
    if tok_model == "gpt2" and not model.merges:
        raise ModelLoadError(f"GGUF {path.name} has a BPE tokenizer without merges",
                             hint="use a GGUF converted with its full tokenizer")
    if tok_model == "llama" and len(scores) != len(tokens):
        raise ModelLoadError(f"GGUF {path.name} has a SentencePiece tokenizer without scores",
                             hint="use a GGUF converted with its full tokenizer")
    _check_tensors(model)
    return model


def _check_tensors(model: GgufModel) -> None:
    hp = model.hparams
    spec = hp.spec
    need = ["token_embd.weight", "output_norm.weight"]
    for i in range(hp.n_layers):
        need += [f"blk.{i}.{n}.weight" for n in spec.layer_tensors()]
        if spec.qkv_bias:
            need += [f"blk.{i}.attn_{n}.bias" for n in ("q", "k", "v")]
    variant = [n for n in spec.unsupported_tensors if n in model.tensors]
    if variant:
        raise ModelLoadError(f"GGUF {model.path.name} is a {spec.name} variant the builder does "
                             f"not support (it has {variant[0]}: long-context rope factors)",
                             hint=f"use the short-context {spec.name} model")
    missing = [n for n in need if n not in model.tensors]
    if missing:
        raise ModelLoadError(f"GGUF {model.path.name} lacks tensors {missing[:4]}...",
                             hint=f"the file is truncated or not a {spec.name} decoder")
    from .quant import check_types
    check_types(model.tensors.values())


def dequantize(t: QTensor) -> np.ndarray:
    """fp32 values of ``t`` with shape [rows, cols] (or [cols] for vectors), by the gguf
    package's own dequantizer."""
    if t.qtype == "F32":
        return np.asarray(t.raw, dtype=np.float32)
    from .quant import dequantize_gguf

    out = dequantize_gguf(t)
    return out.reshape(-1) if t.rows == 1 and out.ndim == 2 and t.raw.ndim == 1 else out


def output_tensor(model: GgufModel) -> QTensor:
    """The lm_head weight: ``output.weight`` or, when tied, the token embedding."""
    return model.tensors.get("output.weight") or model.tensors["token_embd.weight"]

"""Every supported architecture x every exactly mapped block type, on tiny random GGUFs
written by the gguf package (no download): the built ONNX graph must reproduce the numpy
reference forward pass (reference.py) to float rounding, with fp32 activations."""
from __future__ import annotations

import dataclasses
import json
import logging

import numpy as np
import pytest

pytest.importorskip("gguf")
pytest.importorskip("onnx")

from tests.gguf_fixtures import ARCH_NAMES, BLOCK_TYPES, SLIDING, write_arch_gguf  # noqa: E402

TEXT = "the cat sat on the mat. the dog ate the bone. there is another theory 42"


def _build(tmp_path, arch, qtype="Q4_1", last_only=True, **kw):
    from edge_runtime.models.gguf2onnx.build import build_llm

    g = write_arch_gguf(tmp_path / f"{arch}.gguf", arch, qtype, untied=arch == "qwen2", **kw)
    out = tmp_path / f"{arch}_onnx"
    build_llm(g, out, accuracy_level=1, lm_head_accuracy_level=1, last_only=last_only)
    return g, out


@pytest.mark.parametrize("qtype", BLOCK_TYPES)
@pytest.mark.parametrize("arch", ARCH_NAMES)
def test_arch_and_block_type_match_reference(tmp_path, arch, qtype):
    from edge_runtime.models.gguf2onnx import check_fidelity

    g, out = _build(tmp_path, arch, qtype)
    cfg = json.loads((out / "model_config.json").read_text())
    assert cfg["architecture"] == arch
    assert cfg["approximated_tensors"] == {} and cfg["tensor_types"][qtype] > 0
    r = check_fidelity(g, out, TEXT)
    assert r["tokens"] > 2 * SLIDING
    assert r["top1_agreement"] == 1.0
    assert r["max_abs_diff"] < 1e-3


def test_gemma3_sliding_window_is_applied_in_the_model(tmp_path):
    """The ONNX logits match the reference with the window, and not without it."""
    from tokenizers import Tokenizer

    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf
    from edge_runtime.models.gguf2onnx.reference import onnx_logits, reference_logits

    g, out = _build(tmp_path, "gemma3", "Q8_0", last_only=False)   # one multi-token prefill
    model = read_gguf(g)
    assert model.hparams.sliding_window == SLIDING and model.hparams.is_sliding(0)
    assert not model.hparams.is_sliding(1)
    ids = [model.bos_id] + Tokenizer.from_file(str(out / "tokenizer.json")).encode(TEXT).ids
    got = onnx_logits(out, ids)
    assert np.abs(got - reference_logits(model, ids)).max() < 1e-3
    no_window = dataclasses.replace(model, hparams=dataclasses.replace(model.hparams,
                                                                       sliding_window=0))
    assert np.abs(got - reference_logits(no_window, ids)).max() > 1e-2


def test_gemma3_config_tokenizer_and_engine(tmp_path):
    from edge_runtime.llm import load_engine
    from edge_runtime.types import GenerationParams, Message

    _, out = _build(tmp_path, "gemma3", "Q4_K")
    cfg = json.loads((out / "model_config.json").read_text())
    assert cfg["tokenizer_kind"] == "spm" and cfg["add_bos_token"] is True
    assert "<start_of_turn>" in cfg["chat_template"]       # the GGUF carried none
    assert 5 in cfg["end_of_turn_token_ids"]               # <end_of_turn>
    eng = load_engine(out, providers=("cpu",), threads=1, context_tokens=64)
    msgs = [Message("system", "be brief"), Message("user", "the cat")]
    assert eng.prompt.render(msgs) == ("<start_of_turn>user\nbe brief\n\nthe cat<end_of_turn>\n"
                                       "<start_of_turn>model\n")
    ids = eng.prompt.tokens(msgs)
    assert ids[:2] == [2, 4]                               # <bos>, <start_of_turn>
    text = "".join(eng.generate(msgs, GenerationParams(temperature=0.0, max_new_tokens=10,
                                                       stop_at_sentence=0)))
    assert eng.last_stats["new_tokens"] >= 1 and "\u2581" not in text


def test_spm_tokenizer_byte_fallback_round_trips(tmp_path):
    from tokenizers import Tokenizer

    from edge_runtime.llm.text_stream import spm_piece_to_bytes

    _, out = _build(tmp_path, "gemma3", "Q8_0")
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    s = "the cat é<start_of_turn> dog"
    enc = tok.encode(s, add_special_tokens=False)
    assert "<0xC3>" in enc.tokens and "<0xA9>" in enc.tokens and "<start_of_turn>" in enc.tokens
    assert b"".join(spm_piece_to_bytes(t) for t in enc.tokens).decode() == s


def test_untranslatable_block_type_is_requantized_and_logged(tmp_path, caplog):
    from edge_runtime.models.gguf2onnx import check_fidelity

    with caplog.at_level(logging.WARNING, logger="edge_runtime.models.gguf2onnx.build"):
        g, out = _build(tmp_path, "llama", "MXFP4", embed_qtype="Q8_0")
    cfg = json.loads((out / "model_config.json").read_text())
    approx = cfg["approximated_tensors"]
    assert set(approx) >= {"blk.0.attn_q.weight", "blk.1.ffn_down.weight"}
    assert all(a["type"] == "MXFP4" and 0 < a["max_abs_error"] < 0.05 for a in approx.values())
    assert any("MXFP4" in r.message and "max abs error" in r.getMessage()
               for r in caplog.records)
    assert check_fidelity(g, out, TEXT)["max_abs_diff"] > 1e-5   # not exact, and said so


def test_output_head_split_into_row_chunks_matches_reference(tmp_path, monkeypatch):
    """A head larger than HEAD_CHUNK_ROWS becomes several MatMulNBits + one Concat (a lower
    load peak), with the same logits as the reference."""
    import onnx

    from edge_runtime.models.gguf2onnx import check_fidelity, graph

    monkeypatch.setattr(graph, "HEAD_CHUNK_ROWS", 48)
    g, out = _build(tmp_path, "llama", "Q8_0")
    proto = onnx.load(str(out / "model.onnx"), load_external_data=False)
    heads = [n for n in proto.graph.node if n.op_type == "MatMulNBits"
             and n.input[1].startswith("lm_head.")]
    vocab = json.loads((out / "model_config.json").read_text())["vocab_size"]
    assert len(heads) == -(-vocab // 48) > 1
    # the chunks' Concat feeds the exact rescoring of the best candidates (tied head)
    assert [n.op_type for n in proto.graph.node if "logits_approx" in n.output] == ["Concat"]
    assert [n.op_type for n in proto.graph.node if "logits" in n.output] == ["ScatterElements"]
    r = check_fidelity(g, out, TEXT)
    assert r["top1_agreement"] == 1.0 and r["max_abs_diff"] < 1e-3


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_batched_decode_matches_the_reference_with_rows_of_different_lengths(tmp_path, arch):
    """Two rows in each step, one a half-text prefill ahead (Gemma's sliding window
    included): every position's argmax as the fp32 reference's; a shifted reference is
    told apart."""
    from edge_runtime.models.gguf2onnx.gguf_weights import read_gguf
    from edge_runtime.models.gguf2onnx.reference import batched_top1, reference_logits, text_ids

    g, out = _build(tmp_path, arch, "Q8_0")
    model = read_gguf(g)
    ids = text_ids(model, out, TEXT)
    top = reference_logits(model, ids).argmax(-1)
    assert batched_top1(out, ids, top, threads=1) == 1.0
    assert batched_top1(out, ids, np.roll(top, 1), threads=1) < 0.5

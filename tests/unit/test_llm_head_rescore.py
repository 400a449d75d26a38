"""The output head's best candidates rescored exactly (gguf2onnx.graph.rescore_top): the
approximate head's largest logits (int8 activations; a 4-bit copy of an 8-bit table) are
replaced by fp32 products with the table's exact rows, every other logit is left as it was;
untied heads and the fp16 variant keep the plain head. Checked on tiny GGUFs against numpy."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gguf")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from tests.gguf_fixtures import write_arch_gguf  # noqa: E402

IDS = list(range(5, 29))


def _ops(d) -> list[str]:
    return [n.op_type for n in onnx.load(str(d / "model.onnx"),
                                         load_external_data=False).graph.node]


def _run_exposed(d, ids: list[int]) -> dict[str, np.ndarray]:
    """One prefill of ``ids`` with the head's input and its approximate logits made outputs
    too."""
    from onnx import TensorProto, helper

    proto = onnx.load(str(d / "model.onnx"))
    g = proto.graph
    xn = "logits_approx"
    head_in = next(n for n in g.node if n.op_type == "MatMulNBits"
                   and n.input[1].startswith("lm_head")).input[0]
    for name in (xn, head_in):
        g.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    cfg_layers = sum(1 for o in sess.get_outputs() if o.name.endswith(".key"))
    kv = sess.get_inputs()[3].shape
    feeds = {"input_ids": np.asarray([ids], np.int64),
             "attention_mask": np.ones((1, len(ids)), np.int64),
             "position_ids": np.arange(len(ids), dtype=np.int64)[None]}
    for i in range(cfg_layers):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{i}.{kind}"] = np.zeros((1, kv[1], 0, kv[3]), np.float32)
    out = sess.run(["logits", xn, head_in], feeds)
    return {"logits": out[0][0, -1], "approx": out[1][0, -1], "xn": out[2][0, -1]}


@pytest.mark.parametrize("arch,qtype", [("llama", "Q8_0"), ("gemma3", "Q4_K"),
                                        ("qwen2", "Q4_1"), ("phi3", "Q6_K")])
def test_top_candidates_are_exact_and_the_rest_unchanged(tmp_path, arch, qtype):
    from edge_runtime.models.gguf2onnx.build import build_llm
    from edge_runtime.models.gguf2onnx.gguf_weights import dequantize, read_gguf
    from edge_runtime.models.gguf2onnx.graph import HEAD_RESCORE

    gguf_path = write_arch_gguf(tmp_path / "m.gguf", arch, qtype)
    d = tmp_path / "onnx"
    build_llm(gguf_path, d)
    # candidates through groups (vocab 299 / 333: groups of 13 / 9), rescored by one scatter
    assert _ops(d).count("ReduceMax") == 1 and _ops(d).count("ScatterElements") == 1
    # Q4_1 / Q4_K tables are 4-bit blocks already; Q8_0 and Q6_K (blocks of 16, re-blocked
    # by HEAD_BLOCK) get a 4-bit copy
    assert _head_bits(d) == {4}
    got = _run_exposed(d, IDS)
    table = dequantize(read_gguf(gguf_path).tensors["token_embd.weight"])
    top = np.argsort(got["approx"])[-HEAD_RESCORE:]
    changed = np.flatnonzero(got["logits"] != got["approx"])
    assert set(changed) <= set(top.tolist())
    exact = table[top].astype(np.float64) @ got["xn"].astype(np.float64)
    np.testing.assert_allclose(got["logits"][top], exact, rtol=1e-5, atol=1e-5)
    # the approximate head is off by more than the fp32 rounding: the rescoring did something
    assert np.abs(got["approx"][top] - exact).max() > 1e-4
    others = np.setdiff1d(np.arange(len(got["approx"])), top)
    assert np.array_equal(got["logits"][others], got["approx"][others])


def test_candidate_groups_divide_the_vocabulary_and_leave_k_groups():
    from edge_runtime.models.gguf2onnx.graph import candidate_group

    assert candidate_group(262144, 16) == 64          # Gemma 3
    assert candidate_group(49152, 16) == 64           # SmolLM2
    assert candidate_group(151936, 16) == 64          # Qwen2.5
    assert candidate_group(299, 16) == 13             # 23 groups of 13; 23 would leave 13
    assert candidate_group(307, 16) == 1              # a prime: one plain TopK
    assert candidate_group(40, 16) == 2


def _head_bits(d) -> set[int]:
    proto = onnx.load(str(d / "model.onnx"), load_external_data=False)
    return {a.i for n in proto.graph.node if n.op_type == "MatMulNBits"
            and n.input[1].startswith("lm_head") for a in n.attribute if a.name == "bits"}


def test_an_8bit_table_heads_in_4bit_at_level_4_and_stays_exact_at_level_1(tmp_path):
    """The candidates come from a 4-bit copy of a Q8_0 table (half the bytes per token) in
    the default build; the accuracy-level-1 build keeps the table's own 8-bit blocks, and
    the config says which."""
    import json

    from edge_runtime.models.gguf2onnx.build import build_llm

    g = write_arch_gguf(tmp_path / "m.gguf", "llama", "Q8_0")
    build_llm(g, tmp_path / "l4")
    build_llm(g, tmp_path / "l1", accuracy_level=1, lm_head_accuracy_level=1)
    assert _head_bits(tmp_path / "l4") == {4} and _head_bits(tmp_path / "l1") == {8}
    cfgs = [json.loads((tmp_path / d / "model_config.json").read_text()) for d in ("l4", "l1")]
    assert [c["head_candidates_4bit"] for c in cfgs] == [True, False]


def test_untied_head_and_fp16_variant_keep_the_plain_head(tmp_path):
    from edge_runtime.models.gguf2onnx.build import build_llm

    untied = write_arch_gguf(tmp_path / "u.gguf", "llama", "Q4_1", untied=True)
    build_llm(untied, tmp_path / "u")
    assert "TopK" not in _ops(tmp_path / "u")
    tied = write_arch_gguf(tmp_path / "t.gguf", "llama", "Q4_1")
    build_llm(tied, tmp_path / "fp16", precision="fp16")
    assert "TopK" not in _ops(tmp_path / "fp16")

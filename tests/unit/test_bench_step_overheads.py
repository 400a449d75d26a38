"""benchmarks.step_overheads: its graphs compute what they stand for, and it reports both
measurements."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("kind", ["slice", "pool_concat", "reduce_concat", "conv_concat",
                                  "concat_only"])
def test_every_chain_hands_its_input_on(kind):
    """Each link computes the means (or not) and slices x back out: the chain's output is x,
    so every way is timed on the same tensor sizes."""
    from benchmarks.step_overheads import HIDDEN, _session, means_chain

    x = np.random.default_rng(0).standard_normal((1, 1, HIDDEN)).astype(np.float32)
    (y,) = _session(means_chain(kind, 3), 1).run(None, {"x": x})
    assert np.array_equal(y, x)


def test_the_pool_concat_link_appends_the_block_means():
    from benchmarks.step_overheads import BLOCK, HIDDEN, _session, means_chain

    m = means_chain("pool_concat", 1)
    m.graph.output[0].name = "c0"                        # the Concat's output, before Slice
    x = np.random.default_rng(1).standard_normal((1, 1, HIDDEN)).astype(np.float32)
    (y,) = _session(m, 1).run(None, {"x": x})
    assert y.shape == (1, 1, HIDDEN + HIDDEN // BLOCK)
    np.testing.assert_allclose(y[0, 0, HIDDEN:], x.reshape(-1, BLOCK).mean(1), rtol=1e-5)


def test_attention_appends_the_token_in_place():
    """The KV cache bound as past and present gets the new token at the past length and
    keeps what it held before."""
    from benchmarks.step_overheads import HEAD_DIM, HEADS, KV_HEADS, _session, attention_graph

    max_len, past = 16, 5
    sess = _session(attention_graph(1, max_len), 1)
    rng = np.random.default_rng(2)
    k = rng.random((1, KV_HEADS, max_len, HEAD_DIM), np.float32)
    before = k.copy()
    kv = ort.OrtValue.ortvalue_from_numpy(k)
    v = ort.OrtValue.ortvalue_from_numpy(rng.random((1, KV_HEADS, max_len, HEAD_DIM),
                                                    np.float32))
    io = sess.io_binding()
    io.bind_cpu_input("qkv", rng.random((1, 1, (HEADS + 2 * KV_HEADS) * HEAD_DIM), np.float32))
    io.bind_cpu_input("seqlens_k", np.array([past], np.int32))
    io.bind_cpu_input("total", np.array(past + 1, np.int32))
    io.bind_output("out0")                               # the first output bound
    io.bind_ortvalue_input("past_k0", kv)
    io.bind_ortvalue_output("k0", kv)
    io.bind_ortvalue_input("past_v0", v)
    io.bind_ortvalue_output("v0", v)
    sess.run_with_iobinding(io)
    after = kv.numpy()
    assert io.copy_outputs_to_cpu()[0].shape == (1, 1, HEADS * HEAD_DIM)
    assert np.array_equal(after[:, :, :past], before[:, :, :past])
    assert not np.array_equal(after[:, :, past], before[:, :, past])


def test_main_reports_both_measurements(capsys):
    from benchmarks.step_overheads import main

    assert main(["--runs", "10", "--pairs", "2", "--layers", "2", "--max-len", "32",
                 "--pasts", "1,8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["block_means_us_per_pair"]) == {"pool_concat", "reduce_concat",
                                                   "conv_concat", "concat_only"}
    assert set(out["attention_us_per_node"]) == {"1", "8"}
    assert all(v > 0 for v in out["attention_us_per_node"].values())
    assert main(["--pasts", "2000"]) == 2

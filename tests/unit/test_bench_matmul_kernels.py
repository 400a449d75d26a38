"""benchmarks.matmul_kernels builds a valid model per kernel, checks it against numpy and
reports each."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("onnx")


def test_every_kernel_runs_at_one_row_and_at_a_prefill(capsys):
    from benchmarks.matmul_kernels import KINDS, main

    assert main(["--k", "64", "--n", "32", "--rows", "4", "--copies", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["k"], out["n"], out["copies"]) == (64, 32, 2)
    for kind in KINDS:
        assert out[kind]["one_row_us"] > 0 and out[kind]["4_rows_us"] > 0
        assert out[kind]["max_rel_error"] < 0.05, kind


@pytest.mark.parametrize("kind", ["nbits4_offsets", "nbits4_zp", "nbits4_float_zp"])
def test_each_q4_1_form_computes_its_own_weights(kind):
    """The reference weights are what the graph multiplies by (a wrong zero-point packing or a
    missing offsets term shows as a large error), at every copy."""
    from benchmarks.matmul_kernels import _model, _session, check

    model, refs = _model(96, 16, kind, copies=3)
    sess = _session(model, threads=1, spin_us=0)
    assert check(sess, refs, 96) < 0.05
    wrong = [w + 0.01 for w in refs]               # one quantization step off everywhere
    assert check(sess, wrong, 96) > 0.05
    assert len({float(np.abs(w).sum()) for w in refs}) == 3   # each copy its own weights


def test_unknown_kind_is_refused():
    from benchmarks.matmul_kernels import main

    with pytest.raises(SystemExit):
        main(["--kinds", "nbits3"])

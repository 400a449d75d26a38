"""benchmarks.matmul_kernels builds a valid one-node model per kernel and reports each."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("onnx")


def test_every_kernel_runs_at_one_row_and_at_a_prefill(capsys):
    from benchmarks.matmul_kernels import main

    assert main(["--k", "64", "--n", "32", "--rows", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["k"], out["n"]) == (64, 32)
    for kind in ("nbits4", "nbits8", "dq_int8"):
        assert out[kind]["one_row_us"] > 0 and out[kind]["4_rows_us"] > 0

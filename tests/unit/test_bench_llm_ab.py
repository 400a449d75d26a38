"""benchmarks.llm_ab: the specs measured in rotated load orders, each spec's figures kept by
its place (the same directory twice stays two specs), ratios combined per process."""
from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("onnx")
pytest.importorskip("gguf")

from tests.llm_fixtures import write_tiny_gguf  # noqa: E402


def _row(spec: str, wall: float) -> dict:
    return {"spec": spec, "step_wall": wall, "step_cpu": 2 * wall, "prefill_wall": 10 * wall,
            "prefill_cpu": 20 * wall}


def test_ratios_are_the_geometric_mean_of_each_load_orders_ratio():
    from benchmarks.llm_ab import combine

    # order 1 loads A first (A slower), order 2 loads B first (B slower): a 10 % bias each way
    rows = combine([[_row("A", 1.10), _row("B", 1.00)], [_row("A", 1.00), _row("B", 1.10)]])
    assert [r["spec"] for r in rows] == ["A", "B"]
    assert rows[1]["step_wall_ratios"] == pytest.approx([1.10, 1 / 1.10])
    assert rows[1]["step_wall_ratio"] == pytest.approx(1.0)      # the bias cancels
    assert rows[0]["step_wall_ratio"] == 1.0
    assert rows[1]["step_wall"] == pytest.approx(1.05)            # median of the two
    assert rows[1]["prefill_cpu_ratio"] == pytest.approx(1.0)


def test_same_spec_twice_keeps_both_places():
    from benchmarks.llm_ab import combine

    rows = combine([[_row("A", 1.0), _row("A", 0.8)]])
    assert rows[1]["step_wall_ratio"] == pytest.approx(1.25)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from edge_runtime.models.gguf2onnx import build_llm

    d = tmp_path_factory.mktemp("tiny_ab")
    build_llm(write_tiny_gguf(d / "tiny.gguf"), d / "onnx", accuracy_level=1,
              lm_head_accuracy_level=1)
    return str(d / "onnx")


def test_two_specs_run_in_two_processes_with_the_order_swapped(model_dir, capsys):
    from benchmarks.llm_ab import main

    spin = f"{model_dir},session.intra_op.allow_spinning=0"
    assert main([model_dir, spin, "--steps", "4", "--threads", "1", "--json"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    assert [r["spec"] for r in rows] == [model_dir, spin]
    assert f"load order 2/2: {model_dir} {model_dir}" in captured.err
    for r in rows:
        assert len(r["step_wall_ratios"]) == 2 and r["step_wall"] > 0
        assert math.isclose(r["step_wall_ratio"], math.sqrt(math.prod(r["step_wall_ratios"])))
    assert rows[0]["step_wall_ratios"] == [1.0, 1.0]


def test_one_order_is_one_process_with_the_same_figures(model_dir, capsys):
    from benchmarks.llm_ab import main

    assert main([model_dir, model_dir, "--orders", "1", "--steps", "2", "--threads", "1",
                 "--json"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    assert "load order" not in captured.err
    assert [len(r["step_wall_ratios"]) for r in rows] == [1, 1]
    assert rows[1]["step_wall_ratio"] == pytest.approx(rows[0]["step_wall"] / rows[1]["step_wall"])

"""`edge-runtime bench` runs the harness of a checkout, and says how when it is absent."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import edge_runtime

REPO = Path(edge_runtime.__file__).resolve().parents[1]


def _bench(argv: list[str], pythonpath: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    return subprocess.run([sys.executable, "-m", "edge_runtime.cli", "bench", *argv],
                          capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def test_without_the_harness_one_line_names_the_fix(tmp_path: Path) -> None:
    """As from an installed wheel: the runtime package alone on the path."""
    runtime_only = tmp_path / "site"
    runtime_only.mkdir()
    (runtime_only / "edge_runtime").symlink_to(REPO / "edge_runtime", target_is_directory=True)
    out = _bench(["cloud", "--quick"], runtime_only, tmp_path)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "benchmark harness is not installed" in lines[0]
    assert "python -m benchmarks cloud" in lines[0]


@pytest.mark.parametrize("what", ["cloud", "load"])
def test_from_a_checkout_it_runs_the_harness(what: str) -> None:
    out = _bench([what, "--help"], REPO, REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"edge-runtime bench {what}" in out.stdout


def test_python_m_benchmarks_rejects_an_unknown_benchmark() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-m", "benchmarks", "nope"], capture_output=True,
                         text=True, timeout=60, env=env, cwd=REPO)
    assert out.returncode == 2
    assert "llm,voice,cloud,load" in out.stderr

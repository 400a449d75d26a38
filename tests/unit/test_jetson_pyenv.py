"""jetson/pyenv.sh driven for real (bash) over stand-in python/pip (tests/jetson_fakes.py):
the atomic onnxruntime-gpu swap, the numpy<2 pin, the guard against a later CPU onnxruntime,
and the completion markers. Plus the constraints file against the real pip, offline."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.jetson_fakes import fake_python, installed, pip_log

JETSON = Path(__file__).resolve().parents[2] / "jetson"


def _run(tmp: Path, *args: str, **knobs: str) -> subprocess.CompletedProcess:
    """pyenv.sh over the fakes in ``tmp`` (made on the first call, kept for re-runs)."""
    if (tmp / "python3").exists():
        python3, env = tmp / "python3", dict(os.environ, FAKE_STATE=str(tmp / "state"),
                                             FAKE_VENV_PYTHON=str(tmp / "venv-python"))
    else:
        python3, env = fake_python(tmp)
    env.update(knobs)
    return subprocess.run(
        ["bash", str(JETSON / "pyenv.sh"), "--venv", str(tmp / "venv"), "--project",
         str(tmp / "src"), "--extras", "tts,asr-whisper", "--python", str(python3), *args],
        env=env, capture_output=True, text=True, timeout=60)


def _index(log: list[str], text: str) -> int:
    return next(i for i, line in enumerate(log) if text in line)


def test_gpu_swap_fetches_first_then_swaps_pins_numpy_and_guards_the_venv(tmp_path) -> None:
    proc = _run(tmp_path, "--gpu", "yes")
    assert proc.returncode == 0, proc.stderr
    have, log = installed(tmp_path), pip_log(tmp_path)
    assert have["onnxruntime-gpu"] == "1.23.0" and "onnxruntime" not in have
    assert have["numpy"] == "1.26.4"                     # resolved under numpy<2
    assert "resolve constraints: numpy<2" in log         # ... without the onnxruntime ban
    fetched = _index(log, "download --no-deps --index-url")
    assert fetched < _index(log, "download --no-deps --dest")   # the roll-back wheel too
    swapped = _index(log, "uninstall --yes onnxruntime")
    assert fetched < _index(log, "install --no-deps -r") < swapped
    assert _index(log, "uninstall --yes onnxruntime") < _index(log, "onnxruntime_gpu-1.23.0")
    deps = [line for line in log if "install --no-deps -r" in line]
    assert deps and "-no-ort" in deps[0]                 # the CPU build is never reinstalled
    conf = (tmp_path / "venv" / "pip.conf").read_text()
    assert f"constraint = {tmp_path / 'venv' / 'constraints-jetson.txt'}" in conf
    assert "onnxruntime<0" in (tmp_path / "venv" / "constraints-jetson.txt").read_text()
    assert (tmp_path / "venv" / ".edge-runtime-complete").exists()


def test_an_index_outage_keeps_the_cpu_onnxruntime_and_says_so(tmp_path) -> None:
    proc = _run(tmp_path, "--gpu", "yes", FAKE_GPU_INDEX="down")
    assert proc.returncode == 0, proc.stderr
    have, log = installed(tmp_path), pip_log(tmp_path)
    assert have["onnxruntime"] == "1.32.0" and "onnxruntime-gpu" not in have
    assert not any("uninstall" in line for line in log)  # nothing was removed first
    assert "cannot fetch onnxruntime-gpu from https://pypi.jetson-ai-lab.io/jp6/cu126" \
        in proc.stderr
    assert "runs on the CPU onnxruntime" in proc.stderr and "re-run" in proc.stderr
    assert not (tmp_path / "venv" / "pip.conf").exists()  # a CPU venv needs no guard
    assert (tmp_path / "venv" / ".edge-runtime-complete").exists()


def test_a_gpu_build_without_cuda_is_rolled_back_to_the_fetched_cpu_wheel(tmp_path) -> None:
    proc = _run(tmp_path, "--gpu", "yes", FAKE_CUDA="0")
    assert proc.returncode == 0, proc.stderr
    have, log = installed(tmp_path), pip_log(tmp_path)
    assert have["onnxruntime"] == "1.32.0" and "onnxruntime-gpu" not in have
    rollback = _index(log, "uninstall --yes onnxruntime-gpu")
    restored = log[rollback + 1]
    assert "install --no-deps" in restored and "onnxruntime-1.32.0-cp310" in restored
    assert "has no CUDA provider here; restoring the CPU onnxruntime" in proc.stderr
    assert not (tmp_path / "venv" / "pip.conf").exists()


def test_a_rerun_during_an_index_outage_keeps_the_installed_gpu_build(tmp_path) -> None:
    assert _run(tmp_path, "--gpu", "yes").returncode == 0
    proc = _run(tmp_path, "--gpu", "yes", FAKE_GPU_INDEX="down")
    assert proc.returncode == 0, proc.stderr
    assert "onnxruntime-gpu" in installed(tmp_path) and "onnxruntime" not in installed(tmp_path)
    assert "installed onnxruntime-gpu is kept" in proc.stderr
    assert (tmp_path / "venv" / "pip.conf").exists()
    assert "complete, kept" in proc.stdout


def test_a_half_built_venv_is_rebuilt_not_taken_as_complete(tmp_path) -> None:
    proc = _run(tmp_path, "--gpu", "no", FAKE_FAIL_ON="-r ")       # stops mid-install
    assert proc.returncode != 0
    venv = tmp_path / "venv"
    assert (venv / "bin" / "python").exists()                       # looks built ...
    assert not (venv / ".edge-runtime-complete").exists()           # ... but is not
    proc = _run(tmp_path, "--gpu", "no")
    assert proc.returncode == 0, proc.stderr
    assert "no completion marker" in proc.stderr and "rebuilding" in proc.stderr
    assert any(line.startswith("python3 -m venv --clear") for line in pip_log(tmp_path))
    assert (venv / ".edge-runtime-complete").exists()
    assert installed(tmp_path)["edge-runtime"] == "0.1.0"


def test_cpu_mode_installs_the_plain_closure_unpinned(tmp_path) -> None:
    proc = _run(tmp_path, "--gpu", "no")
    assert proc.returncode == 0, proc.stderr
    have, log = installed(tmp_path), pip_log(tmp_path)
    assert have["onnxruntime"] == "1.32.0" and have["numpy"] == "2.4.6"
    assert "resolve constraints: " in log and not any("download" in line for line in log)
    assert not (tmp_path / "venv" / "pip.conf").exists()


def test_stages_split_the_dependencies_from_the_package(tmp_path) -> None:
    proc = _run(tmp_path, "--stage", "project")
    assert proc.returncode == 1 and "run --stage deps first" in proc.stderr
    assert _run(tmp_path, "--stage", "deps", "--gpu", "yes").returncode == 0
    venv = tmp_path / "venv"
    assert (venv / ".edge-runtime-deps").exists() and not (venv / ".edge-runtime-complete").exists()
    assert "edge-runtime" not in installed(tmp_path)
    assert _run(tmp_path, "--stage", "project").returncode == 0
    assert (venv / ".edge-runtime-complete").exists() and "edge-runtime" in installed(tmp_path)
    assert "onnxruntime-gpu" in installed(tmp_path)


def _wheel(folder: Path, name: str, version: str) -> None:
    dist = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as z:
        z.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(f"{dist}/WHEEL",
                   "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}/RECORD", "")


@pytest.mark.parametrize("requirement, allowed", [
    ("onnxruntime", False), ("numpy==2.0.0", False), ("numpy", True)])
def test_the_constraints_refuse_cpu_onnxruntime_and_numpy_2_with_the_real_pip(
        tmp_path, requirement, allowed) -> None:
    for name, version in (("onnxruntime", "1.32.0"), ("numpy", "2.0.0"), ("numpy", "1.26.4")):
        _wheel(tmp_path, name, version)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--no-index",
         "--find-links", str(tmp_path), "-c", str(JETSON / "constraints-jetson.txt"),
         requirement], capture_output=True, text=True, timeout=120)
    assert (proc.returncode == 0) == allowed, proc.stdout + proc.stderr
    if requirement == "numpy":
        assert "numpy-1.26.4" in proc.stdout


def test_choosing_cpu_on_a_gpu_venv_leaves_one_onnxruntime_not_two(tmp_path) -> None:
    assert _run(tmp_path, "--gpu", "yes").returncode == 0
    proc = _run(tmp_path, "--gpu", "no")
    assert proc.returncode == 0, proc.stderr
    have = installed(tmp_path)
    assert have["onnxruntime"] == "1.32.0" and "onnxruntime-gpu" not in have
    assert not (tmp_path / "venv" / "pip.conf").exists()

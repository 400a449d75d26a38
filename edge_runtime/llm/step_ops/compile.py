"""Compile ``step_ops.c`` into ``<paths.home>/ops/`` on the machine that runs it.

The library is built with ``-march=native`` for the CPU at hand, so it is never shipped: the
file name carries the source's hash, the machine and the header's API version, and a changed
source builds a new file. It needs a C compiler (``cc``; ``$CC`` overrides) and onnxruntime's
C API header (:mod:`.headers`). Neither is a run-time dependency: without them the engine
runs the plain graph (onnxruntime's own GroupQueryAttention), and ``models build`` says why.
"""
from __future__ import annotations

import hashlib
import logging
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from .headers import API_VERSION, StepOpsUnavailable, find_headers

log = logging.getLogger(__name__)

SOURCE = "step_ops.c"
FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-Wall")   # IEEE floats: no fast-math


def source_text() -> bytes:
    return resources.files(__package__).joinpath(SOURCE).read_bytes()


def library_path(home: Path) -> Path:
    """Where this machine's build of the current source lives (it may not exist yet)."""
    digest = hashlib.sha256(source_text() + " ".join(FLAGS).encode()).hexdigest()[:12]
    name = f"libedge_step_ops-{digest}-{platform.machine()}-api{API_VERSION}.so"
    return Path(home) / "ops" / name


def find_library(home: Path) -> Path | None:
    """This machine's built library for the current source, or None."""
    path = library_path(home)
    return path if path.is_file() else None


def _compiler() -> list[str]:
    cc = shlex.split(os.environ.get("CC", "")) or ["cc"]
    if not shutil.which(cc[0]):
        raise StepOpsUnavailable(f"no C compiler ({cc[0]!r} not found)",
                                 hint="sudo apt-get install gcc (or set CC)")
    return cc


def build_library(home: Path, *, fetch: bool = True) -> Path:
    """Compile the library unless this source's build exists; return its path.

    Raises StepOpsUnavailable naming what is missing. ``fetch``: download onnxruntime's
    header when no local copy is found (see :func:`.headers.find_headers`)."""
    out = library_path(home)
    if out.is_file():
        return out
    cc = _compiler()
    include = find_headers(Path(home) / "ops" / "include", fetch=fetch)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".build-") as tmp:
        src = Path(tmp) / SOURCE
        src.write_bytes(source_text())
        lib = Path(tmp) / out.name
        cmd = [*cc, *FLAGS, f"-I{include}", str(src), "-o", str(lib), "-lm", "-lpthread"]
        log.info("compiling the decode-step kernels: %s", " ".join(cmd))
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise StepOpsUnavailable(
                f"compiling {SOURCE} failed ({cc[0]} exit {done.returncode}): "
                f"{done.stderr.strip()[-600:]}",
                hint="check the compiler (gcc >= 8 or clang >= 10) or set llm.step_ops = false")
        os.replace(lib, out)
    return out

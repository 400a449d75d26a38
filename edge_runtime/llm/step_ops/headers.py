"""onnxruntime's C API header, which the Python wheel does not carry.

Looked for, in order: a copy fetched earlier (``<paths.home>/ops/include``), then the system's
(``libonnxruntime-dev``: ``/usr/include/onnxruntime``, ``/usr/local/include/onnxruntime``).
Otherwise :data:`DEBS` names Debian's ``libonnxruntime-dev`` package for this machine's
architecture, pinned by sha256: it is downloaded, checked, and only its headers are unpacked
(a ``.deb`` is an ``ar`` archive holding ``data.tar.xz``; no ``dpkg`` needed, nothing is
installed). The C API is versioned: a library built against API 21 (onnxruntime 1.21) asks
a newer onnxruntime for that version, which every later release serves.
"""
from __future__ import annotations

import hashlib
import io
import logging
import platform
import shutil
import tarfile
import tempfile
import urllib.request
from pathlib import Path

from ...errors import EdgeError

log = logging.getLogger(__name__)

HEADER = "onnxruntime_c_api.h"
API_VERSION = 21
SYSTEM_DIRS = (Path("/usr/include/onnxruntime"), Path("/usr/local/include/onnxruntime"))
_POOL = "http://deb.debian.org/debian/pool/main/o/onnxruntime/"
DEBS = {   # platform.machine() -> (file, sha256): Debian 13 (trixie), onnxruntime 1.21.0
    "x86_64": ("libonnxruntime-dev_1.21.0+dfsg-1_amd64.deb",
               "14f7d959d5deacbcf1504830d4189f91fc67382b399ed9ae9d3aa9c4050ced08"),
    "aarch64": ("libonnxruntime-dev_1.21.0+dfsg-1_arm64.deb",
                "d4b1967893865756c0fa8536be165259a8eb0e9068e60d322ba707ef4527e44e"),
}


class StepOpsUnavailable(EdgeError):
    """The step-ops library cannot be built here (no compiler, no header, a compile error)."""

    code, stage = "step_ops_unavailable", "models"


def find_headers(cache: Path, *, fetch: bool = True) -> Path:
    """A directory holding :data:`HEADER`: ``cache``, the system's, or ``cache`` after
    fetching Debian's package (``fetch``). Raises StepOpsUnavailable naming the fix."""
    for d in (Path(cache), *SYSTEM_DIRS):
        if (d / HEADER).is_file():
            return d
    hint = ("sudo apt-get install libonnxruntime-dev (Debian 13 / Ubuntu 25.04 or later), "
            f"or put onnxruntime's include/ files in {cache}")
    if not fetch:
        raise StepOpsUnavailable(f"onnxruntime's C API header ({HEADER}) not found", hint=hint)
    machine = platform.machine()
    if machine not in DEBS:
        raise StepOpsUnavailable(f"no pinned onnxruntime header package for {machine}", hint=hint)
    name, sha = DEBS[machine]
    try:
        with urllib.request.urlopen(_POOL + name, timeout=60) as r:
            data = r.read()
    except OSError as exc:
        raise StepOpsUnavailable(f"cannot download {name}: {exc}", hint=hint,
                                 retryable=True) from None
    got = hashlib.sha256(data).hexdigest()
    if got != sha:
        raise StepOpsUnavailable(f"{name}: sha256 {got} is not the pinned {sha}", hint=hint)
    unpack_headers(data, Path(cache))
    log.info("onnxruntime C API headers from %s in %s", name, cache)
    return Path(cache)


def _ar_members(data: bytes) -> dict[str, bytes]:
    """The members of an ``ar`` archive (a ``.deb``) by name."""
    if not data.startswith(b"!<arch>\n"):
        raise StepOpsUnavailable("not a .deb (ar) archive")
    out, i = {}, 8
    while i + 60 <= len(data):
        head = data[i:i + 60]
        name = head[:16].decode("ascii", "replace").strip().rstrip("/")
        size = int(head[48:58].decode("ascii").strip() or 0)
        out[name] = data[i + 60:i + 60 + size]
        i += 60 + size + (size & 1)
    return out


def unpack_headers(deb: bytes, dest: Path) -> None:
    """Write the ``usr/include/onnxruntime`` files of ``deb`` into ``dest`` (atomically:
    a failed unpack leaves no half-written directory)."""
    members = _ar_members(deb)
    data = next((v for k, v in members.items() if k.startswith("data.tar")), None)
    if data is None:
        raise StepOpsUnavailable("the .deb has no data.tar member")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".include-"))
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for m in tar.getmembers():
                rel = m.name.lstrip("./")
                prefix = "usr/include/onnxruntime/"
                if not (m.isfile() and rel.startswith(prefix) and rel.endswith(".h")):
                    continue
                target = tmp / rel[len(prefix):]
                if ".." in Path(rel).parts:
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(m)
                if src is not None:
                    target.write_bytes(src.read())
        if not (tmp / HEADER).is_file():
            raise StepOpsUnavailable(f"the .deb has no {HEADER}")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

"""Serialized engines on disk, keyed on what makes an engine valid.

An engine is only good for the GPU, TensorRT version, model file and build settings it was
built with; the power mode is in the key too (tactics are timed at the clocks of the mode
the build ran in). The key's digest is in the file name, and the key itself is in a small
header inside the file, so a file copied from another board or left by another TensorRT
version is seen for what it is (:class:`KeyMismatch`: rebuild) and a truncated file is
caught before TensorRT reads it.

File layout: ``EDGETRT1`` + 4-byte big-endian header length + JSON header (the key,
``plan_bytes``, ``plan_sha256``) + the serialized engine. Writes are atomic (temp + rename).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import EngineInvalidError

MAGIC = b"EDGETRT1"
NVPMODEL_STATUS = Path("/var/lib/nvpmodel/status")


@dataclass(frozen=True)
class EngineKey:
    model: str               # "vad" | "nlu"
    model_sha256: str
    gpu: str                 # CUDA device name
    tensorrt: str            # tensorrt.__version__
    power_mode: str          # nvpmodel mode ("pmode-0") or "na"
    precision: str           # "fp16" | "fp32" (| "int8")
    profile: str             # ShapeProfile.digest_text()

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()

    def differences(self, other: EngineKey) -> list[str]:
        a, b = asdict(self), asdict(other)
        return [f"{k} {b[k]!r} (here {a[k]!r})" for k in a if a[k] != b[k]]


class KeyMismatch(Exception):
    """The file at this key's path was built for another key (say which fields differ)."""


def power_mode(status: Path = NVPMODEL_STATUS) -> str:
    """The nvpmodel mode as ``pmode-<id>`` (``/var/lib/nvpmodel/status`` holds
    ``pmode:0002``), or ``na`` where there is none (x86, containers without the file)."""
    try:
        m = re.search(r"pmode:0*(\d+)", status.read_text(encoding="ascii", errors="replace"))
    except OSError:
        return "na"
    return f"pmode-{m.group(1)}" if m else "na"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower() or "gpu"


class EngineCache:
    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)

    def engine_path(self, key: EngineKey) -> Path:
        return self.dir / f"{key.model}-{key.model_sha256[:12]}-{key.digest()[:12]}.engine"

    def timing_cache_path(self, key: EngineKey) -> Path:
        """One timing cache per GPU and TensorRT version, next to the engines."""
        return self.dir / f"timing-{_slug(key.gpu)}-trt{_slug(key.tensorrt)}.cache"

    def load(self, key: EngineKey) -> bytes | None:
        """The engine plan for ``key``; None when there is no file. Raises KeyMismatch
        (rebuild) or EngineInvalidError (truncated or corrupt: moved aside to ``.bad``)."""
        path = self.engine_path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            header, plan = _split(data)
        except ValueError as exc:
            raise self._bad(path, str(exc)) from None
        stored = EngineKey(**{k: header.get(k, "") for k in asdict(key)})
        if stored != key:
            raise KeyMismatch(f"engine {path.name} was built for another setup: "
                              + "; ".join(key.differences(stored)))
        if len(plan) != header.get("plan_bytes"):
            raise self._bad(path, f"truncated ({len(plan)} of {header.get('plan_bytes')} "
                                  "engine bytes)")
        if hashlib.sha256(plan).hexdigest() != header.get("plan_sha256"):
            raise self._bad(path, "corrupt (engine sha256 mismatch)")
        return plan

    def store(self, key: EngineKey, plan: bytes) -> Path:
        header = {**asdict(key), "plan_bytes": len(plan),
                  "plan_sha256": hashlib.sha256(plan).hexdigest()}
        blob = json.dumps(header, sort_keys=True).encode()
        path = self.engine_path(key)
        _atomic_write(path, MAGIC + struct.pack(">I", len(blob)) + blob + plan)
        return path

    def reject(self, key: EngineKey, why: str) -> EngineInvalidError:
        """A plan that TensorRT would not deserialize: moved aside like a truncated file."""
        return self._bad(self.engine_path(key), why)

    def read_timing_cache(self, key: EngineKey) -> bytes:
        try:
            return self.timing_cache_path(key).read_bytes()
        except OSError:
            return b""

    def write_timing_cache(self, key: EngineKey, data: bytes) -> None:
        if data:
            _atomic_write(self.timing_cache_path(key), data)

    def _bad(self, path: Path, why: str) -> EngineInvalidError:
        aside = path.with_suffix(".engine.bad")
        try:
            os.replace(path, aside)
            where = f"moved aside to {aside.name}; rebuilt at the next start"
        except OSError:
            where = "could not be moved aside"
        return EngineInvalidError(f"engine file {path.name} is {why}; {where}",
                                  hint=f"delete {path} to rebuild it now")


def _split(data: bytes) -> tuple[dict, bytes]:
    if len(data) < len(MAGIC) + 4 or not data.startswith(MAGIC):
        raise ValueError("not an edge-runtime engine file (no EDGETRT1 header; truncated?)")
    (n,) = struct.unpack(">I", data[len(MAGIC):len(MAGIC) + 4])
    start = len(MAGIC) + 4
    if len(data) < start + n:
        raise ValueError("truncated (header cut short)")
    try:
        header = json.loads(data[start:start + n])
    except ValueError:
        raise ValueError("corrupt (header is not JSON)") from None
    if not isinstance(header, dict):
        raise ValueError("corrupt (header is not an object)")
    return header, data[start + n:]


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)

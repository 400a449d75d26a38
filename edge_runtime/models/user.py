"""Bring your own model: ``edge-runtime models add FILE.gguf [--name N]``.

The GGUF is read and checked first (architecture, block types, tokenizer, chat template:
a typed error before anything is written), hashed, linked (or copied) into the store as
``<home>/models/<name>/files/<file>``, built by the normal build path, and only then
recorded in the user manifest ``<home>/models/user-manifest.toml``, which
:class:`~.store.ModelStore` merges over the shipped one. A failed build leaves no entry
and no file behind.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInputError, ConfigError, ModelMissingError

if TYPE_CHECKING:
    from .store import ModelStore

log = logging.getLogger(__name__)

USER_MANIFEST = "user-manifest.toml"
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def user_manifest_path(models_dir: Path) -> Path:
    return models_dir / USER_MANIFEST


def default_name(path: Path) -> str:
    """``Qwen2.5-0.5B-Instruct-Q4_K_M.gguf`` -> ``qwen2.5-0.5b-instruct-q4_k_m``."""
    stem = re.sub(r"[^a-z0-9._-]+", "-", path.stem.lower()).strip("-._")
    return stem[:64] or "model"


def describe(path: Path) -> dict:
    """What the GGUF is (read with the builder's reader: raises its typed errors)."""
    try:
        from .gguf2onnx.build import check_chat_template
        from .gguf2onnx.gguf_weights import GgufParseError, read_gguf
    except ImportError as exc:
        raise ConfigError(f"adding a model needs the `build` extra ({exc.name} missing)",
                          hint="pip install 'edge-runtime[build]'") from None
    try:
        model = read_gguf(path)
    except GgufParseError as exc:   # the user's own file: `models pull` cannot fetch it again
        exc.hint = ("download the .gguf again and compare its sha256 with the one its source "
                    "publishes (`sha256sum FILE`)")
        raise
    hp = model.hparams
    check_chat_template(model.chat_template or hp.spec.default_chat_template, path.name)
    return {"architecture": hp.arch, "layers": hp.n_layers, "hidden": hp.hidden,
            "heads": hp.n_heads, "kv_heads": hp.n_kv_heads, "head_dim": hp.head_dim,
            "vocab": hp.vocab, "context_length": hp.context_length,
            "block_types": dict(sorted(Counter(t.qtype for t in model.tensors.values())
                                       .items())),
            "chat_template": bool(model.chat_template),
            "size_bytes": path.stat().st_size,
            "gguf_name": str(model.metadata.get("name") or "")}


def _toml_entry(name: str, file_name: str, sha: str, url: str, info: dict) -> str:
    q = json.dumps     # a JSON string is a valid TOML basic string
    types = ", ".join(f"{k} x{v}" for k, v in info["block_types"].items())
    template = "in the GGUF" if info["chat_template"] else \
        "absent (the builder writes the architecture default)"
    notes = (f"added with `edge-runtime models add`: {info['architecture']} architecture, "
             f"{info['layers']} layers, hidden {info['hidden']}, {info['heads']} heads / "
             f"{info['kv_heads']} KV heads of {info['head_dim']}, vocab {info['vocab']}; "
             f"blocks {types}; {info['size_bytes']} bytes; chat template {template}")
    return (f"\n[[model]]\nname = {q(name)}\nrole = \"llm\"\ndefault = false\n"
            f"licence = {q('user-supplied (see the source of ' + file_name + ')')}\n"
            f"url = {q(url)}\nbuild = \"gguf2onnx\"\nnotes = {q(notes)}\n"
            f"architecture = {q(info['architecture'])}\n\n"
            f"[[model.files]]\npath = {q(file_name)}\nsha256 = {q(sha)}\n")


def _write_manifest(path: Path, name: str, entry_text: str) -> None:
    """Append (or replace) ``name``'s entry; written to a temporary file, then renamed."""
    from .store import load_manifest_text

    old = path.read_text(encoding="utf-8") if path.is_file() else \
        "# Models added with `edge-runtime models add` (merged over the shipped manifest).\n"
    if name in load_manifest_text(old, path):
        blocks = re.split(r"(?m)^(?=\[\[model\]\]\s*$)", old)
        old = "".join(b for b in blocks if not re.search(
            rf"(?m)^name = {re.escape(json.dumps(name))}\s*$", b))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(old.rstrip("\n") + "\n" + entry_text, encoding="utf-8")
    os.replace(tmp, path)


def _place(src: Path, dest: Path) -> None:
    """Hard-link ``src`` into the store (no second copy of a 1 GB file), else copy it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".adding")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dest)


def add_model(store: ModelStore, gguf: str | Path, name: str | None = None,
              force: bool = False) -> dict:
    """Check, hash, place, build and record ``gguf``; returns what was added."""
    from .store import sha256_file

    src = Path(gguf).expanduser().resolve()
    if not src.is_file():
        raise ModelMissingError(f"GGUF file not found: {src}",
                                hint="pass the path of a .gguf file you downloaded")
    name = name or default_name(src)
    if not _NAME.match(name):
        raise BadInputError(f"model name {name!r} is not usable (lower-case letters, digits, "
                            f"'.', '_' and '-', at most 64)", hint="choose one with --name")
    shipped = store.shipped_names
    if name in shipped:
        raise ConfigError(f"model name {name!r} is taken by a shipped model",
                          hint="choose another with --name")
    info = describe(src)           # every bad-input error is raised here, before any write
    sha = sha256_file(src)
    user_entry = store.manifest.get(name)
    if user_entry is not None and user_entry.files[0].sha256 != sha and not force:
        raise ConfigError(f"model {name!r} was already added from another file",
                          hint="pass --force to replace it, or choose another --name")
    dest = store.files_dir(name) / src.name
    had_file = dest.is_file()
    backup = dest.with_name(dest.name + ".previous")
    if had_file and src != dest:       # a replacement under the same file name: keep the old
        backup.unlink(missing_ok=True)
        try:
            os.link(dest, backup)
        except OSError:                # a filesystem without hard links
            shutil.copy2(dest, backup)
    if src != dest:
        _place(src, dest)
    store._mark_verified(dest, sha)
    entry_text = _toml_entry(name, src.name, sha, src.as_uri(), info)
    from .store import ModelEntry, ModelFile
    store.manifest[name] = ModelEntry(name=name, role="llm", licence="user-supplied",
                                      files=(ModelFile(src.name, sha),), url=src.as_uri(),
                                      build="gguf2onnx")
    try:
        out = store.build(name, force=True)
    except BaseException:
        if user_entry is None:             # nothing of this name before: remove it all
            shutil.rmtree(store.root / name, ignore_errors=True)
        elif not had_file:                 # a replacement: the old build stays in place
            dest.unlink(missing_ok=True)
            dest.with_name(dest.name + ".verified").unlink(missing_ok=True)
        elif backup.is_file():             # ... and so does its source file
            os.replace(backup, dest)
            store._mark_verified(dest)
        if user_entry is not None:
            store.manifest[name] = user_entry
        else:
            store.manifest.pop(name, None)
        raise
    backup.unlink(missing_ok=True)
    if user_entry is not None and user_entry.files[0].name != src.name:
        old = store.files_dir(name) / user_entry.files[0].name
        old.unlink(missing_ok=True)
        old.with_name(old.name + ".verified").unlink(missing_ok=True)
    _write_manifest(user_manifest_path(store.root), name, entry_text)
    store.manifest = store.load()
    log.info("added %s from %s (sha256 %s)", name, src, sha)
    return {"name": name, "source": str(src), "sha256": sha, "built": str(out),
            "manifest": str(user_manifest_path(store.root)), **info}

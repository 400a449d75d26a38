"""Regressions of issue 16 outside HTTP: the answer cache never follows a row to a file,
the model check notices a file changed in place with its mtime kept, and the wire protocol
takes only the integer version 1."""
import hashlib
import os
import sqlite3
import threading
from pathlib import Path

import msgpack
import pytest

from edge_runtime.cache.base import CacheValueError
from edge_runtime.cache.disk import DB_NAME, DiskTier
from edge_runtime.clock import FakeClock
from edge_runtime.config import load_config
from edge_runtime.errors import ModelMissingError
from edge_runtime.models.store import ModelStore
from edge_runtime.protocol import ProtocolError, decode


def _insert_file_row(db: Path, key: str, mode: int, filename: str) -> None:
    con = sqlite3.connect(db)
    con.execute("INSERT INTO Cache (key, raw, store_time, expire_time, access_time, "
                "access_count, tag, size, mode, filename, value) "
                "VALUES (?, 1, 0, NULL, 0, 0, NULL, 0, ?, ?, NULL)", (key, mode, filename))
    con.commit()
    con.close()


def _get_bounded(tier: DiskTier, key: str):
    """tier.get(key) in a thread, so a hang fails the test instead of blocking it."""
    out: dict = {}

    def run():
        try:
            out["value"] = tier.get(key)
        except Exception as exc:       # noqa: BLE001 - the test inspects it
            out["error"] = exc
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "the cache read hung"
    return out


@pytest.mark.parametrize("mode", [2, 3])            # MODE_BINARY, MODE_TEXT
def test_a_row_pointing_outside_the_cache_is_refused_unread(tmp_path, mode):
    secret = tmp_path / "secret.txt"
    secret.write_text("not an answer")
    tier = DiskTier(tmp_path / "d", 8, FakeClock())
    _insert_file_row(tmp_path / "d" / DB_NAME, "abs", mode, str(secret))
    _insert_file_row(tmp_path / "d" / DB_NAME, "rel", mode, "../secret.txt")
    for key in ("abs", "rel"):
        out = _get_bounded(tier, key)
        assert isinstance(out.get("error"), CacheValueError), out
        assert "not an answer" not in repr(out)
    tier.set("abs", b"", 0)                  # deleting the row must not delete the file
    tier.set("rel", b"", 0)
    assert secret.read_text() == "not an answer"
    tier.probe()
    tier.close()


def test_a_row_pointing_at_a_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "d" / "fifo"
    tier = DiskTier(tmp_path / "d", 8, FakeClock())
    os.mkfifo(fifo)
    _insert_file_row(tmp_path / "d" / DB_NAME, "fifo", 2, "fifo")
    out = _get_bounded(tier, "fifo")
    assert isinstance(out.get("error"), CacheValueError)
    tier.set("k", b"v" * 100_000, 60)         # large values stay inline: no file is written
    assert tier.get("k") == b"v" * 100_000
    assert sorted(p.name for p in (tmp_path / "d").iterdir()
                  if not p.name.startswith(DB_NAME)) == ["fifo"]
    tier.close()


def _store_with_one_file(tmp_path, content: bytes):
    sha = hashlib.sha256(content).hexdigest()
    manifest = tmp_path / "manifest.toml"
    manifest.write_text('[[model]]\nname = "m"\nrole = "llm"\nlicence = "MIT"\n'
                        'pypi = "m==1"\nfiles = [{path = "m/model.bin", sha256 = "%s"}]\n'
                        % sha)
    cfg = load_config(env={}).with_overrides(paths={"home": str(tmp_path / "home"),
                                                    "manifest": str(manifest)})
    store = ModelStore(cfg)
    path = store.file_path("m")
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    return store, path, sha


def test_a_model_file_changed_in_place_with_its_mtime_kept_is_caught(tmp_path):
    store, path, sha = _store_with_one_file(tmp_path, b"good weights " * 1000)
    assert store.require_source("m") == path          # hashed once, stamped
    assert store.status("m", deep=False)["files"]["model.bin"] == "verified"
    st = path.stat()
    with open(path, "r+b") as f:                      # same size, other bytes
        f.write(b"evil")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size
    assert store.status("m", deep=False)["files"]["model.bin"] == "corrupt"
    with pytest.raises(ModelMissingError, match="corrupt"):
        store.require_source("m")


def test_an_unchanged_model_file_is_not_hashed_again(tmp_path, monkeypatch):
    store, path, _ = _store_with_one_file(tmp_path, b"weights")
    store.require_source("m")
    import edge_runtime.models.store as store_mod

    def no_hash(p, chunk=0):
        raise AssertionError("hashed again")
    monkeypatch.setattr(store_mod, "sha256_file", no_hash)
    assert store.require_source("m") == path


@pytest.mark.parametrize("version", [1.0, True, "1", [1]])
def test_only_the_integer_protocol_version_is_accepted(version):
    frame = msgpack.packb([version, "ping", {"nonce": 1}], use_bin_type=True)
    with pytest.raises(ProtocolError) as info:
        decode(frame)
    assert info.value.code == "protocol_version"
    assert decode(msgpack.packb([1, "ping", {"nonce": 1}])).nonce == 1

"""Generated rows in the answer cache's SQLite database: a lookup is a miss, an answer, or
(at the tier) a typed cache error; it never reads a file, never hangs, never raises out of
the cache, and the next normal store and lookup work."""
import contextlib
import json
import sqlite3
import struct
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge_runtime.cache.base import CachedAnswer
from edge_runtime.cache.disk import DB_NAME, DiskTier
from edge_runtime.cache.tiered import AnswerCache
from edge_runtime.clock import FakeClock
from edge_runtime.errors import CacheTierError
from tests.fuzz.fuzz_support import fuzz_settings

SECRET = "a file outside the cache"
KEY = "v1:" + "ab" * 32


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-cache")
    (root / "secret.txt").write_text(SECRET)
    clock = FakeClock(start=1_000_000.0)
    tier = DiskTier(root / "answers", 8, clock)
    yield AnswerCache([tier], clock), tier, root
    tier.close()


scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20),
                   st.sampled_from([10 ** 400, 1, 1.0, "local", "cloud", 2e6, 1e12]))
docs = st.fixed_dictionaries({}, optional={
    k: st.one_of(scalar, st.lists(scalar, max_size=2))
    for k in ("v", "answer", "route", "created_at", "model", "expires_at")})


def _payload(doc, expires_at: float, deep: int) -> bytes:
    text = json.dumps(doc, allow_nan=True)
    if deep:
        text = "[" * deep + text + "]" * deep
    return struct.pack(">d", expires_at) + text.encode("utf-8", "surrogatepass")


values = st.one_of(
    st.none(), st.binary(max_size=64), st.integers(-(2 ** 63), 2 ** 63 - 1), st.text(max_size=20),
    st.builds(_payload, docs, st.floats(), st.sampled_from([0, 0, 0, 50, 5000])))
filenames = st.one_of(st.none(), st.none(), st.text(max_size=20),
                      st.sampled_from(["../secret.txt", "../../secret.txt", "/etc/hostname",
                                       "", ".", "answers", "cache.db"]))


def _bounded(fn):
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - inspected below
            out["error"] = exc
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "the cache read hung"
    return out


@fuzz_settings(150)
@given(mode=st.integers(-1, 6), raw=st.integers(0, 1), filename=filenames, value=values,
       expire=st.one_of(st.none(), st.floats(allow_nan=False)))
def test_generated_rows_are_a_miss_an_answer_or_a_typed_error(cache, mode, raw, filename,
                                                              value, expire):
    answers, tier, root = cache
    if filename is not None and filename.startswith("../"):
        filename = str(root / "answers" / filename)
    with contextlib.closing(sqlite3.connect(root / "answers" / DB_NAME, timeout=10)) as con:
        with con:                                        # one transaction, committed
            con.execute("DELETE FROM Cache WHERE key = ?", (KEY,))
            con.execute("INSERT INTO Cache (key, raw, store_time, expire_time, access_time, "
                        "access_count, tag, size, mode, filename, value) "
                        "VALUES (?, ?, 0, ?, 0, 0, NULL, 0, ?, ?, ?)",
                        (KEY, raw, expire, mode, filename, value))
    at_tier = _bounded(lambda: tier.get(KEY))
    if "error" in at_tier:
        assert isinstance(at_tier["error"], CacheTierError), repr(at_tier["error"])
    else:
        assert at_tier["value"] is None or isinstance(at_tier["value"], bytes)
    assert SECRET not in repr(at_tier)
    looked_up = _bounded(lambda: answers.get(KEY))
    assert "error" not in looked_up, repr(looked_up.get("error"))
    got = looked_up["value"]
    assert got is None or (isinstance(got, CachedAnswer) and isinstance(got.answer, str)
                           and SECRET not in got.answer)
    assert (root / "secret.txt").read_text() == SECRET
    answers.put(KEY, CachedAnswer("It is noon.", "local", 1_000_000.0), 60.0)
    assert answers.get(KEY).answer == "It is noon."

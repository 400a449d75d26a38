"""AnswerCache against a real redis-server on a loopback port: fleet sharing, outage,
recovery, garbage values. Skipped (with the reason) when redis-server is not installed."""
from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from edge_runtime.cache.base import CachedAnswer
from edge_runtime.cache.redis_tier import NAMESPACE, RedisTier
from edge_runtime.cache.tiered import AnswerCache
from edge_runtime.clock import FakeClock
from edge_runtime.config import CacheConfig
from edge_runtime.errors import CacheTierError

pytestmark = pytest.mark.integration
redis = pytest.importorskip("redis", reason="the redis client is not installed: pip install 'edge-runtime[redis]'")

ANSWER = CachedAnswer(answer="About 384,400 km.", route="cloud", created_at=5.0, model="gemma")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A throwaway redis-server on 127.0.0.1:port; start/stop can be repeated."""

    def __init__(self, port: int, workdir: Path) -> None:
        self.port, self.workdir = port, workdir
        self.url = f"redis://127.0.0.1:{port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_timeout=0.5, socket_connect_timeout=0.5)
        deadline = time.monotonic() + 10
        while True:
            try:
                if client.ping():
                    break
            except redis.RedisError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"redis-server did not come up on port {self.port}")
                time.sleep(0.05)
        client.close()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None

    def client(self) -> "redis.Redis":
        return redis.Redis(port=self.port, socket_timeout=1)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
    server = RedisServer(_free_port(), tmp_path)
    server.start()
    yield server
    server.stop()


def make_cache(tmp_path: Path, name: str, url: str, clock: FakeClock) -> AnswerCache:
    cfg = CacheConfig(disk_dir=str(tmp_path / name), redis_url=url, redis_timeout_s=0.5)
    return AnswerCache.from_config(cfg, tmp_path, clock)


def test_an_answer_put_on_one_device_is_a_hit_on_another(tmp_path: Path, redis_server: RedisServer) -> None:
    clock = FakeClock()
    a = make_cache(tmp_path, "device-a", redis_server.url, clock)
    b = make_cache(tmp_path, "device-b", redis_server.url, clock)
    assert a.tier_states()["redis"] == "ok" and b.tier_states()["redis"] == "ok"
    a.put("v1:abc", ANSWER, ttl_s=600)
    assert b.get("v1:abc") == ANSWER
    assert b.stats()["tiers"]["redis"]["hits"] == 1
    assert b.get("v1:abc") == ANSWER                      # now served by b's own memory
    assert b.stats()["tiers"]["memory"]["hits"] == 1
    raw = redis_server.client()
    assert raw.exists(NAMESPACE + "v1:abc")
    assert 0 < raw.ttl(NAMESPACE + "v1:abc") <= 600
    a.close()
    b.close()


def test_redis_outage_is_survived_and_recovered(tmp_path: Path, redis_server: RedisServer) -> None:
    clock = FakeClock()
    cache = make_cache(tmp_path, "dev", redis_server.url, clock)
    cache.put("v1:before", ANSWER, ttl_s=600)
    redis_server.stop()

    cache.put("v1:during", ANSWER, ttl_s=600)             # finds redis gone
    assert cache.tier_states()["redis"].startswith("failed: redis at redis://127.0.0.1")
    assert cache.tier_states()["disk"] == "ok"
    assert cache.get("v1:before") == ANSWER
    assert cache.get("v1:during") == ANSWER
    assert cache.get("v1:nothing") is None
    assert cache.error_counts()["redis"] >= 1

    redis_server.start()                                  # empty again: no persistence
    clock.advance(5)
    cache.get("v1:before")
    assert cache.tier_states()["redis"] == "ok"
    cache.put("v1:after", ANSWER, ttl_s=600)
    assert redis_server.client().exists(NAMESPACE + "v1:after")
    cache.close()


def test_redis_down_at_start_then_coming_up(tmp_path: Path) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
    clock = FakeClock()
    server = RedisServer(_free_port(), tmp_path)
    cache = make_cache(tmp_path, "dev", server.url, clock)
    assert cache.tier_states()["redis"].startswith("failed: ")
    cache.put("v1:k", ANSWER, ttl_s=600)
    assert cache.get("v1:k") == ANSWER
    server.start()
    try:
        clock.advance(5)
        cache.put("v1:k2", ANSWER, ttl_s=600)
        assert cache.tier_states()["redis"] == "ok"
        assert server.client().exists(NAMESPACE + "v1:k2")
    finally:
        cache.close()
        server.stop()


def test_garbage_in_redis_is_a_miss_and_an_error(tmp_path: Path, redis_server: RedisServer) -> None:
    clock = FakeClock()
    cache = make_cache(tmp_path, "dev", redis_server.url, clock)
    raw = redis_server.client()
    raw.set(NAMESPACE + "v1:garbage", b"\x80\x81 definitely not an answer")
    raw.rpush(NAMESPACE + "v1:list", b"a", b"b")          # wrong Redis type under an answer key
    assert cache.get("v1:garbage") is None
    assert cache.get("v1:list") is None
    assert cache.error_counts()["redis"] == 2
    assert cache.tier_states()["redis"] == "ok"
    cache.put("v1:list", ANSWER, ttl_s=60)                # a put replaces the bad value
    assert make_cache(tmp_path, "other", redis_server.url, clock).get("v1:list") == ANSWER
    cache.close()


def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])   # accept and say nothing
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
        tier = RedisTier(url, timeout_s=0.2)
        with pytest.raises(CacheTierError) as info:
            tier.probe()
        assert "redis_timeout_s" in (info.value.hint or "")
        tier.close()
    finally:
        stop.set()
        t.join()
        for s in accepted:
            s.close()
        listener.close()


def test_bad_url_and_wrong_password_name_the_fix(redis_server: RedisServer) -> None:
    with pytest.raises(CacheTierError) as bad:
        RedisTier("http://example", 0.2).probe()
    assert "cache.redis_url" in bad.value.message
    redis_server.client().config_set("requirepass", "s3cret")
    tier = RedisTier(f"redis://:wrong@127.0.0.1:{redis_server.port}/0", 0.5)
    with pytest.raises(CacheTierError) as auth:
        tier.probe()
    assert "password" in (auth.value.hint or "") and "wrong" not in auth.value.message
    tier.close()

"""The real runtime (real NLU, skills, cache tiers) with parts missing: it keeps serving."""
import pytest
from aiohttp.test_utils import TestClient, TestServer

from edge_runtime.config import load_config
from edge_runtime.daemon import make_app
from edge_runtime.runtime import Runtime

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(tmp_path):
    cfg = load_config(env={}).with_overrides(
        paths={"home": str(tmp_path / "home")},
        llm={"model_dir": str(tmp_path / "no-model-here")},
        cloud={"enabled": False}, voice={"enabled": False},
        cache={"redis_url": "redis://127.0.0.1:1/0"})          # nothing listens there
    rt = Runtime.build(cfg)
    await rt.start()
    c = TestClient(TestServer(make_app(rt)))
    await c.start_server()
    yield c
    await c.close()
    await rt.close()


async def test_missing_model_and_dead_redis_degrade_cleanly(client):
    r = await client.post("/v1/ask", json={"text": "why is the sky blue"})
    assert r.status == 503
    err = (await r.json())["error"]
    assert err["code"] == "model_missing" and "models build" in err["hint"]

    r = await client.post("/v1/ask", json={"text": "what time is it"})
    assert r.status == 200 and (await r.json())["route"] == "skill"

    health = await (await client.get("/healthz")).json()
    assert health["status"] == "degraded"
    assert "models build" in health["llm"]["error"]
    assert health["cache"]["redis"].startswith("failed")
    assert health["cache"]["disk"] == "ok"
    metrics = await (await client.get("/metrics")).text()
    assert 'edge_cache_tier_up{tier="redis"} 0.0' in metrics
    assert 'edge_errors_total{code="model_missing"' in metrics


async def test_corrupt_cache_file_at_start_is_moved_aside(tmp_path):
    answers = tmp_path / "home" / "answers"
    answers.mkdir(parents=True)
    (answers / "cache.db").write_bytes(b"this is not sqlite" * 100)
    cfg = load_config(env={}).with_overrides(
        paths={"home": str(tmp_path / "home")}, llm={"model_dir": str(tmp_path / "none")},
        cloud={"enabled": False}, voice={"enabled": False})
    rt = Runtime.build(cfg)
    try:
        assert rt.stages.cache.tier_states()["disk"] == "ok"
        assert any(p.name.startswith("cache.db.corrupt-") for p in answers.iterdir())
        r = await rt.pipeline.ask("what time is it")
        assert r.route == "skill"
    finally:
        await rt.close()

"""`edge-runtime bench load --url` end to end against a fake daemon on loopback (a few
seconds, no model): the sweep, the daemon/client agreement check and the three outputs."""
from __future__ import annotations

import asyncio
import json
import threading

import pytest
from aiohttp import web

from benchmarks import load_bench


class FakeDaemon:
    """Answers skills at once and everything else after 30 ms; counts like /metrics."""

    def __init__(self) -> None:
        self.ok = 0
        self.total_s = 0.0
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    async def ask(self, request: web.Request) -> web.Response:
        body = await request.json()
        skill = body["text"].startswith(("what time", "hello"))
        await asyncio.sleep(0 if skill else 0.03)
        total = 1.0 if skill else 30.0
        self.ok += 1
        self.total_s += total / 1000
        return web.json_response({
            "transcript": body["text"], "intent": {"name": "oos", "confidence": 1, "slots": {}},
            "route": "skill" if skill else "local", "device": "cpu", "reason": "r",
            "answer": f"answer to {body['text']}",
            "timings_ms": {"asr": None, "nlu": 0.1, "cache": None,
                           "first_token": total if skill else 5.0, "total": total}})

    async def healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "voice": "disabled", "in_flight": 0})

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(text=f'edge_requests_total{{outcome="ok"}} {self.ok}\n'
                                 f'edge_stage_seconds_count{{stage="total"}} {self.ok}\n'
                                 f'edge_stage_seconds_sum{{stage="total"}} {self.total_s}\n')

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/v1/ask", self.ask)
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/metrics", self.metrics)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    def __enter__(self) -> "FakeDaemon":
        self.thread.start()
        self.ready.wait(5)
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def test_sweep_against_a_running_daemon(tmp_path, capsys) -> None:
    with FakeDaemon() as fake:
        url = f"http://127.0.0.1:{fake.port}"
        rc = load_bench.main(["--url", url, "--baseline-url", url, "--levels", "1,4",
                              "--duration", "0.5", "--rate-per-user", "6", "--no-pin",
                              "--out", str(tmp_path), "--json"])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert [lv["users"] for lv in result["levels"]] == [1, 4]
    assert [lv["users"] for lv in result["baseline"]] == [1, 4]
    for lv in result["levels"] + result["baseline"]:
        assert lv["sent"] > 0 and lv["lost"] == 0 and lv["errors"] == 0
        assert lv["answered"] + lv["skipped"] >= lv["sent"]
        assert lv["daemon"]["agree"], lv["daemon"]
        assert lv["timing"]["server_longer"] == 0
    assert result["ratios"][0]["users"] == 1
    assert (tmp_path / "load.json").is_file() and (tmp_path / "load.md").is_file()
    assert "| 4 | edge |" in (tmp_path / "load.md").read_text()


def test_only_loopback_urls() -> None:
    with pytest.raises(SystemExit):
        load_bench.main(["--url", "http://10.1.2.3:8080", "--no-baseline", "--levels", "1",
                         "--duration", "1", "--no-pin"])

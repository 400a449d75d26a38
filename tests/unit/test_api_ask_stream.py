"""`POST /v1/ask` with "stream": true (NDJSON) and `edge-runtime ask --url` printing it, on
the real daemon app on loopback with fake pipeline stages."""
import asyncio
import json
import threading

import pytest

from edge_runtime.api.client import print_stream, stream_events
from edge_runtime.cli import main as cli_main
from edge_runtime.errors import EdgeError
from tests.api_fixtures import GatedEngine, start_client
from tests.pipeline_fakes import FakeCloud


@pytest.fixture
async def client():
    c = await start_client()
    yield c
    await c.close()


async def _lines(r):
    assert r.headers["Content-Type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in (await r.text()).splitlines()]


async def test_pieces_then_the_same_answer_object_as_without_streaming(client):
    # (pieces that come faster than they are written are joined: see the gated tests)
    plain = await (await client.post("/v1/ask", json={"text": "why is the sky blue"})).json()
    r = await client.post("/v1/ask", json={"text": "why is the ocean deep", "stream": True})
    assert r.status == 200
    lines = await _lines(r)
    assert {e["type"] for e in lines[:-1]} == {"piece"} and lines[-1]["type"] == "answer"
    assert "".join(e["text"] for e in lines[:-1]) == "Light scatters."
    final = lines[-1]
    assert set(final) == set(plain) | {"type"}
    assert final["answer"] == "Light scatters." and final["route"] == "local"
    assert set(final["timings_ms"]) == set(plain["timings_ms"])


async def test_skills_and_cache_hits_stream_as_one_piece(client):
    for text, route in (("what time is it", "skill"), ("why is the sky blue", "local"),
                        ("why is the sky blue", "cache")):
        lines = await _lines(await client.post("/v1/ask", json={"text": text, "stream": True}))
        assert lines[-1]["route"] == route
        if route != "local":
            assert [e["type"] for e in lines] == ["piece", "answer"]
            assert lines[0]["text"] == lines[-1]["answer"]


async def test_a_cloud_answer_that_breaks_off_is_reset_then_answered_locally():
    class HeldCloud(FakeCloud):
        def __init__(self):
            super().__init__()
            self.go = asyncio.Event()

        async def stream(self, messages, params, deadline_s):
            yield "From "
            await self.go.wait()
            from edge_runtime.errors import CloudUnavailableError
            raise CloudUnavailableError("cloud killed mid-stream")

    cloud = HeldCloud()
    c = await start_client(cloud=cloud, budget_ms=1)
    try:
        r = await c.post("/v1/ask", json={"text": "why is the sky blue", "stream": True})
        first = json.loads(await r.content.readline())
        assert first == {"type": "piece", "text": "From "}
        cloud.go.set()
        rest = [json.loads(x) for x in (await r.text()).splitlines()]
        assert rest[0] == {"type": "reset"}
        assert "".join(e["text"] for e in rest[1:-1]) == "Light scatters."
        assert rest[-1]["route"] == "local" and "cloud failed" in rest[-1]["reason"]
    finally:
        await c.close()


@pytest.mark.parametrize("body,words", [
    ({"text": "hi", "stream": "yes"}, "true or false"),
    ({"text": "   ", "stream": True}, "empty"),
    ({"stream": True}, '"text"'),
])
async def test_bad_streamed_requests_are_plain_http_errors(client, body, words):
    r = await client.post("/v1/ask", json=body)
    assert r.status == 400 and words in (await r.json())["error"]["message"]


async def test_the_cli_prints_pieces_as_they_arrive(capsys):
    engine = GatedEngine()
    c = await start_client(engine=engine)
    seen = threading.Event()

    class Out:
        def __init__(self):
            self.parts = []

        def write(self, s):
            self.parts.append(s)
            if "Light" in s:
                seen.set()

        def flush(self):
            pass

    out, err = Out(), Out()
    try:
        url = str(c.make_url(""))
        task = asyncio.ensure_future(asyncio.to_thread(
            print_stream, url, "why is the sky blue", "", None, as_json=False, out=out,
            err=err))
        assert await asyncio.to_thread(seen.wait, 10)
        assert "".join(out.parts) == "Light "       # printed while the model still generates
        assert engine.yielded == 1
        engine.gate.set()
        answer = await task
        assert "".join(out.parts) == "Light scatters.\n"
        assert answer["route"] == "local" and "local/cpu" in "".join(err.parts)
    finally:
        engine.gate.set()
        await c.close()


async def test_ask_url_streams_by_default_and_json_prints_one_object(client, capsys):
    url = str(client.make_url(""))
    rc = await asyncio.to_thread(cli_main, ["ask", "--url", url, "what time is it"])
    cap = capsys.readouterr()
    assert rc == 0 and cap.out == "It is noon.\n" and "[skill/none]" in cap.err
    rc = await asyncio.to_thread(cli_main, ["ask", "--url", url, "--json", "what time is it"])
    obj = json.loads(capsys.readouterr().out)
    assert rc == 0 and obj["answer"] == "It is noon." and "type" not in obj
    rc = await asyncio.to_thread(cli_main, ["ask", "--url", url, "--json", "--stream",
                                            "what time is it"])
    events = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [e["type"] for e in events] == ["piece", "answer"]


async def test_ask_stream_without_url_and_stream_errors_are_one_line(client, capsys):
    assert cli_main(["ask", "--stream", "what time is it"]) == 2
    assert "--url" in capsys.readouterr().err
    url = str(client.make_url(""))
    rc = await asyncio.to_thread(cli_main, ["ask", "--url", url, "   "])
    assert rc == 2 or rc == 1
    assert "empty" in capsys.readouterr().err


async def test_stream_events_reads_a_daemon_that_does_not_stream():
    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    async def old_ask(request):                  # an older daemon ignores "stream"
        return web.json_response({"answer": "It is noon.", "route": "skill"})

    app = web.Application()
    app.router.add_post("/v1/ask", old_ask)
    c = TestClient(TestServer(app))
    await c.start_server()
    try:
        events = await asyncio.to_thread(lambda: list(stream_events(str(c.make_url("")),
                                                                     "hi", "")))
        assert events == [{"type": "answer", "answer": "It is noon.", "route": "skill"}]
    finally:
        await c.close()


async def test_an_unreachable_daemon_is_a_clear_error():
    with pytest.raises(EdgeError, match="cannot reach"):
        await asyncio.to_thread(lambda: list(stream_events("http://127.0.0.1:9", "hi", "")))

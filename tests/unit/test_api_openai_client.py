"""The OpenAI-compatible API driven by the official `openai` client, against the real daemon
app on loopback (aiohttp test server) with fake pipeline stages behind it."""
import asyncio
import logging

import openai
import pytest

from edge_runtime.daemon import RUNTIME_KEY
from tests.api_fixtures import GatedEngine, drop_client_and_drain, start_client


_OPENED: list[openai.AsyncOpenAI] = []


@pytest.fixture(autouse=True)
async def _close_openai_clients():
    """Close each test's clients on its own event loop: an unclosed one is closed by the
    garbage collector later, on a dead loop, as an asyncio ERROR inside another test."""
    yield
    while _OPENED:
        await _OPENED.pop().close()


def _oa(client, api_key="unused"):
    oa = openai.AsyncOpenAI(base_url=str(client.make_url("/v1")), api_key=api_key,
                            max_retries=0)
    _OPENED.append(oa)
    return oa


def _user(text):
    return [{"role": "user", "content": text}]


@pytest.fixture
async def server():
    c = await start_client()
    yield c
    await c.close()


async def test_models_lists_the_device(server):
    oa = _oa(server)
    models = await oa.models.list()
    assert [m.id for m in models.data] == ["edge-runtime"]
    assert (await oa.models.retrieve("edge-runtime")).id == "edge-runtime"
    with pytest.raises(openai.NotFoundError):
        await oa.models.retrieve("gpt-4o")


async def test_a_completion_goes_through_the_pipeline_and_says_how(server):
    oa = _oa(server)
    out = await oa.chat.completions.create(model="edge-runtime",
                                           messages=_user("why is the sky blue"))
    assert out.choices[0].message.content == "Light scatters."
    assert out.choices[0].message.role == "assistant" and out.choices[0].finish_reason == "stop"
    ext = out.model_extra["edge_runtime"]
    assert ext["route"] == "local" and ext["device"] == "cpu" and ext["reason"]
    again = await oa.chat.completions.create(model="edge-runtime",
                                             messages=_user("why is the sky blue"))
    assert again.model_extra["edge_runtime"]["route"] == "cache"
    skill = await oa.chat.completions.create(model="edge-runtime",
                                             messages=_user("what time is it"))
    assert skill.choices[0].message.content == "It is noon."
    assert skill.model_extra["edge_runtime"]["route"] == "skill"


async def test_a_stream_carries_the_answer_and_ends_with_route_and_timings(server):
    oa = _oa(server)
    stream = await oa.chat.completions.create(model="edge-runtime", stream=True,
                                              messages=_user("why is the sky blue"))
    chunks = [c async for c in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Light scatters."
    assert chunks[0].choices[0].delta.role == "assistant"
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])
    ext = last.model_extra["edge_runtime"]
    assert ext["route"] == "local" and ext["reason"]
    assert ext["first_token_ms"] > 0 and ext["first_chunk_ms"] >= 0
    assert len({c.id for c in chunks}) == 1


async def test_a_skill_answer_streams_as_one_piece(server):
    oa = _oa(server)
    stream = await oa.chat.completions.create(model="edge-runtime", stream=True,
                                              messages=_user("what time is it"))
    contents = [c.choices[0].delta.content async for c in stream if c.choices[0].delta.content]
    assert contents == ["It is noon."]


async def test_pieces_arrive_while_the_model_is_still_generating():
    engine = GatedEngine()
    c = await start_client(engine=engine)
    try:
        stream = await _oa(c).chat.completions.create(model="edge-runtime", stream=True,
                                                      messages=_user("why is the sky blue"))
        it = stream.__aiter__()
        first = await it.__anext__()
        assert first.choices[0].delta.content == "Light "
        assert engine.yielded == 1 and not engine.gate.is_set()   # the rest is not made yet
        engine.gate.set()
        rest = [ch async for ch in it]
        assert "".join(ch.choices[0].delta.content or "" for ch in rest) == "scatters."
    finally:
        engine.gate.set()
        await c.close()


async def test_earlier_turns_are_the_conversation_and_are_forgotten_after():
    engine = GatedEngine()
    engine.gate.set()
    c = await start_client(engine=engine)
    try:
        messages = [{"role": "system", "content": "You are a pirate."},
                    {"role": "user", "content": "why is the sky blue"},
                    {"role": "assistant", "content": "Light scatters."},
                    {"role": "user", "content": [{"type": "text", "text": "and at"},
                                                 {"type": "text", "text": "sunset"}]}]
        oa = _oa(c)
        out = await oa.chat.completions.create(model="edge-runtime", messages=messages,
                                               temperature=0.9, max_tokens=5)
        prompt = [(m.role, m.content) for m in engine.prompts[-1]]
        assert prompt[1:] == [("user", "why is the sky blue"), ("assistant", "Light scatters."),
                              ("user", "and at\nsunset")]
        assert "pirate" not in prompt[0][1]                 # the device's system prompt
        ignored = out.model_extra["edge_runtime"]["ignored"]
        assert "temperature" in ignored and "max_tokens" in ignored
        assert any("system" in i for i in ignored)
        assert len(c.server.app[RUNTIME_KEY].pipeline.conversations) == 0
        again = await oa.chat.completions.create(model="edge-runtime", messages=messages)
        assert again.model_extra["edge_runtime"]["route"] == "local"   # follow-ups: no cache
    finally:
        await c.close()


@pytest.mark.parametrize("kwargs,param,words", [
    ({"n": 2}, "n", "n=2"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
     "tools", "tool"),
    ({"logprobs": True}, "logprobs", "log-prob"),
    ({"response_format": {"type": "json_object"}}, "response_format", "json_object"),
])
async def test_parameters_it_cannot_honour_are_a_400_that_names_them(server, kwargs, param,
                                                                      words):
    oa = _oa(server)
    with pytest.raises(openai.BadRequestError) as info:
        await oa.chat.completions.create(model="edge-runtime", messages=_user("hi"), **kwargs)
    err = info.value.body
    assert info.value.status_code == 400 and err["param"] == param and words in err["message"]
    assert err["type"] == "invalid_request_error"
    ok = await oa.chat.completions.create(model="edge-runtime", messages=_user("hi"))
    assert ok.choices[0].message.content


async def test_an_image_part_is_a_400_that_says_image(server):
    oa = _oa(server)
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "what is this"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]
    with pytest.raises(openai.BadRequestError) as info:
        await oa.chat.completions.create(model="edge-runtime", messages=messages)
    assert "image" in info.value.body["message"]
    assert info.value.body["param"] == "messages[0].content[1]"


async def test_an_unknown_model_is_a_404_naming_the_one_served(server):
    with pytest.raises(openai.NotFoundError) as info:
        await _oa(server).chat.completions.create(model="gpt-4o", messages=_user("hi"))
    assert "edge-runtime" in info.value.body["message"]
    assert info.value.body["code"] == "model_not_found"


async def test_the_bearer_token_rule_applies():
    c = await start_client(token="s3cret")
    try:
        with pytest.raises(openai.AuthenticationError) as info:
            await _oa(c, "wrong").chat.completions.create(model="edge-runtime",
                                                          messages=_user("what time is it"))
        assert info.value.body["type"] == "authentication_error"
        with pytest.raises(openai.AuthenticationError):
            await _oa(c, "wrong").models.list()
        ok = await _oa(c, "s3cret").chat.completions.create(
            model="edge-runtime", messages=_user("what time is it"))
        assert ok.choices[0].message.content == "It is noon."
    finally:
        await c.close()


async def test_overload_is_a_503_with_retry_after_in_openai_shape():
    engine = GatedEngine()
    c = await start_client(engine=engine)
    try:
        p = c.server.app[RUNTIME_KEY].pipeline
        p.s.scheduler.predictor.service_s = 5.0
        oa = _oa(c)
        first = asyncio.ensure_future(oa.chat.completions.create(
            model="edge-runtime", messages=_user("why is it so")))
        for _ in range(1000):
            if p.s.scheduler.local.committed():
                break
            await asyncio.sleep(0.01)
        with pytest.raises(openai.InternalServerError) as info:
            await oa.chat.completions.create(model="edge-runtime", stream=True,
                                             messages=_user("why is the sea salty"))
        assert info.value.status_code == 503
        assert int(info.value.response.headers["Retry-After"]) >= 1
        assert info.value.body["code"] == "overloaded"
        engine.gate.set()
        assert (await first).choices[0].message.content == "Light scatters."
    finally:
        engine.gate.set()
        await c.close()


async def test_a_client_gone_mid_stream_cancels_its_answer_and_the_daemon_serves_on(caplog):
    engine = GatedEngine(pieces=tuple(f"piece{i} " for i in range(60)))
    c = await start_client(engine=engine)
    caplog.set_level(logging.DEBUG)
    try:
        r = await c.post("/v1/chat/completions", json={
            "model": "edge-runtime", "stream": True, "messages": _user("why is the sky blue")})
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream")
        assert (await r.content.readline()).startswith(b"data: ")
        r.connection.transport.abort()               # the client vanishes
        r.release()
        await drop_client_and_drain(engine, c.server.app[RUNTIME_KEY].pipeline, caplog.records)
        assert engine.cancelled and engine.yielded < 60
        ok = await _oa(c).chat.completions.create(model="edge-runtime",
                                                  messages=_user("what time is it"))
        assert ok.choices[0].message.content == "It is noon."
        assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
        assert any("went away" in r.getMessage() for r in caplog.records)
    finally:
        engine.gate.set()
        await c.close()


async def test_over_budget_the_cloud_answers_and_the_extension_says_why():
    from tests.pipeline_fakes import FakeCloud
    c = await start_client(cloud=FakeCloud(), budget_ms=1)
    try:
        oa = _oa(c)
        out = await oa.chat.completions.create(model="edge-runtime",
                                               messages=_user("why is the sky blue"))
        ext = out.model_extra["edge_runtime"]
        assert out.choices[0].message.content == "From cloud."
        assert ext["route"] == "cloud" and ext["device"] == "cloud"
        assert "> 1 ms budget" in ext["reason"]
        stream = await oa.chat.completions.create(model="edge-runtime", stream=True,
                                                  messages=_user("how do rainbows form"))
        chunks = [ch async for ch in stream]
        assert "".join(ch.choices[0].delta.content or "" for ch in chunks) == "From cloud."
        assert chunks[-1].model_extra["edge_runtime"]["route"] == "cloud"
    finally:
        await c.close()

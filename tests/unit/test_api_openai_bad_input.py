"""Malformed chat-completions requests over raw HTTP: OpenAI's error shape, the right status,
the offending parameter named, and the daemon keeps serving."""
import json

import pytest

from tests.api_fixtures import start_client


@pytest.fixture
async def client():
    c = await start_client(max_body_bytes=50_000)
    yield c
    await c.close()


def _body(**kw):
    body = {"model": "edge-runtime", "messages": [{"role": "user", "content": "hi"}]}
    body.update(kw)
    return json.dumps({k: v for k, v in body.items() if v is not ...}).encode()


def _user(content):
    return [{"role": "user", "content": content}]


CASES = [
    # (body, status, code, param, words in the message)
    (b"{not json", 400, "invalid_json", None, "not valid JSON"),
    (b"\xff\xfe\x00binary", 400, "invalid_json", None, "UTF-8"),
    (b'["messages"]', 400, "invalid_value", None, "JSON object"),
    (_body(messages=...), 400, "missing_required_parameter", "messages", "'messages'"),
    (_body(model=...), 400, "missing_required_parameter", "model", "'model'"),
    (_body(model=7), 400, "invalid_type", "model", "string"),
    (_body(model="gpt-4o"), 404, "model_not_found", "model", "edge-runtime"),
    (_body(messages="hi"), 400, "invalid_type", "messages", "non-empty list"),
    (_body(messages=[]), 400, "invalid_type", "messages", "non-empty list"),
    (_body(messages=["hi"]), 400, "invalid_type", "messages[0]", "object"),
    (_body(messages=[{"role": "robot", "content": "hi"}]), 400, "invalid_value",
     "messages[0].role", "'robot'"),
    (_body(messages=_user(42)), 400, "invalid_type", "messages[0].content", "a number"),
    (_body(messages=_user(None)), 400, "invalid_type", "messages[0].content", "null"),
    (_body(messages=_user({"text": "hi"})), 400, "invalid_type", "messages[0].content",
     "an object"),
    (_body(messages=_user([{"type": "text", "text": 5}])), 400, "invalid_type",
     "messages[0].content[0]", "text part"),
    (_body(messages=_user([{"type": "input_audio", "input_audio": {}}])), 400,
     "unsupported_content", "messages[0].content[0]", "'input_audio'"),
    (_body(messages=_user([{"type": "image_url", "image_url": {"url": "x"}}])), 400,
     "unsupported_content", "messages[0].content[0]", "image"),
    (_body(messages=[{"role": "user", "content": "hi"},
                     {"role": "assistant", "content": "hello"}]), 400, "invalid_value",
     "messages[1].role", "last message must be from the user"),
    (_body(messages=[{"role": "user", "content": "hi"},
                     {"role": "tool", "content": "42", "tool_call_id": "x"},
                     {"role": "user", "content": "and?"}]), 400, "unsupported_parameter",
     "messages[1].role", "tool"),
    (_body(messages=_user("")), 400, "bad_input", None, "empty"),
    (_body(messages=_user("a" * 3000)), 400, "bad_input", None, "3000 characters"),
    (_body(stream="yes"), 400, "invalid_type", "stream", "true or false"),
    (_body(n=3), 400, "unsupported_parameter", "n", "n=3"),
    (_body(n=True), 400, "unsupported_parameter", "n", "n=True"),
    (_body(tools=[{"type": "function"}]), 400, "unsupported_parameter", "tools", "tool"),
    (_body(tool_choice="required"), 400, "unsupported_parameter", "tool_choice", "tool"),
    (_body(functions=[{"name": "f"}]), 400, "unsupported_parameter", "functions", "tool"),
    (_body(top_logprobs=2), 400, "unsupported_parameter", "top_logprobs", "log-prob"),
    (_body(response_format={"type": "json_schema"}), 400, "unsupported_parameter",
     "response_format", "json_schema"),
    (_body(modalities=["text", "audio"]), 400, "unsupported_parameter", "modalities", "text"),
    (_body(messages=_user("a" * 60_000)), 413, "request_too_large", None, "bytes"),
]


@pytest.mark.parametrize("data,status,code,param,words", CASES)
async def test_bad_requests_get_openai_errors_and_the_daemon_keeps_serving(
        client, data, status, code, param, words):
    r = await client.post("/v1/chat/completions", data=data,
                          headers={"Content-Type": "application/json"})
    assert r.status == status, await r.text()
    body = await r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    err = body["error"]
    assert err["code"] == code and err["param"] == param and words in err["message"]
    assert err["type"] == "invalid_request_error"
    ok = await client.post("/v1/chat/completions", data=_body())
    assert ok.status == 200 and (await ok.json())["choices"][0]["message"]["content"]


@pytest.mark.parametrize("extra", [
    {"temperature": 0.1, "top_p": 0.5, "max_tokens": 3, "seed": 1, "stop": ["\n"],
     "presence_penalty": 0, "frequency_penalty": 0, "user": "u1", "stream_options": None},
    {"n": 1, "tools": [], "tool_choice": "none", "logprobs": False,
     "response_format": {"type": "text"}, "some_future_field": {"x": 1}},
])
async def test_harmless_parameters_are_accepted_and_listed_as_ignored(client, extra):
    r = await client.post("/v1/chat/completions", data=_body(**extra))
    assert r.status == 200, await r.text()
    ignored = (await r.json())["edge_runtime"]["ignored"]
    checked = {"n", "tools", "tool_choice", "logprobs", "response_format"}
    assert set(ignored) == set(extra) - checked


async def test_assistant_messages_without_content_and_greetings_are_fine(client):
    messages = [{"role": "assistant", "content": "Hello! How can I help?"},
                {"role": "user", "content": "why is the sky blue"},
                {"role": "assistant", "content": None},
                {"role": "user", "content": "and at sunset"}]
    r = await client.post("/v1/chat/completions", data=_body(messages=messages))
    assert r.status == 200, await r.text()


async def test_streamed_errors_before_the_first_piece_keep_their_status(client):
    r = await client.post("/v1/chat/completions", data=_body(stream=True,
                                                            messages=_user("   ")))
    assert r.status == 400 and (await r.json())["error"]["code"] == "bad_input"

"""The edge policy (``limits.py``) holds on the OpenAI-compatible endpoint as on /v1/ask:
lone surrogates, deep nesting and non-finite numbers are 400s in OpenAI's error shape, and
the next request is answered."""
import pytest

from tests.api_fixtures import start_client

HEAD = '{"model": "edge-runtime", "messages": '
CASES = [
    (HEAD + '[{"role": "user", "content": "why is \\ud800 the sky blue"}]}', "surrogate"),
    (HEAD + "[" * 200 + "]" * 200 + "}", "nested"),
    (HEAD + '[{"role": "user", "content": "hi"}], "temperature": NaN}', "NaN"),
    (HEAD + '[{"role": "user", "content": "' + "a" * 2500 + '"}]}', "characters"),
]


@pytest.mark.parametrize("body,words", CASES)
async def test_the_policy_applies_to_chat_completions(body, words):
    client = await start_client()
    try:
        resp = await client.post("/v1/chat/completions", data=body.encode(),
                                 headers={"Content-Type": "application/json"})
        assert resp.status == 400
        error = (await resp.json())["error"]
        assert words in error["message"] and error["type"] == "invalid_request_error"
        ok = await client.post("/v1/chat/completions", json={
            "model": "edge-runtime", "messages": [{"role": "user", "content": "what time is it"}]})
        assert ok.status == 200
        assert (await ok.json())["choices"][0]["message"]["content"]
    finally:
        await client.close()

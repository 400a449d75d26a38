"""`edge-runtime serve` as a subprocess (real SmolLM2, real `edge-cloud` gateway) driven by
clients nobody here wrote: the official `openai` client, plus `edge-runtime ask --url` for
the native stream."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import openai
import pytest

from tests.e2e.test_daemon_e2e import stack  # noqa: F401  (the daemon + gateway fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def _user(text):
    return [{"role": "user", "content": text}]


def test_openai_client_and_the_native_stream_against_the_daemon(stack):  # noqa: F811
    base = stack["base"]
    oa = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=120)
    assert [m.id for m in oa.models.list().data] == ["edge-runtime"]

    skill = oa.chat.completions.create(model="edge-runtime", messages=_user("what time is it"))
    assert skill.model_extra["edge_runtime"]["route"] == "skill"
    assert ":" in skill.choices[0].message.content

    # streamed from the local model, then the same question comes from the cache
    stream = oa.chat.completions.create(model="edge-runtime", stream=True,
                                        messages=_user("why is the sky blue"))
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    ext = chunks[-1].model_extra["edge_runtime"]
    assert ext["route"] == "local" and ext["device"] == "cpu" and len(text.split()) >= 3, ext
    assert len([c for c in chunks if c.choices[0].delta.content]) >= 2   # piece by piece
    assert ext["first_token_ms"] > 0 and ext["first_chunk_ms"] >= ext["first_token_ms"]
    again = oa.chat.completions.create(model="edge-runtime",
                                       messages=_user("Why is the sky blue?"))
    assert again.model_extra["edge_runtime"]["route"] == "cache"
    assert again.choices[0].message.content == text.strip()

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with urllib.request.urlopen(base + "/healthz", timeout=10) as r:
            if json.loads(r.read())["cloud"] == "up":
                break
        time.sleep(0.2)
    # a conversation: the earlier turns go along (never cached)
    follow = oa.chat.completions.create(model="edge-runtime", messages=[
        {"role": "user", "content": "why is the sky blue"},
        {"role": "assistant", "content": text},
        {"role": "user", "content": "and why is it red at sunset"}])
    fext = follow.model_extra["edge_runtime"]
    assert fext["route"] in ("local", "cloud") and follow.choices[0].message.content

    # bad input: a clear 400 and the daemon keeps serving
    with pytest.raises(openai.BadRequestError) as info:
        oa.chat.completions.create(model="edge-runtime", messages=_user("hi"), n=2)
    assert info.value.body["param"] == "n"

    # the native stream through the CLI, as a user runs it
    env = dict(os.environ, EDGE_RUNTIME_PATHS__HOME=str(stack["tmp"] / "cli-home"))
    out = subprocess.run([sys.executable, "-m", "edge_runtime.cli", "ask", "--url", base,
                          "--json", "--stream", "--budget-ms", "1", "how do rainbows form"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    final = events[-1]
    assert final["type"] == "answer" and final["route"] in ("local", "cloud")
    assert "> 1 ms budget" in final["reason"]      # budget routing decided it, and says how
    pieces = "".join(e["text"] for e in events if e["type"] == "piece")
    assert pieces.strip() == events[-1]["answer"]

"""The OpenAI-compatible backend against a REAL server: llama-cpp-python's, on SmolLM2.

The fixture starts `python -m llama_cpp.server` itself on a free loopback port and skips
only when llama_cpp is not importable.
"""
from __future__ import annotations

import pytest

from benchmarks.cloud import scenarios
from edge_runtime.cloud_link.zmq_client import ZmqCloudClient
from edge_runtime.types import GenerationParams, Message
from tests.cloud_fixtures import LLAMA_MODEL_ALIAS, fast_cloud_config, gateway_process, llama_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def llama_url():
    with llama_server() as url:
        yield url


def openai_args(url: str) -> list[str]:
    return ["--backend", "openai", "--openai-url", url, "--openai-model", LLAMA_MODEL_ALIAS,
            "--openai-timeout-s", "20", "--workers", "2", "--queue-size", "16"]


async def test_gateway_streams_a_real_answer_from_llama_cpp_server(llama_url):
    with gateway_process(*openai_args(llama_url)) as gw:
        cfg = fast_cloud_config(gw.endpoint, first_token_timeout_ms=20_000)
        async with ZmqCloudClient(cfg, model=LLAMA_MODEL_ALIAS) as client:
            pieces = [p async for p in client.stream(
                [Message("user", "What color is the sky on a clear day?")],
                GenerationParams(max_new_tokens=24, temperature=0.0), 30.0)]
    assert len(pieces) >= 2, gw.log()          # streamed, not one blob
    assert "".join(pieces).strip()


async def test_real_model_gateway_killed_mid_stream_each_request_answered_once(llama_url):
    r = await scenarios.drill_killed_mid_stream(
        n=3, gateway_args=openai_args(llama_url), deadline_s=20.0,
        text="Tell me a long story about a lighthouse keeper and the sea.",
        params=GenerationParams(max_new_tokens=48, temperature=0.0))
    assert (r["answered"], r["lost"], r["duplicated"]) == (3, 0, 0), r
    assert r["affected"] + r["winners"]["cloud"] >= 1, r   # the kill really hit a stream

"""A real `edge-cloud serve` subprocess on a free loopback port, used by the real client."""
from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from edge_runtime.cloud_link.keys import generate_keypair
from edge_runtime.cloud_link.zmq_client import ZmqCloudClient
from edge_runtime.errors import CloudUnavailableError
from edge_runtime.types import GenerationParams, Message
from tests.cloud_fixtures import fast_cloud_config, free_tcp_endpoint, gateway_process, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PARAMS = GenerationParams(max_new_tokens=64)


def ask(text: str) -> list[Message]:
    return [Message("user", text)]


@pytest.fixture(scope="module")
def cloud_model_dir() -> Path:
    """The built ONNX model for the embedded backend: EDGE_TEST_MODEL_DIR, else the store's
    built directory (`edge-runtime models build`)."""
    value = os.environ.get("EDGE_TEST_MODEL_DIR", "")
    if value:
        d = Path(value)
    else:
        from edge_runtime.config import load_config
        from edge_runtime.models.store import ModelStore
        d = ModelStore(load_config(env={})).built_dir("smollm2-135m-instruct")
    if not (d / "model.onnx").is_file():
        pytest.skip(f"no built model in {d}: run `edge-runtime models pull && edge-runtime "
                    "models build` (or set EDGE_TEST_MODEL_DIR to its onnx dir)")
    return d


async def test_streams_an_answer_from_the_echo_backend():
    with gateway_process("--backend", "echo") as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint)) as client:
            assert client.state == "up"
            pieces = [p async for p in client.stream(ask("the cloud answers"), PARAMS, 5.0)]
    assert "".join(pieces) == "the cloud answers"


async def test_killed_mid_stream_raises_and_yields_nothing_more():
    with gateway_process("--backend", "echo", "--echo-delay-ms", "50", "--echo-repeat", "60") as gw:
        cfg = fast_cloud_config(gw.endpoint, first_token_timeout_ms=10_000)
        async with ZmqCloudClient(cfg, stall_timeout_ms=10_000) as client:
            pieces: list[str] = []
            with pytest.raises(CloudUnavailableError, match="cloud link down"):
                async for piece in client.stream(ask("tick"), PARAMS, 30.0):
                    pieces.append(piece)
                    if len(pieces) == 3:
                        gw.proc.send_signal(signal.SIGKILL)
            assert pieces[:3] == ["tick", " tick", " tick"] and len(pieces) < 60
            count = len(pieces)
            await asyncio.sleep(0.3)
            assert len(pieces) == count
            assert client.state == "down" and not client.available


async def test_absent_gateway_is_down_at_start_and_fails_fast():
    client = ZmqCloudClient(fast_cloud_config(free_tcp_endpoint()))
    await client.start()
    try:
        assert client.state == "down" and not client.available
        with pytest.raises(CloudUnavailableError, match="cloud link down"):
            [p async for p in client.stream(ask("hi"), PARAMS, 5.0)]
    finally:
        await client.close()


async def test_sigterm_stops_cleanly_and_answers_in_flight_requests():
    with gateway_process("--backend", "echo", "--echo-delay-ms", "50", "--echo-repeat", "60") as gw:
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint)) as client:
            with pytest.raises(CloudUnavailableError, match="shutting_down|cloud link down"):
                async for piece in client.stream(ask("tock"), PARAMS, 30.0):
                    if piece:
                        gw.proc.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(gw.proc.wait, 10) == 0
        assert "stopped" in gw.log()


async def test_curve_admits_allowed_devices_and_refuses_others(tmp_path):
    server_pub, server_secret = generate_keypair(tmp_path / "server", "server")
    _, device_secret = generate_keypair(tmp_path / "device", "device")
    _, stranger_secret = generate_keypair(tmp_path / "stranger", "stranger")
    with gateway_process("--backend", "echo", "--curve-secret-key-file", str(server_secret),
                         "--allow-client-key", str(tmp_path / "device" / "device.key")) as gw:
        good = fast_cloud_config(gw.endpoint, server_public_key=str(server_pub),
                                 client_secret_key_file=str(device_secret))
        async with ZmqCloudClient(good) as client:
            assert client.state == "up"
            pieces = [p async for p in client.stream(ask("encrypted hello"), PARAMS, 5.0)]
            assert "".join(pieces) == "encrypted hello"
        bad = fast_cloud_config(gw.endpoint, server_public_key=str(server_pub),
                                client_secret_key_file=str(stranger_secret))
        async with ZmqCloudClient(bad) as client:
            await wait_until(lambda: client.state == "down")
            assert "handshake" in client.down_reason
            with pytest.raises(CloudUnavailableError):
                [p async for p in client.stream(ask("let me in"), PARAMS, 2.0)]
        assert "refused a CURVE client" in gw.log()


async def test_embedded_backend_streams_a_real_answer(cloud_model_dir):
    with gateway_process("--backend", "embedded", "--model-dir", str(cloud_model_dir),
                         "--threads", "2", timeout_s=120) as gw:
        cfg = fast_cloud_config(gw.endpoint, first_token_timeout_ms=10_000)
        async with ZmqCloudClient(cfg) as client:
            pieces = [p async for p in client.stream(
                [Message("user", "What color is the sky on a clear day?")],
                GenerationParams(max_new_tokens=24), 60.0)]
    text = "".join(pieces)
    assert pieces and text.strip(), gw.log()


async def test_embedded_gateway_killed_mid_stream_each_request_answered_once(cloud_model_dir):
    from benchmarks.cloud import scenarios
    r = await scenarios.drill_killed_mid_stream(
        n=2, gateway_args=["--backend", "embedded", "--model-dir", str(cloud_model_dir),
                           "--threads", "1", "--log-level", "WARNING"],
        text="Tell me a long story about a lighthouse keeper and the sea.", deadline_s=20.0,
        params=GenerationParams(max_new_tokens=48), ready_timeout_s=120.0)
    assert (r["answered"], r["lost"], r["duplicated"]) == (2, 0, 0), r


async def test_heartbeat_reports_the_capacity_the_backend_sized():
    with gateway_process("--backend", "echo") as gw:       # --workers 0: echo's 8
        async with ZmqCloudClient(fast_cloud_config(gw.endpoint, health_interval_s=0.1)) as client:
            await wait_until(lambda: client.fresh_load() is not None)
            assert client.load.capacity == 8 and client.bad_load_reports == 0


async def test_embedded_backend_batches_concurrent_requests(cloud_model_dir):
    with gateway_process("--backend", "embedded", "--model-dir", str(cloud_model_dir),
                         "--threads", "2", "--max-batch", "2", timeout_s=120) as gw:
        cfg = fast_cloud_config(gw.endpoint, first_token_timeout_ms=10_000,
                                health_interval_s=0.2)
        async with ZmqCloudClient(cfg) as client:
            async def one(text: str) -> str:
                return "".join([p async for p in client.stream(
                    ask(text), GenerationParams(max_new_tokens=16), 60.0)])
            answers = await asyncio.gather(one("Name a color."), one("Name a fruit."))
            await wait_until(lambda: (client.fresh_load() is not None
                                      and client.fresh_load().service_s > 0))
            assert client.load.capacity == 2
    assert all(a.strip() for a in answers), gw.log()
    assert "max batch 2" in gw.log()

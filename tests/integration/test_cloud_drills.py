"""The failure drills against real `edge-cloud serve` processes on loopback (echo backend).

Each drill sends a handful of requests through FailoverCloudClient + hedged_answer with a
stand-in local model and checks that every request got exactly one whole answer.
"""
from __future__ import annotations

import asyncio

import pytest

from benchmarks.cloud import scenarios
from benchmarks.cloud.drills import make_client, run_batch
from benchmarks.cloud.fleet import GatewayFleet
from edge_runtime.cloud_link.keys import generate_keypair, load_public_key
from edge_runtime.config import CloudConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def exactly_one_answer_each(result: dict, n: int) -> None:
    assert (result["answered"], result["lost"], result["duplicated"]) == (n, 0, 0), result


async def test_cloud_down_at_start_answers_everything_locally():
    r = await scenarios.drill_cloud_down_at_start(n=6)
    exactly_one_answer_each(r, 6)
    assert r["winners"] == {"cloud": 0, "local": 6} and r["link"] == "down"


async def test_gateway_killed_mid_stream_each_request_answered_once():
    r = await scenarios.drill_killed_mid_stream(n=8)
    exactly_one_answer_each(r, 8)
    assert r["affected"] >= 1, r                   # some answers really were cut mid-stream
    # the surviving gateway kept answering what it had (the client may send all 8 to one)
    kept = sum(v for ep, v in r["in_flight_at_kill"].items() if ep != r["killed"])
    assert r["winners"]["cloud"] >= min(1, kept), r


async def test_slow_cloud_is_beaten_by_the_local_hedge():
    r = await scenarios.drill_slow_cloud(n=6)
    exactly_one_answer_each(r, 6)
    assert r["winners"] == {"cloud": 0, "local": 6}


async def test_wrong_curve_key_never_gets_an_answer():
    r = await scenarios.drill_wrong_key(n=4)
    exactly_one_answer_each(r, 4)
    assert r["winners"]["cloud"] == 0
    assert r["replies_to_stranger"] == 0 and r["refused_logged"]


async def test_garbage_frames_do_not_disturb_real_requests():
    r = await scenarios.drill_garbage_frames(n=10, junk=1000)
    exactly_one_answer_each(r, 10)
    assert r["winners"]["cloud"] == 10 and r["gateway_alive"]


async def test_gateway_restarted_the_client_comes_back_by_itself():
    r = await scenarios.drill_gateway_restarted(n=12)
    exactly_one_answer_each(r, 12)
    assert r["reconnected"] and r["winners"]["local"] >= 1 and r["winners"]["cloud"] >= 8


@pytest.mark.parametrize("mode", ["http500", "hang"])
async def test_backend_http_failure_is_answered_locally(mode):
    r = await scenarios.drill_backend_http(mode, n=4)
    exactly_one_answer_each(r, 4)
    assert r["winners"] == {"cloud": 0, "local": 4}
    assert r["http_requests"] >= 1 and r["gateway_alive"]


async def test_keys_add_lets_a_device_in_without_a_gateway_restart(tmp_path):
    server_pub, server_secret = generate_keypair(tmp_path, "server")
    device_pub, device_secret = generate_keypair(tmp_path, "device")
    allow = tmp_path / "allow"
    allow.write_text("# no devices yet\n")
    with GatewayFleet(1, [*scenarios.ECHO, "--curve-secret-key-file", str(server_secret),
                          "--allow-client-keys-file", str(allow)]) as fleet:
        ep = fleet.endpoints[0]
        assert await asyncio.to_thread(scenarios.stranger_replies, ep, server_pub,
                                       device_secret) == 0
        from cloud_fallback.cli import main as edge_cloud
        assert edge_cloud(["keys", "add", str(device_pub), "--allow-list", str(allow)]) == 0
        cfg = CloudConfig(endpoint=ep, server_public_key=load_public_key(str(server_pub)).decode(),
                          client_secret_key_file=str(device_secret), health_interval_s=0.25)
        async with make_client([ep], cfg) as client:
            t = await run_batch(client, 3, 3, deadline_s=3.0, hedge_after_s=2.0,
                                expected_cloud=lambda i: f"req{i} w0 w1 w2")
        assert t.winners == {"cloud": 3, "local": 0}, t.summary()

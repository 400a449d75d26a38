"""The Grafana dashboard reads what the daemon exports: every panel's query is checked
against the live ``/metrics`` of `edge-runtime serve` (a subprocess, the real SmolLM2
model, the simulated Orin Nano's telemetry, a cloud link with nobody at the other end)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.e2e.test_daemon_e2e import _get, _post, _wait_http
from tests.promql_names import (dashboard_queries, exported_names, missing, unknown_labels,
                                without_samples)

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

DASHBOARD = Path(__file__).resolve().parents[2] / \
    "jetson/monitoring/grafana/dashboards/edge-runtime.json"


@pytest.fixture
def daemon(model_dir, tmp_path):
    http_port, dead_cloud = free_port(), free_port()
    env = dict(os.environ, EDGE_RUNTIME_PATHS__HOME=str(tmp_path / "home"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "edge_runtime.cli", "serve", "--port", str(http_port),
         "--set", f"llm.model_dir={model_dir}", "--set", "llm.threads=1",
         "--set", "llm.max_new_tokens=8", "--set", "device.profile=sim-orin-nano",
         "--set", f"cloud.endpoint=tcp://127.0.0.1:{dead_cloud}",
         "--set", "cloud.health_interval_s=0.5"],
        env=env, stdout=open(tmp_path / "daemon.log", "ab"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{http_port}"
    try:
        _wait_http(base, proc)
        yield base
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_every_panel_names_a_metric_the_live_daemon_exports(daemon) -> None:
    # traffic of every kind, so the labelled series exist: a skill, a local LLM answer and
    # its cache hit, and a bad request (refused by the API before the pipeline)
    assert _post(daemon, {"text": "what time is it"})[1]["route"] == "skill"
    status, first = _post(daemon, {"text": "why is the sky blue"})
    assert status == 200 and first["route"] == "local", first
    assert _post(daemon, {"text": "why is the sky blue"})[1]["route"] == "cache"
    assert _post(daemon, {"text": ""})[0] == 400

    exported = exported_names(_get(daemon, "/metrics"))
    queries = list(dashboard_queries(json.loads(DASHBOARD.read_text(encoding="utf-8"))))
    assert len(queries) >= 20
    assert missing(queries, exported) == []
    assert unknown_labels(queries, exported) == []
    # every query has data to show, but the errors panel: nothing failed in the pipeline
    assert {q.expr for q in without_samples(queries, exported)} == \
        {q.expr for q in queries if q.names == {"edge_errors_total"}}
    # the device panels read the simulated Orin's telemetry, not zeros
    assert "edge_device_temperature_celsius" in exported.labels
    assert "sensor" in exported.labels["edge_device_temperature_celsius"]

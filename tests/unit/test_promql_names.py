"""The PromQL name extractor the dashboard check relies on, and the monitoring files agreeing
with each other (the live check against a daemon is tests/e2e/test_grafana_dashboard.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.config import load_config
from edge_runtime.device import SimulatedDevice, get_profile
from edge_runtime.metrics import Metrics
from tests.promql_names import (dashboard_queries, exported_names, missing, promql_names,
                                unknown_labels)

MONITORING = Path(__file__).resolve().parents[2] / "jetson/monitoring"
DASHBOARD = MONITORING / "grafana/dashboards/edge-runtime.json"


@pytest.mark.parametrize("expr, names, labels", [
    ("edge_queue_depth", {"edge_queue_depth"}, set()),
    ('histogram_quantile(0.95, sum by (le, stage) (rate(edge_stage_seconds_bucket'
     '{instance=~"$instance"}[$__rate_interval])))', {"edge_stage_seconds_bucket"},
     {"le", "stage"}),
    ('sum(rate(x_bucket{le="0.15"}[5m])) / sum(rate(x_count[5m])) > bool 0.5',
     {"x_bucket", "x_count"}, set()),
    ("max without (tier) (a_total offset 1h) * on (job) group_left (device) b_info",
     {"a_total", "b_info"}, {"tier", "job", "device"}),
    ('rate(c_total[5m:30s]) and topk(3, d) or e{name="sum by (x) (fake_metric)"}',
     {"c_total", "d", "e"}, set()),
    ('{__name__="named_metric", route="local"} * 1e6 + 2', {"named_metric"}, set()),
])
def test_names_and_grouping_labels_of_an_expression(expr, names, labels) -> None:
    assert promql_names(expr) == (names, labels)


def _metrics_text() -> str:
    m = Metrics()
    m.observe_route("local", "cpu", "within_budget", 0.1, 0.4)
    return m.render().decode()


def test_the_check_fails_on_a_metric_that_is_not_exported() -> None:
    """The negative case: a panel naming a metric the daemon lacks (or a misspelt suffix)
    is reported; so is a grouping label its series do not carry."""
    exported = exported_names(_metrics_text())
    dash = {"panels": [{"type": "row", "title": "r", "panels": [
        {"title": "ok", "targets": [{"refId": "A", "expr":
                                     "sum by (route) (rate(edge_route_total[5m]))"}]},
        {"title": "ghost", "targets": [{"refId": "A", "expr":
                                        "rate(edge_no_such_metric_total[5m])"}]},
        {"title": "suffix", "targets": [{"refId": "B", "expr":
                                         "edge_stage_seconds_buckets"}]},
        {"title": "label", "targets": [{"refId": "C", "expr":
                                        "sum by (colour) (edge_route_total)"}]},
    ]}]}
    queries = list(dashboard_queries(dash))
    problems = missing(queries, exported)
    assert len(problems) == 2
    assert "'ghost'" in problems[0] and "edge_no_such_metric_total" in problems[0]
    assert "'suffix'" in problems[1]
    labels = unknown_labels(queries, exported)
    assert len(labels) == 1 and "colour" in labels[0]


def test_histogram_and_counter_series_names_are_exported_under_their_suffixes() -> None:
    exported = exported_names(_metrics_text())
    for name in ("edge_stage_seconds_bucket", "edge_stage_seconds_sum",
                 "edge_stage_seconds_count", "edge_route_total", "agent_cache_hit_rate"):
        assert name in exported.names
    assert "edge_route" not in exported.names and "edge_stage_seconds" not in exported.names
    assert exported.labels["edge_route_total"] == {"route", "device"}


def test_dashboard_queries_all_name_metrics_and_use_the_provisioned_datasource() -> None:
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    queries = list(dashboard_queries(dash))
    assert len(queries) >= 20 and all(q.names for q in queries)
    text = DASHBOARD.read_text(encoding="utf-8")
    uids = set(re.findall(r'"uid": "([^"]+)"', text)) - {dash["uid"]}
    datasource = (MONITORING / "grafana/provisioning/datasources/edge-runtime.yaml").read_text()
    assert uids == {"edge-prometheus"} and "uid: edge-prometheus" in datasource
    # the asked-for panels are there
    names = set().union(*(q.names for q in queries))
    for needed in ("edge_stage_seconds_bucket", "physical_ai_scheduling_latency_seconds_bucket",
                   "edge_scheduler_budget_seconds", "agent_cache_hit_rate",
                   "expert_activation_ratio", "edge_scheduler_decisions_total",
                   "edge_queue_depth", "edge_llm_tokens_per_second", "edge_cloud_link_up",
                   "edge_device_temperature_celsius", "edge_device_gpu_load_ratio",
                   "edge_device_memory_used_bytes"):
        assert needed in names, needed


def test_provisioning_paths_prometheus_target_and_compose_agree() -> None:
    compose = (MONITORING / "docker-compose.yml").read_text()
    provider = (MONITORING / "grafana/provisioning/dashboards/edge-runtime.yaml").read_text()
    path = re.search(r"path: (\S+)", provider).group(1)
    assert f"./grafana/dashboards:{path}:ro" in compose
    assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in compose
    assert "./prometheus.yml:/etc/prometheus/prometheus.yml:ro" in compose
    prometheus = (MONITORING / "prometheus.yml").read_text()
    server = load_config(env={}).server
    assert f'targets: ["{server.host}:{server.port}"]' in prometheus
    assert "metrics_path: /metrics" in prometheus


def test_device_gauges_follow_the_monitor_and_are_absent_without_one() -> None:
    m = Metrics()
    assert "edge_device_" not in m.render().decode()       # no monitor: no GPU that reads 0
    clock = FakeClock()
    dev = SimulatedDevice.from_profile(get_profile("sim-orin-nano"), clock)
    clock.advance(80)                                       # throttled: 306 MHz, hot
    m.set_device(dev.telemetry(), slowdown=dev.slowdown(), gpu_available=dev.gpu_available())
    reg = m.registry
    assert reg.get_sample_value("edge_device_gpu_frequency_hertz") == 306e6
    assert reg.get_sample_value("edge_device_slowdown_ratio") == pytest.approx(624 / 306)
    assert reg.get_sample_value("edge_device_temperature_celsius", {"sensor": "tj"}) > 90
    assert 0.8 <= reg.get_sample_value("edge_device_gpu_load_ratio") <= 1.0
    assert reg.get_sample_value("edge_device_memory_total_bytes") == 7620 * 2**20
    clock.advance(80)                                       # GPU lost
    m.set_device(dev.telemetry(), slowdown=dev.slowdown(), gpu_available=dev.gpu_available())
    assert reg.get_sample_value("edge_device_gpu_available") == 0.0
    assert reg.get_sample_value("edge_device_gpu_load_ratio") == 0.0
    assert reg.get_sample_value("edge_device_temperature_celsius", {"sensor": "gpu"}) is None
    m.set_device(None, slowdown=1.0, gpu_available=True)    # stale telemetry
    assert reg.get_sample_value("edge_device_telemetry_up") == 0.0

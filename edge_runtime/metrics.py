"""Prometheus metrics: one registry per daemon (tests create their own).

The three the field asks for (DESIGN.md): ``agent_cache_hit_rate``,
``physical_ai_scheduling_latency_seconds`` and ``expert_activation_ratio``;
plus per-stage latency, route and decision counters, tokens/s, cloud link
state, cache tier state and queue depth, and the device's state as its monitor
reads it (tegrastats on a Jetson, the replayed trace of a simulated one):
temperatures, GPU load and clock, slowdown, GPU presence and memory.
``jetson/grafana/`` holds a dashboard over these names (a test keeps it true).
"""
from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter as PCounter, Gauge, Histogram
from prometheus_client import generate_latest

if TYPE_CHECKING:
    from .device.tegrastats import Telemetry

STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5,
                 1.0, 2.5, 5.0, 10.0)
ROUTES = ("skill", "cache", "local", "cloud")


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self._lock = threading.Lock()
        self._routes: Counter[str] = Counter()
        self._cache_hits = 0
        self._cache_lookups = 0
        self.cache_hit_rate = Gauge(
            "agent_cache_hit_rate", "Share of answer-cache lookups that hit (0-1).", registry=r)
        self.cache_requests = PCounter(
            "edge_cache_requests", "Answer-cache lookups by result.", ["result"], registry=r)
        self.scheduling_latency = Histogram(
            "physical_ai_scheduling_latency_seconds",
            "End of request to first answer token (time to first token), seconds.",
            ["route"], buckets=STAGE_BUCKETS, registry=r)
        self.expert_ratio = Gauge(
            "expert_activation_ratio", "Share of requests each expert (route) serves.",
            ["expert"], registry=r)
        self.stage_seconds = Histogram(
            "edge_stage_seconds", "Latency of each pipeline stage, seconds.", ["stage"],
            buckets=STAGE_BUCKETS, registry=r)
        self.route_total = PCounter("edge_route", "Requests by route.", ["route", "device"],
                                    registry=r)
        self.decisions = PCounter("edge_scheduler_decisions", "Scheduler decisions by route "
                                  "and reason code.", ["route", "reason"], registry=r)
        self.requests = PCounter("edge_requests", "Requests by outcome.", ["outcome"], registry=r)
        self.errors = PCounter("edge_errors", "Errors by stage and code.", ["stage", "code"],
                               registry=r)
        self.tokens_per_s = Gauge("edge_llm_tokens_per_second", "Decode speed of the last "
                                  "answer, by route.", ["route"], registry=r)
        self.predicted_ttft = Gauge("edge_scheduler_predicted_local_ttft_seconds",
                                    "The last predicted local time to first token.", registry=r)
        self.cloud_up = Gauge("edge_cloud_link_up", "1 when the cloud link is up, 0 when down.",
                              registry=r)
        self.cache_tier_up = Gauge("edge_cache_tier_up", "1 when the cache tier works.",
                                   ["tier"], registry=r)
        self.cache_tier_errors = Gauge("edge_cache_tier_errors", "Errors seen per cache tier.",
                                       ["tier"], registry=r)
        self.timers_finished = PCounter("edge_timers_finished", "Timers that rang.",
                                        registry=r)
        self.queue_depth = Gauge("edge_queue_depth", "Requests in flight in the pipeline.",
                                 registry=r)
        self.llm_device = Gauge("edge_llm_provider_info", "The provider running the local LLM.",
                                ["device", "provider"], registry=r)
        self.request_seconds = Histogram(
            "edge_request_seconds", "Whole-request latency (arrival to last answer piece) by "
            "route, seconds.", ["route"], buckets=STAGE_BUCKETS, registry=r)
        self.budget_seconds = Gauge("edge_scheduler_budget_seconds", "The configured latency "
                                    "budget for the first answer token, seconds.", registry=r)
        self.local_slots = Gauge("edge_scheduler_local_slots", "Requests committed to the "
                                 "local model, by state.", ["state"], registry=r)
        self._device: _DeviceGauges | None = None     # registered once there is a monitor
        self.gpu_fallbacks = PCounter(
            "edge_gpu_fallbacks", "A model's accelerated path that failed (at start or run) "
            "and was passed over for the next one.", ["model", "path", "reason"], registry=r)
        self.gpu_path = Gauge("edge_gpu_model_path_info", "1 for the path each small model "
                              "(vad, nlu) runs on: tensorrt-native, tensorrt, cuda or cpu.",
                              ["model", "path"], registry=r)
        for route in ROUTES:
            self.expert_ratio.labels(route)
        for result in ("hit", "miss", "skip"):
            self.cache_requests.labels(result)

    # -- recording -----------------------------------------------------------------
    def observe_stage(self, stage: str, seconds: float) -> None:
        self.stage_seconds.labels(stage).observe(seconds)

    def observe_cache(self, result: str) -> None:
        """result: hit, miss, or skip (not cacheable)."""
        self.cache_requests.labels(result).inc()
        if result == "skip":
            return
        with self._lock:
            self._cache_lookups += 1
            self._cache_hits += result == "hit"
            self.cache_hit_rate.set(self._cache_hits / self._cache_lookups)

    def observe_route(self, route: str, device: str, reason_code: str,
                      first_token_s: float | None, total_s: float | None = None) -> None:
        self.route_total.labels(route, device).inc()
        self.decisions.labels(route, reason_code).inc()
        if first_token_s is not None:
            self.scheduling_latency.labels(route).observe(first_token_s)
        if total_s is not None:
            self.request_seconds.labels(route).observe(total_s)
        with self._lock:
            self._routes[route] += 1
            total = sum(self._routes.values())
            for name in ROUTES:
                self.expert_ratio.labels(name).set(self._routes[name] / total)

    def observe_error(self, stage: str, code: str) -> None:
        self.errors.labels(stage, code).inc()

    def observe_gpu_fallback(self, model: str, path: str, reason: str) -> None:
        self.gpu_fallbacks.labels(model, path, reason).inc()

    def set_gpu_path(self, model: str, path: str) -> None:
        for p in ("tensorrt-native", "tensorrt", "cuda", "cpu"):
            self.gpu_path.labels(model, p).set(1.0 if p == path else 0.0)

    def set_cloud_state(self, state: str) -> None:
        self.cloud_up.set(1.0 if state == "up" else 0.0)

    def set_cache_tiers(self, states: dict[str, str], errors: dict[str, int]) -> None:
        for tier, state in states.items():
            if state != "disabled":
                self.cache_tier_up.labels(tier).set(1.0 if state == "ok" else 0.0)
        for tier, count in errors.items():
            self.cache_tier_errors.labels(tier).set(count)

    def set_local_slots(self, counts: dict[str, int]) -> None:
        for state, n in counts.items():
            self.local_slots.labels(state).set(n)

    def set_device(self, sample: Telemetry | None, *, slowdown: float,
                   gpu_available: bool) -> None:
        """The device monitor's state now (``sample`` None: no fresh telemetry; the
        sample's own gauges then keep their last values and ``telemetry_up`` says 0).
        The ``edge_device_*`` gauges exist from the first call on: a box without a device
        monitor exports none (rather than a GPU that reads 0, "lost")."""
        with self._lock:
            if self._device is None:
                self._device = _DeviceGauges(self.registry)
        self._device.set(sample, slowdown=slowdown, gpu_available=gpu_available)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _DeviceGauges:
    """``edge_device_*``: what the device monitor reads (tegrastats names and units)."""

    def __init__(self, r: CollectorRegistry) -> None:
        self.telemetry_up = Gauge("edge_device_telemetry_up", "1 while the device monitor has "
                                  "a fresh sample.", registry=r)
        self.temperature = Gauge("edge_device_temperature_celsius", "Device temperatures by "
                                 "sensor (tegrastats names: tj, cpu, gpu, soc0 ...).",
                                 ["sensor"], registry=r)
        self.gpu_load = Gauge("edge_device_gpu_load_ratio", "GPU (GR3D) load, 0-1.", registry=r)
        self.gpu_freq = Gauge("edge_device_gpu_frequency_hertz", "GPU clock, hertz.", registry=r)
        self.gpu_available = Gauge("edge_device_gpu_available", "1 while the GPU is there, "
                                   "0 when it is lost.", registry=r)
        self.slowdown = Gauge("edge_device_slowdown_ratio", "Factor (>= 1) by which the GPU "
                              "is slower than at its nominal clock (thermal throttling).",
                              registry=r)
        self.memory_used = Gauge("edge_device_memory_used_bytes", "Device RAM in use (unified "
                                 "CPU/GPU memory on a Jetson), bytes.", registry=r)
        self.memory_total = Gauge("edge_device_memory_total_bytes", "Device RAM, bytes.",
                                  registry=r)
        self._sensors: set[str] = set()

    def set(self, sample: Telemetry | None, *, slowdown: float, gpu_available: bool) -> None:
        self.gpu_available.set(1.0 if gpu_available else 0.0)
        self.slowdown.set(max(1.0, slowdown))
        self.telemetry_up.set(0.0 if sample is None else 1.0)
        if sample is None:
            return
        for sensor in self._sensors - set(sample.temps_c):     # gone (e.g. gpu@ with the GPU)
            self.temperature.remove(sensor)
        for sensor, celsius in sample.temps_c.items():
            self.temperature.labels(sensor).set(celsius)
        self._sensors = set(sample.temps_c)
        if sample.gpu_present is False:
            self.gpu_load.set(0.0)
        elif sample.gpu_util_pct is not None:
            self.gpu_load.set(sample.gpu_util_pct / 100.0)
        if sample.gpu_present and sample.gpu_freq_mhz is not None:
            self.gpu_freq.set(sample.gpu_freq_mhz * 1e6)
        if sample.ram_used_mb is not None:
            self.memory_used.set(sample.ram_used_mb * 2**20)
        if sample.ram_total_mb is not None:
            self.memory_total.set(sample.ram_total_mb * 2**20)

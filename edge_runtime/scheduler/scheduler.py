"""Latency-budget routing: local, cloud, or a fast refusal, decided with everything committed.

For a request that needs the LLM the scheduler predicts the local time to first token from
the local queue (:class:`~.local_queue.LocalQueue`: every request already given to the
local model, queued or running, at the engine's batch size) times the device's slowdown
(thermal throttling, GPU lost), and the cloud's from what the gateways report in their
heartbeats (``predict_ttft_s`` of the cloud client). Then:

1. local within the budget: a local slot is reserved in the same step as the forecast;
2. else the cloud (link up), when it starts within the budget, or late by no more than the
   queue bound (``scheduler.max_queue_ms``, default the global ``scheduler.budget_ms``):
   the device cannot make the budget, so the cloud takes it (hedged by the local model if
   its first piece is late);
3. else the local model when its queueing delay stays within that bound: the answer starts
   late but soon, and the reason says so (an idle but slow device still answers when the
   cloud is down or a request's budget is 1 ms);
4. else a refusal at once (``OverloadedError`` with ``retry_after_s``; HTTP 503 +
   ``Retry-After``), never a 20 s wait.

``scheduler.routing = "local"`` turns routing off (every request queued on the local model:
the monolithic baseline of ``bench load``).
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..config import SchedulerConfig
from .budget import resolve_budget_ms
from .local_queue import LocalForecast, LocalQueue, LocalRates, LocalSlot
from .predictor import TtftPredictor

if TYPE_CHECKING:
    from ..device.tegrastats import Telemetry

INF = float("inf")


class DeviceState(Protocol):
    """What the scheduler reads of the device (edge_runtime.device monitors provide it).

    ``slows_engine``: True when this process's engine really runs at the state reported (a
    live board); False for a replayed trace, whose throttling the host's engine never feels.
    """

    slows_engine: bool

    def telemetry(self) -> Telemetry | None: ...

    def slowdown(self) -> float: ...

    def gpu_available(self) -> bool: ...

    def describe(self) -> str: ...


class CpuGpuRatio(Protocol):
    def ttft_s(self, prompt_tokens: int, *, gpu: bool = True, slowdown: float = 1.0) -> float: ...

    def decode_tok_s(self, *, gpu: bool = True, slowdown: float = 1.0) -> float: ...


@dataclass(frozen=True)
class DeviceFactor:
    """How much slower than its calibration the local model is now: ``ttft`` for the first
    token (prefill), ``step`` for a decode step, and the words for the decision's reason."""

    ttft: float = 1.0
    step: float = 1.0
    words: str = ""


class CloudView(Protocol):
    """What the scheduler reads of the cloud client."""

    @property
    def available(self) -> bool: ...

    def predict_ttft_s(self, pending: int = 0) -> tuple[float, str]:
        """Predicted first-piece time of a request sent now, and a few words on why;
        ``pending``: requests decided for the cloud that were not sent yet."""


@dataclass(frozen=True)
class Decision:
    route: str            # "local", "cloud" or "refuse"
    reason: str           # human-readable, returned with the answer
    code: str             # short label for metrics
    predicted_ttft_s: float
    budget_s: float
    cloud_ttft_s: float = INF
    retry_after_s: float = 0.0


@dataclass
class Plan:
    """A decision and, for a local one, the slot reserved with it (release it when done)."""

    decision: Decision
    slot: LocalSlot | None = None
    cloud_pending: bool = False      # counted as on its way to the cloud (until sent)


class Scheduler:
    def __init__(self, cfg: SchedulerConfig, predictor: TtftPredictor | None = None,
                 device: DeviceState | None = None, latency: CpuGpuRatio | None = None,
                 rates: LocalRates | None = None) -> None:
        """``device``: live or simulated telemetry (throttling, GPU loss); ``latency``: the
        profile's latency model, used for how much slower the CPU is when the GPU is lost;
        ``rates``: the local engine's capacity and step times (None: one at a time)."""
        self.cfg = cfg
        self.predictor = predictor or TtftPredictor(alpha=cfg.ewma_alpha)
        self.local = LocalQueue(self.predictor, rates)
        self.device = device
        self.latency = latency
        self.cloud_ttft_s = 0.3          # observed cloud first-piece time (EWMA), for hedging
        self._lock = threading.Lock()
        self._cloud_pending = 0          # decided for the cloud, not yet seen by its client

    def attach_engine(self, rates: LocalRates | None) -> None:
        self.local.rates = rates

    def budget_s(self, intent: str, override_ms: float | None = None) -> float:
        """The budget in seconds: ``override_ms`` (the pipeline passes the budget it resolved)
        else the configured one for ``intent`` (:func:`~.budget.resolve_budget_ms`)."""
        return resolve_budget_ms(self.cfg, intent, request_ms=override_ms) / 1000.0

    # -- the decision --------------------------------------------------------------------
    def plan(self, prompt_tokens: int, intent: str, *, cloud: CloudView | None,
             has_local: bool = True, budget_ms: float | None = None,
             local_device: str = "cpu", local_error: str = "") -> Plan:
        """Decide where the request goes and reserve its local slot in the same step."""
        budget = self.budget_s(intent, budget_ms)
        cloud_up = cloud is not None and cloud.available
        if not has_local:
            if cloud_up:
                return self._to_cloud(Decision("cloud", f"local model unavailable "
                                               f"({local_error})", "local_unavailable", INF,
                                               budget))
            return Plan(Decision("refuse", f"local model unavailable ({local_error}) and "
                                 "cloud unavailable", "unavailable", INF, budget))
        if self.cfg.routing == "local":
            fc = self.local.forecast(prompt_tokens)
            return Plan(Decision("local", f"routing off: local model ({fc.describe()})",
                                 "routing_off", fc.ttft_s, budget),
                        self.local.reserve(prompt_tokens, forced=True))
        dev = self._device_factor(prompt_tokens)
        slow, throttled = dev.ttft, dev.words
        min_tps = self.cfg.min_decode_tok_s
        slot, fc = self.local.reserve_if(prompt_tokens, budget, slow,
                                         1.0 / min_tps if min_tps > 0 else INF,
                                         step_slowdown=dev.step,
                                         observed_at=self._observed_at(dev))
        local_s = fc.ttft_s * slow
        p_ms, b_ms = local_s * 1e3, budget * 1e3
        if slot is not None:
            return Plan(Decision("local", f"predicted local ttft {p_ms:.0f} ms{throttled} <= "
                                 f"{b_ms:.0f} ms budget", "within_budget", local_s, budget), slot)
        if local_s <= budget:        # in time, but one more would slow every answer too much
            over = (f"predicted local ttft {p_ms:.0f} ms{throttled}, but decoding would slow "
                    f"to {1.0 / (fc.step_s * dev.step):.0f} tok/s < {min_tps:g}")
        else:
            over = f"predicted local ttft {p_ms:.0f} ms{throttled} > {b_ms:.0f} ms budget"
        if fc.ahead:
            over += f" ({fc.describe()})"
        cloud_s, cloud_why = (cloud.predict_ttft_s(self._cloud_pending)
                              if cloud is not None and cloud_up else (INF, ""))
        cloud_s = cloud_s if math.isfinite(cloud_s) and cloud_s >= 0 else INF
        # over budget here: the cloud, if it starts within the budget or its queue is short
        bound = self.queue_bound_s()
        if cloud_s <= budget + bound:
            late = "" if cloud_s <= budget else f": {cloud_s * 1e3:.0f} ms, the budget missed " \
                                                 f"by less than its {bound * 1e3:.0f} ms bound"
            return self._to_cloud(Decision("cloud", f"{over}; {cloud_why}{late}", "over_budget",
                                           local_s, budget, cloud_s))
        local_fits = fc.wait_s * slow <= bound
        if local_fits:
            why = ("cloud disabled" if cloud is None else
                   "cloud unavailable (link down)" if not cloud_up else
                   f"{cloud_why}: too late")
            code = ("cloud_disabled" if cloud is None else
                    "cloud_unavailable" if not cloud_up else "cloud_too_late")
            return Plan(Decision("local", f"{over}; {why}, answering locally on "
                                 f"{local_device}", code, local_s, budget, cloud_s),
                        self.local.reserve(prompt_tokens, observed_at=self._observed_at(dev)))
        waits = [fc.wait_s * slow - bound] + ([cloud_s - budget - bound] if cloud_up and
                                              math.isfinite(cloud_s) else [])
        retry = max(self.cfg.retry_after_s, math.ceil(max(0.0, min(waits))))
        cloud_part = "cloud disabled" if cloud is None else \
            "cloud unavailable" if not cloud_up else cloud_why
        return Plan(Decision("refuse", f"{over}; {cloud_part}; neither can start within "
                             f"{(budget + bound) * 1e3:.0f} ms", "refused", local_s, budget,
                             cloud_s, retry_after_s=float(min(retry, 30.0))))

    def _to_cloud(self, decision: Decision) -> Plan:
        with self._lock:
            self._cloud_pending += 1
        return Plan(decision, cloud_pending=True)

    def cloud_sent(self, plan: Plan) -> None:
        """The cloud client has the request (or it was dropped): no longer pending."""
        with self._lock:
            if plan.cloud_pending:
                plan.cloud_pending = False
                self._cloud_pending -= 1

    def forecast(self, prompt_tokens: int) -> LocalForecast:
        return self.local.forecast(prompt_tokens)

    def queue_bound_s(self) -> float:
        """The longest queueing delay a place may add when the budget cannot be met:
        ``scheduler.max_queue_ms``, default the global budget (not a request's own: a 1 ms
        budget still gets an answer from an idle place)."""
        return (self.cfg.max_queue_ms or self.cfg.budget_ms) / 1e3

    def try_reserve_local(self, prompt_tokens: int, budget_s: float) -> LocalSlot | None:
        """A local slot for a hedge, only while the local queue's wait is within bound."""
        dev = self._device_factor(prompt_tokens)
        bound = self.queue_bound_s()
        fc = self.local.forecast(prompt_tokens)
        if fc.wait_s * dev.ttft > bound:
            return None
        return self.local.reserve(prompt_tokens, observed_at=self._observed_at(dev))

    # -- hedging -------------------------------------------------------------------------
    def hedge_after_s(self, decision: Decision, elapsed_s: float) -> float:
        """When to start the local model beside a pending cloud request: once the budget
        is spent AND the cloud is late by its own standard (1.5x its typical first-token
        time, or 1.5x the predicted one when that is longer), so a healthy cloud is not
        raced for nothing."""
        typical = self.cloud_ttft_s
        if math.isfinite(decision.cloud_ttft_s):
            typical = max(typical, decision.cloud_ttft_s)
        return max(0.0, decision.budget_s - elapsed_s, 1.5 * typical)

    def observe_cloud_ttft(self, ttft_s: float) -> None:
        with self._lock:
            self.cloud_ttft_s += self.cfg.ewma_alpha * (ttft_s - self.cloud_ttft_s)

    # -- device ------------------------------------------------------------------------
    def _device_factor(self, prompt_tokens: int) -> DeviceFactor:
        """How much slower than calibrated the device is now, and the words for it.

        GPU lost: the local model runs on the CPU, priced at the profile's CPU rates (first
        token: the ratio of its CPU to GPU time to first token for this prompt; a decode
        step: the ratio of its GPU to CPU decode speed). Throttled: the GPU clock's slowdown
        stretches both."""
        if self.device is None:
            return DeviceFactor()
        if not self.device.gpu_available():
            ttft = step = 1.0
            if self.latency is not None:
                n = max(prompt_tokens, 1)
                lat = self.latency
                ttft = lat.ttft_s(n, gpu=False) / lat.ttft_s(n, gpu=True)
                step = lat.decode_tok_s(gpu=True) / lat.decode_tok_s(gpu=False)
            ttft, step = max(ttft, 1.0), max(step, 1.0)
            return DeviceFactor(ttft, step, f" (x{ttft:.2f}: gpu provider unavailable, "
                                            f"cpu only)")
        slow = max(self.device.slowdown(), 1.0)
        if slow <= 1.0:
            return DeviceFactor()
        return DeviceFactor(slow, slow, f" (x{slow:.2f} thermal slowdown: "
                                        f"{self.device.describe()})")

    def _observed_at(self, dev: DeviceFactor) -> float:
        """The factor a local answer's measured times are divided by before they feed the
        calibrated (nominal) model: the device's when it really slows the engine (a live
        board: a CPU-only or throttled answer is not the nominal rate and must not be
        priced twice), else 1 (a replayed trace: the host's engine runs at its own pace)."""
        return dev.ttft if self.device is not None and self.device.slows_engine else 1.0

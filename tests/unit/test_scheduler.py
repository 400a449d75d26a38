import pytest

from edge_runtime.config import SchedulerConfig
from edge_runtime.scheduler import Scheduler, TtftPredictor


def test_calibration_fits_overhead_and_rate():
    p = TtftPredictor()
    p.calibrate([(10, 0.030), (110, 0.230)])
    assert p.per_token_s == pytest.approx(0.002)
    assert p.overhead_s == pytest.approx(0.010)
    assert p.predict(60) == pytest.approx(0.130)


def test_calibration_needs_two_samples():
    with pytest.raises(ValueError):
        TtftPredictor().calibrate([(10, 0.1)])


def test_observations_move_the_rate_toward_reality():
    p = TtftPredictor(alpha=0.5, overhead_s=0.0, per_token_s=0.001)
    p.observe(100, 0.300)          # real rate 3 ms/token
    assert p.per_token_s == pytest.approx(0.002)
    p.observe(100, 0.300)
    assert p.per_token_s == pytest.approx(0.0025)


def _sched(budget_ms=150.0, **kw):
    return Scheduler(SchedulerConfig(budget_ms=budget_ms, **kw),
                     TtftPredictor(overhead_s=0.010, per_token_s=0.001))


def test_within_budget_goes_local_with_reason():
    d = _sched().decide(50, "oos", cloud_enabled=True, cloud_available=True)
    assert d.route == "local" and d.code == "within_budget"
    assert "60 ms <= 150 ms budget" in d.reason


def test_over_budget_goes_to_cloud_when_available():
    d = _sched(budget_ms=1).decide(50, "oos", cloud_enabled=True, cloud_available=True)
    assert d.route == "cloud" and "> 1 ms budget" in d.reason


def test_over_budget_stays_local_when_cloud_down():
    d = _sched(budget_ms=1).decide(50, "oos", cloud_enabled=True, cloud_available=False)
    assert d.route == "local" and d.code == "cloud_unavailable"
    assert "cloud unavailable" in d.reason


def test_per_intent_and_per_request_budgets():
    s = _sched(budget_ms=1, intent_budgets_ms={"oos": 1000})
    assert s.decide(50, "oos", cloud_enabled=True, cloud_available=True).route == "local"
    assert s.decide(50, "oos", cloud_enabled=True, cloud_available=True,
                    intent_budget_ms=1).route == "cloud"


def test_queue_wait_counts_requests_in_flight():
    s = _sched()
    s.predictor.service_s = 0.5
    s.local_started()
    d = s.decide(50, "oos", cloud_enabled=True, cloud_available=True)
    assert d.route == "cloud" and d.predicted_ttft_s == pytest.approx(0.56)
    s.local_finished(50, 0.06, 0.5)
    assert s.decide(50, "oos", cloud_enabled=True, cloud_available=True).route == "local"


class Device:
    def __init__(self, slow=1.0, gpu=True):
        self.slow, self.gpu = slow, gpu

    def slowdown(self):
        return self.slow

    def gpu_available(self):
        return self.gpu

    def describe(self):
        return f"gpu at 1/{self.slow}"


class Latency:
    def ttft_s(self, n, *, gpu=True, slowdown=1.0):
        return n * (0.001 if gpu else 0.004)


def test_thermal_slowdown_scales_the_prediction():
    s = Scheduler(SchedulerConfig(), TtftPredictor(overhead_s=0.0, per_token_s=0.002),
                  device=Device(slow=2.0))
    d = s.decide(50, "oos", cloud_enabled=True, cloud_available=True)
    assert d.route == "cloud" and "thermal slowdown" in d.reason
    assert d.predicted_ttft_s == pytest.approx(0.2)


def test_gpu_loss_uses_the_cpu_rate_and_says_so():
    s = Scheduler(SchedulerConfig(), TtftPredictor(overhead_s=0.0, per_token_s=0.001),
                  device=Device(gpu=False), latency=Latency())
    d = s.decide(50, "oos", cloud_enabled=True, cloud_available=True)
    assert d.predicted_ttft_s == pytest.approx(0.2)
    assert d.route == "cloud" and "gpu provider unavailable" in d.reason


def test_simulated_orin_walks_from_local_to_cloud():
    from edge_runtime.clock import FakeClock
    from edge_runtime.device import get_profile, simulated_device_for
    clock = FakeClock()
    profile = get_profile("sim-orin-nano")
    sim = simulated_device_for(profile, clock, loop=False)
    s = Scheduler(SchedulerConfig(), TtftPredictor(overhead_s=0.01, per_token_s=0.0018),
                  device=sim, latency=profile.latency)
    routes = []
    for _ in range(int(sim.duration_s) + 1):
        routes.append(s.decide(50, "oos", cloud_enabled=True, cloud_available=True).route)
        clock.advance(1.0)
    assert routes[0] == "local" and routes[-1] == "cloud"


def test_reused_prefix_gives_a_negative_intercept_but_never_a_negative_prediction():
    p = TtftPredictor()
    p.calibrate([(40, 0.010), (100, 0.130)])     # the first 35 tokens were free (cached)
    assert p.overhead_s < 0
    assert p.predict(60) == pytest.approx(0.050)
    assert p.predict(10) == 0.0

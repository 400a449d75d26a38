import pytest

from edge_runtime.config import SchedulerConfig
from edge_runtime.scheduler import Scheduler, TtftPredictor


def test_calibration_fits_overhead_and_rate():
    p = TtftPredictor()
    p.calibrate([(10, 0.030), (110, 0.230)])
    assert p.per_token_s == pytest.approx(0.002)
    assert p.overhead_s == pytest.approx(0.010)
    assert p.prefill_s(60) == pytest.approx(0.130)


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


class Cloud:
    """What the scheduler reads of the cloud client: availability and a prediction."""

    def __init__(self, up=True, predicted_s=0.0):
        self.available, self.predicted_s = up, predicted_s

    def predict_ttft_s(self, pending=0):
        self.pending = pending
        return self.predicted_s, f"cloud ttft ~{self.predicted_s * 1e3:.0f} ms"


UP, DOWN = Cloud(), Cloud(up=False)


def decide(s, tokens=50, intent="oos", cloud=UP, **kw):
    """The decision of one plan; its local slot (if any) is released at once."""
    plan = s.plan(tokens, intent, cloud=cloud, **kw)
    if plan.slot is not None:
        plan.slot.release()
    return plan.decision


def test_within_budget_goes_local_with_reason():
    d = decide(_sched())
    assert d.route == "local" and d.code == "within_budget"
    assert "60 ms <= 150 ms budget" in d.reason


def test_over_budget_goes_to_cloud_when_available():
    d = decide(_sched(budget_ms=1))
    assert d.route == "cloud" and "> 1 ms budget" in d.reason


def test_over_budget_stays_local_when_cloud_down():
    d = decide(_sched(budget_ms=1), cloud=DOWN)
    assert d.route == "local" and d.code == "cloud_unavailable"
    assert "cloud unavailable" in d.reason


def test_per_intent_and_per_request_budgets():
    s = _sched(budget_ms=1, intent_budgets_ms={"oos": 1000})
    assert decide(s).route == "local"
    assert decide(s, budget_ms=1).route == "cloud"


def test_queue_wait_counts_requests_in_flight():
    s = _sched()
    s.predictor.service_s = 0.5
    running = s.plan(50, "oos", cloud=UP).slot
    running.started()
    d = decide(s)
    assert d.route == "cloud" and d.predicted_ttft_s == pytest.approx(0.56)
    running.finished()
    assert decide(s).route == "local"


class Device:
    def __init__(self, slow=1.0, gpu=True, slows_engine=True):
        self.slow, self.gpu, self.slows_engine = slow, gpu, slows_engine

    def slowdown(self):
        return self.slow

    def gpu_available(self):
        return self.gpu

    def describe(self):
        return f"gpu at 1/{self.slow}"


class Latency:
    def ttft_s(self, n, *, gpu=True, slowdown=1.0):
        return n * (0.001 if gpu else 0.004)

    def decode_tok_s(self, *, gpu=True, slowdown=1.0):
        return 40.0 if gpu else 20.0


def test_thermal_slowdown_scales_the_prediction():
    s = Scheduler(SchedulerConfig(), TtftPredictor(overhead_s=0.0, per_token_s=0.002),
                  device=Device(slow=2.0))
    d = decide(s)
    assert d.route == "cloud" and "thermal slowdown" in d.reason
    assert d.predicted_ttft_s == pytest.approx(0.2)


def test_gpu_loss_uses_the_cpu_rate_and_says_so():
    s = Scheduler(SchedulerConfig(), TtftPredictor(overhead_s=0.0, per_token_s=0.001),
                  device=Device(gpu=False), latency=Latency())
    d = decide(s)
    assert d.predicted_ttft_s == pytest.approx(0.2)
    assert d.route == "cloud" and "gpu provider unavailable" in d.reason


def test_gpu_loss_prices_a_decode_step_at_the_cpu_decode_rate():
    """The first token costs 4x on the CPU here, a decode step 2x (40 vs 20 tok/s): a
    batching engine whose step is 12 ms still decodes at 41 tok/s >= 30 on the CPU."""
    s = Scheduler(SchedulerConfig(budget_ms=1000, min_decode_tok_s=30),
                  TtftPredictor(overhead_s=0.0, per_token_s=0.001), rates=Rates(),
                  device=Device(gpu=False), latency=Latency())
    d = decide(s)
    assert d.route == "local" and d.code == "within_budget"
    assert d.predicted_ttft_s == pytest.approx(0.2) and "cpu only" in d.reason


@pytest.mark.parametrize("slows_engine, per_token_after", [(True, 0.001), (False, 0.002)])
def test_an_answer_measured_under_a_slowdown_is_folded_in_at_nominal_speed(
        slows_engine, per_token_after):
    """On a live board (the engine feels the throttling) a 2x-throttled answer that took 2x
    the nominal time teaches the model nothing new: the device factor prices it once. A
    replayed trace does not slow the host's engine, so its times are taken as they are."""
    s = Scheduler(SchedulerConfig(budget_ms=1000, ewma_alpha=1.0),
                  TtftPredictor(alpha=1.0, overhead_s=0.0, per_token_s=0.001),
                  device=Device(slow=2.0, slows_engine=slows_engine))
    plan = s.plan(100, "oos", cloud=DOWN)
    assert plan.decision.route == "local" and plan.decision.predicted_ttft_s == pytest.approx(0.2)
    plan.slot.started()
    plan.slot.first_token()
    plan.slot.finished({"ttft_s": 0.2, "prompt_tokens": 100, "total_s": 1.0, "new_tokens": 10})
    assert s.predictor.per_token_s == pytest.approx(per_token_after)
    assert s.predictor.service_s == pytest.approx(0.5 if slows_engine else 1.0)


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
        routes.append(decide(s).route)
        clock.advance(1.0)
    assert routes[0] == "local" and routes[-1] == "cloud"


def test_reused_prefix_gives_a_negative_intercept_but_never_a_negative_prediction():
    p = TtftPredictor()
    p.calibrate([(40, 0.010), (100, 0.130)])     # the first 35 tokens were free (cached)
    assert p.overhead_s < 0
    assert p.prefill_s(60) == pytest.approx(0.050)
    assert p.prefill_s(10) == pytest.approx(0.010)   # never below the fastest first token
    p.observe(5, 0.004)
    assert p.prefill_s(1) == pytest.approx(0.004)


# -- under load --------------------------------------------------------------------------

class Rates:
    """A batching engine's capacity and step times (4 at a time, 10 ms + 2 ms per session)."""

    capacity = 4

    def step_time_s(self, batch):
        return 0.010 + 0.002 * batch


def test_concurrent_decisions_each_count_the_ones_before():
    s = _sched()                      # 60 ms prefill, one at a time
    s.predictor.service_s = 0.5
    cloud = Cloud(predicted_s=0.1)
    plans = [s.plan(50, "oos", cloud=cloud) for _ in range(4)]
    # the first takes the local model; nothing has started yet, but the next three see it
    assert [p.decision.route for p in plans] == ["local", "cloud", "cloud", "cloud"]
    assert s.local.committed() == 1
    plans[0].slot.release()
    assert s.local.committed() == 0 and decide(s, cloud=cloud).route == "local"


def test_a_batching_engine_takes_several_before_its_budget_is_spent():
    s = Scheduler(SchedulerConfig(budget_ms=150),
                  TtftPredictor(overhead_s=0.010, per_token_s=0.001), rates=Rates())
    slots = []
    for _ in range(3):
        plan = s.plan(20, "oos", cloud=Cloud(predicted_s=1.0))
        assert plan.decision.route == "local"
        plan.slot.started()
        plan.slot.first_token()          # decoding now
        slots.append(plan.slot)
    # 3 decoding, one place left: one step of 3 (16 ms) + own prefill (30 ms)
    assert s.forecast(20).ttft_s == pytest.approx(0.016 + 0.030)
    slots.append(s.plan(20, "oos", cloud=Cloud(predicted_s=1.0)).slot)
    # full: the 5th waits for a place: 1/4 of an answer at batch 4 (new_tokens x 18 ms)
    fc = s.forecast(20)
    answer_s = s.predictor.prefill_s(24) + s.predictor.new_tokens * 0.018
    assert fc.ahead == 4 and fc.wait_s == pytest.approx(max(0.030, answer_s / 4) + 0.016)


def test_over_budget_everywhere_is_refused_at_once_with_a_retry_time():
    s = _sched()
    s.predictor.service_s = 2.0
    for _ in range(3):
        s.local.reserve(50)               # 3 answers of 2 s ahead
    d = decide(s, cloud=Cloud(predicted_s=3.0))
    assert d.route == "refuse" and d.code == "refused"
    assert d.retry_after_s >= 1.0 and "neither can start within" in d.reason


def test_cloud_down_and_local_queue_long_is_refused_but_an_idle_slow_device_answers():
    s = Scheduler(SchedulerConfig(budget_ms=150), TtftPredictor(overhead_s=0.3, per_token_s=0))
    d = decide(s, cloud=DOWN)             # 300 ms prefill, nothing queued: late but answered
    assert d.route == "local" and d.code == "cloud_unavailable"
    s.predictor.service_s = 1.0
    s.local.reserve(50)
    assert decide(s, cloud=DOWN).route == "refuse"
    assert decide(s, cloud=None).route == "refuse"


def test_routing_off_queues_everything_locally():
    s = _sched(routing="local")
    s.predictor.service_s = 5.0
    for _ in range(10):
        s.local.reserve(50)
    d = decide(s, cloud=UP)
    assert d.route == "local" and d.code == "routing_off"


@pytest.mark.parametrize("nonsense", [float("nan"), -1.0, float("inf")])
def test_a_nonsense_cloud_prediction_never_wins(nonsense):
    s = _sched(budget_ms=1)
    d = decide(s, cloud=Cloud(predicted_s=nonsense))
    assert d.route == "local"             # the idle local model, late but sure


def test_the_hedge_waits_for_the_budget_and_a_late_cloud():
    s = _sched()
    d = decide(s, budget_ms=1, cloud=Cloud(predicted_s=0.0))
    s.cloud_ttft_s = 0.2
    assert s.hedge_after_s(d, elapsed_s=0.0) == pytest.approx(0.3)
    d = decide(_sched(budget_ms=500), budget_ms=500, cloud=UP)
    assert s.hedge_after_s(d, elapsed_s=0.1) == pytest.approx(0.4)


def test_finished_requests_teach_the_models_but_queued_ones_not_the_prefill_rate():
    s = _sched()
    first = s.local.reserve(50)
    second = s.local.reserve(50)          # queued behind the first
    second.finished({"ttft_s": 0.5, "prompt_tokens": 50, "total_s": 1.0, "new_tokens": 20})
    assert s.predictor.per_token_s == pytest.approx(0.001)     # unchanged
    first.finished({"ttft_s": 0.11, "prompt_tokens": 50, "total_s": 1.0, "new_tokens": 20})
    assert s.predictor.per_token_s > 0.001
    assert s.local.committed() == 0


def test_cloud_decisions_not_yet_sent_count_in_the_next_prediction():
    s = _sched(budget_ms=1)
    cloud = Cloud(predicted_s=0.0)
    plans = [s.plan(50, "oos", cloud=cloud) for _ in range(3)]
    assert [p.decision.route for p in plans] == ["cloud"] * 3
    assert cloud.pending == 2                  # the third saw the two before it
    s.cloud_sent(plans[0])
    s.cloud_sent(plans[0])                     # idempotent
    decide(s, cloud=cloud)
    assert cloud.pending == 2                  # plans[1] and plans[2]


def test_a_cloud_late_by_less_than_the_queue_bound_still_takes_an_over_budget_request():
    s = _sched(budget_ms=1)                        # bound: the global budget, 1 ms here
    assert decide(s, cloud=Cloud(predicted_s=0.06)).route == "local"
    s = Scheduler(SchedulerConfig(budget_ms=150), TtftPredictor(overhead_s=0.01,
                                                                per_token_s=0.001))
    d = decide(s, budget_ms=1, cloud=Cloud(predicted_s=0.06))   # a 1 ms request budget
    assert d.route == "cloud" and "budget missed by less than" in d.reason
    assert decide(s, budget_ms=1, cloud=Cloud(predicted_s=0.2)).code == "cloud_too_late"


def test_a_full_batch_that_would_decode_too_slowly_sends_the_next_to_the_cloud():
    s = Scheduler(SchedulerConfig(budget_ms=150, min_decode_tok_s=60),
                  TtftPredictor(overhead_s=0.010, per_token_s=0.001), rates=Rates())
    routes = []
    for _ in range(4):
        plan = s.plan(20, "oos", cloud=Cloud(predicted_s=0.05))
        routes.append(plan.decision.route)
        if plan.slot is not None:
            plan.slot.started()
            plan.slot.first_token()
    # a step of b sessions costs 10 + 2b ms: 60 tok/s allows b <= 3
    assert routes == ["local", "local", "local", "cloud"]
    assert "decoding would slow to 56 tok/s < 60" in s.plan(20, "oos", cloud=UP).decision.reason
    # without a cloud the request still goes local (late is better than refused)
    assert decide(s, cloud=DOWN).route == "local"

"""Open-loop arrival schedules: Poisson at the mean rate, bursty with the same mean."""
from __future__ import annotations

import statistics

from benchmarks.load import arrivals as a


def _dispersion(times: list[float], duration: float, window: float = 1.0) -> float:
    counts = [0] * int(duration / window)
    for t in times:
        counts[min(int(t / window), len(counts) - 1)] += 1
    return statistics.pvariance(counts) / statistics.mean(counts)


def test_poisson_mean_rate_and_exponential_gaps() -> None:
    s = a.poisson(200, 500.0, seed=1)
    assert abs(len(s) - 200 * 0.1 * 500) / (200 * 0.1 * 500) < 0.03
    gaps = [y.t - x.t for x, y in zip(s, s[1:])]
    cv = statistics.pstdev(gaps) / statistics.mean(gaps)
    assert 0.9 < cv < 1.1
    assert 0.8 < _dispersion([x.t for x in s], 500.0) < 1.25
    assert all(0 <= x.t < 500.0 for x in s)


def test_poisson_per_user_rate_and_order() -> None:
    s = a.poisson(20, 2000.0, seed=5)
    for u in range(20):
        mine = [x for x in s if x.user == u]
        assert [x.k for x in mine] == list(range(len(mine)))
        assert abs(len(mine) / 2000.0 - 0.1) < 0.035


def test_same_seed_same_schedule_and_levels_share_users() -> None:
    assert a.poisson(10, 60, 3) == a.poisson(10, 60, 3)
    assert a.poisson(10, 60, 3) != a.poisson(10, 60, 4)
    small = a.poisson(10, 60, 3)
    big = [x for x in a.poisson(50, 60, 3) if x.user < 10]
    assert small == big


def test_bursty_same_mean_more_dispersion() -> None:
    s = a.bursty(200, 1000.0, seed=2, burst_size=5.0, burst_spread_s=1.0)
    expected = 200 * 0.1 * 1000
    assert abs(len(s) - expected) / expected < 0.08
    assert _dispersion([x.t for x in s], 1000.0) > 2.5
    assert [x.t for x in s] == sorted(x.t for x in s)
    per_user = {}
    for x in s:
        assert x.k == per_user.get(x.user, 0)
        per_user[x.user] = x.k + 1
    assert a.schedule(200, 50, 2, is_bursty=True) == a.bursty(200, 50, 2)


def test_fixed_rate() -> None:
    ts = a.fixed_rate(4.0, 500.0, seed=1)
    assert abs(len(ts) - 2000) / 2000 < 0.05 and ts == sorted(ts)

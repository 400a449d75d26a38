"""Soak-mode trend arithmetic: slope per minute and the flat verdict."""
from __future__ import annotations

import pytest

from benchmarks.load.soak import _virtual_users, slope_per_min, trend


def test_slope_per_minute() -> None:
    assert slope_per_min([(0, 10.0), (60, 12.0), (120, 14.0)]) == pytest.approx(2.0)
    assert slope_per_min([(0, 5.0)]) is None
    assert slope_per_min([(0, 5.0), (30, None), (60, 5.0)]) == pytest.approx(0.0)


def test_trend_flat_and_growing() -> None:
    flat = trend([(t, 500.0 + (t % 20) * 0.01) for t in range(0, 600, 5)], 5.0, 0.02)
    assert flat["flat"] and flat["first"] == 500.0 and flat["samples"] == 120
    leak = trend([(t, 500.0 + t * 0.1) for t in range(0, 600, 5)], 5.0, 0.02)
    assert not leak["flat"] and leak["slope_per_min"] == pytest.approx(6.0)
    assert leak["max"] == leak["last"]
    # growth only while caches fill (first half), flat after: flat
    warm = trend([(t, 500.0 + min(t, 200) * 0.2) for t in range(0, 600, 5)], 5.0, 0.02)
    assert warm["flat"] and warm["slope_per_min_second_half"] == pytest.approx(0.0)


def test_virtual_users_continue_through_the_rows() -> None:
    a = _virtual_users([0.1, 0.2, 0.3], users=2, offset=3)
    assert [(x.user, x.k) for x in a] == [(1, 1), (0, 2), (1, 2)]

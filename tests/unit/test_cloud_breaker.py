"""Circuit breaker: closed -> open after N failures -> half-open probes -> closed/open again."""
from __future__ import annotations

import pytest

from edge_runtime.clock import FakeClock
from edge_runtime.cloud_link.breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker
from edge_runtime.errors import ConfigError


def make(clock: FakeClock, **kw) -> CircuitBreaker:
    return CircuitBreaker("tcp://gw", failure_threshold=3, reset_timeout_s=2.0,
                          max_reset_timeout_s=5.0, clock=clock, **kw)


def test_opens_after_n_consecutive_failures_and_refuses():
    clock = FakeClock()
    b = make(clock)
    for _ in range(2):
        assert b.allow()
        b.failure()
    assert b.state == CLOSED
    b.failure()
    assert b.state == OPEN and not b.allow()
    assert b.retry_in_s() == pytest.approx(2.0)
    assert b.opened_count == 1


def test_a_success_resets_the_failure_count():
    b = make(FakeClock())
    b.failure(), b.failure(), b.success(), b.failure(), b.failure()
    assert b.state == CLOSED


def test_half_open_lets_one_probe_through_and_success_closes():
    clock = FakeClock()
    b = make(clock)
    for _ in range(3):
        b.failure()
    clock.advance(2.0)
    assert b.state == HALF_OPEN
    assert b.allow()
    assert not b.allow()            # one probe at a time
    b.success()
    assert b.state == CLOSED and b.allow()


def test_failed_probe_reopens_with_a_doubled_capped_wait():
    clock = FakeClock()
    b = make(clock)
    for _ in range(3):
        b.failure()
    waits = []
    for _ in range(3):
        clock.advance(b.retry_in_s())
        assert b.allow()
        b.failure()
        assert b.state == OPEN
        waits.append(b.retry_in_s())
    assert waits == [4.0, 5.0, 5.0]
    clock.advance(5.0)
    assert b.allow()
    b.success()
    for _ in range(3):
        b.failure()
    assert b.retry_in_s() == pytest.approx(2.0)   # the wait starts over once closed


def test_released_probe_frees_the_slot():
    clock = FakeClock()
    b = make(clock)
    for _ in range(3):
        b.failure()
    clock.advance(2.0)
    assert b.allow() and not b.allow()
    b.release()
    assert b.allow()


def test_bad_settings_are_config_errors():
    with pytest.raises(ConfigError, match="failure_threshold"):
        CircuitBreaker(failure_threshold=0)

"""A request's latency budget, resolved in one place.

Precedence, first that is set: the request's own ``budget_ms`` (``POST /v1/ask``
``budget_ms``, ``ask --budget-ms``, a voice session's), the intent's ``budget_ms`` in the
intent file (``IntentSpec.budget_ms``), ``scheduler.intent_budgets_ms[intent]``, then
``scheduler.budget_ms``. The pipeline resolves it once the intent is known and hands the
result to the scheduler; :meth:`Scheduler.budget_s` uses the same function for callers
that plan directly.
"""
from __future__ import annotations

import math
from typing import Any

from ..config import SchedulerConfig
from ..errors import BadInputError


def resolve_budget_ms(cfg: SchedulerConfig, intent: str, *, spec_ms: float | None = None,
                      request_ms: float | None = None) -> float:
    """The budget in milliseconds for a request of ``intent`` (see the module docstring)."""
    if request_ms is not None:
        return float(request_ms)
    if spec_ms is not None:
        return float(spec_ms)
    return float(cfg.intent_budgets_ms.get(intent, cfg.budget_ms))


def check_budget_ms(value: Any) -> float | None:
    """A request's own budget as given: None, or a positive finite number of milliseconds
    (``BadInputError`` otherwise)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value <= 0:
        got = repr(value) if isinstance(value, (int, float)) else type(value).__name__
        raise BadInputError(f"budget_ms must be a positive number of milliseconds, got {got}",
                            hint="send e.g. 150, or leave it out for the configured budget")
    return float(value)

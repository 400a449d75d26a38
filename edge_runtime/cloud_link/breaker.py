"""The per-gateway circuit breaker: the shared one, :mod:`edge_runtime.breaker`."""
from ..breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker

__all__ = ["CLOSED", "HALF_OPEN", "OPEN", "CircuitBreaker"]

"""Cloud link: the device side of the ZeroMQ connection to edge-cloud.

``ZmqCloudClient`` speaks to one gateway; ``FailoverCloudClient`` spreads requests over
several (``cloud.endpoints``) with a circuit breaker each and retries before the first
piece; ``hedged_answer`` races the local model against a slow cloud.
"""
from __future__ import annotations

from .base import CloudClient
from .breaker import CircuitBreaker
from .failover import FailoverCloudClient
from .hedge import HedgeOutcome, hedged_answer
from .keys import endpoint_is_loopback, generate_keypair, load_keypair, load_public_key
from .zmq_client import ZmqCloudClient

__all__ = ["CircuitBreaker", "CloudClient", "FailoverCloudClient", "HedgeOutcome",
           "ZmqCloudClient", "endpoint_is_loopback", "generate_keypair", "hedged_answer",
           "load_keypair", "load_public_key"]

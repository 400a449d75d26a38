"""Cloud link: the device side of the ZeroMQ connection to edge-cloud (see ``zmq_client``)."""
from __future__ import annotations

from .base import CloudClient
from .keys import endpoint_is_loopback, generate_keypair, load_keypair, load_public_key
from .zmq_client import ZmqCloudClient

__all__ = ["CloudClient", "ZmqCloudClient", "endpoint_is_loopback", "generate_keypair",
           "load_keypair", "load_public_key"]

"""CURVE key files and the loopback check that decides whether CURVE is required."""
from __future__ import annotations

import stat

import pytest
import zmq

from edge_runtime.cloud_link.keys import (endpoint_is_loopback, generate_keypair, load_keypair,
                                          load_public_key)
from edge_runtime.errors import ConfigError


def test_generated_keypair_loads_back_and_the_secret_is_private(tmp_path):
    public_file, secret_file = generate_keypair(tmp_path / "keys", "device")
    public, secret = load_keypair(secret_file)
    assert len(public) == 40 and len(secret) == 40
    assert zmq.curve_public(secret) == public
    assert load_public_key(str(public_file)) == public
    assert load_public_key(public.decode()) == public
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600


def test_existing_secret_is_never_overwritten(tmp_path):
    generate_keypair(tmp_path, "device")
    with pytest.raises(ConfigError, match="already exists"):
        generate_keypair(tmp_path, "device")


def test_public_key_file_is_not_a_keypair(tmp_path):
    public_file, _ = generate_keypair(tmp_path, "device")
    with pytest.raises(ConfigError, match="no secret key") as err:
        load_keypair(public_file)
    assert "key_secret" in err.value.hint


@pytest.mark.parametrize("bad", ["/nonexistent/file.key", "too-short"])
def test_unreadable_keys_are_config_errors(bad):
    with pytest.raises(ConfigError):
        load_keypair(bad)
    with pytest.raises(ConfigError):
        load_public_key(bad)


@pytest.mark.parametrize("endpoint, loopback", [
    ("tcp://127.0.0.1:5555", True), ("tcp://127.3.4.5:1", True), ("tcp://localhost:5555", True),
    ("tcp://[::1]:5555", True), ("ipc:///tmp/edge.sock", True), ("inproc://x", True),
    ("tcp://0.0.0.0:5555", False), ("tcp://*:5555", False), ("tcp://10.0.0.2:5555", False),
    ("tcp://eth0:5555", False), ("tcp://cloud.example.com:5555", False),
    ("tcp://[2001:db8::1]:5555", False), ("udp://127.0.0.1:5", False), ("garbage", False),
])
def test_endpoint_is_loopback(endpoint, loopback):
    assert endpoint_is_loopback(endpoint) is loopback

"""CURVE key files and endpoint checks shared by the device client and the gateway.

Key files are ZeroMQ certificates as written by ``zmq.auth.create_certificates``:
``NAME.key`` (public key only, safe to copy to the peer) and ``NAME.key_secret``
(public + secret key, keep private, mode 0600).
"""
from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path

import zmq
import zmq.auth

from ..errors import ConfigError

_Z85_KEY = re.compile(r"^[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}$")


def generate_keypair(directory: str | os.PathLike, name: str = "client") -> tuple[Path, Path]:
    """Write ``NAME.key`` and ``NAME.key_secret`` into ``directory`` (created if needed).

    Returns ``(public_file, secret_file)``; the secret file is made readable by its owner only.
    Refuses to overwrite an existing secret file.
    """
    if not zmq.has("curve"):
        raise ConfigError("this libzmq was built without CURVE support",
                          hint="install pyzmq from its wheels (they bundle libsodium)")
    d = Path(directory).expanduser()
    d.mkdir(parents=True, exist_ok=True)
    if (d / f"{name}.key_secret").exists():
        raise ConfigError(f"{d / (name + '.key_secret')} already exists",
                          hint="delete it first or choose another name/directory")
    public, secret = zmq.auth.create_certificates(str(d), name)
    os.chmod(secret, 0o600)
    return Path(public), Path(secret)


def load_keypair(file: str | os.PathLike) -> tuple[bytes, bytes]:
    """Read ``(public_key, secret_key)`` (Z85 bytes) from a ``.key_secret`` file."""
    path = Path(file).expanduser()
    try:
        public, secret = zmq.auth.load_certificate(str(path))
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot read CURVE key file {path}: {exc}",
            hint="create one with generate_keypair() / `edge-cloud keys DIR`") from None
    if not secret:
        raise ConfigError(f"CURVE key file {path} holds no secret key",
                          hint="pass the NAME.key_secret file, not NAME.key")
    return public, secret


def load_public_key(key_or_file: str) -> bytes:
    """A Z85 public key given literally (40 characters) or as a ``.key``/``.key_secret`` file."""
    text = key_or_file.strip()
    if _Z85_KEY.match(text) and not Path(text).exists():
        return text.encode("ascii")
    path = Path(text).expanduser()
    try:
        public, _ = zmq.auth.load_certificate(str(path))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{key_or_file!r} is neither a 40-character Z85 public key nor a "
                          f"readable key file: {exc}",
                          hint="copy the key from the peer's NAME.key file") from None
    return public


def endpoint_is_loopback(endpoint: str) -> bool:
    """True for ``ipc://``/``inproc://`` endpoints and ``tcp://`` on a loopback host."""
    scheme, _, rest = endpoint.partition("://")
    if scheme in ("ipc", "inproc"):
        return True
    if scheme != "tcp" or not rest:
        return False
    host = rest.rsplit(":", 1)[0] if ":" in rest else rest
    host = host.split(";")[-1]            # "tcp://src;dest:port" names the source first
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False                      # "*", interface names and DNS names are not loopback

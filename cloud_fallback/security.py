"""Gateway-side CURVE: server keys and a ZAP allow-list of client public keys."""
from __future__ import annotations

import logging
from pathlib import Path

import zmq
from zmq.auth.thread import ThreadAuthenticator

from edge_runtime.cloud_link.keys import endpoint_is_loopback, load_keypair, load_public_key

log = logging.getLogger(__name__)

__all__ = ["CurveServer", "endpoint_is_loopback"]


class _AllowList:
    def __init__(self, keys: frozenset[bytes]) -> None:
        self._keys = keys

    def callback(self, domain: str, key: bytes) -> bool:
        ok = key in self._keys
        if not ok:
            log.warning("refused a CURVE client with unknown public key %s", key.decode())
        return ok


class CurveServer:
    """Gateway CURVE settings.

    ``secret_key_file``: the gateway's ``.key_secret`` file; ``allowed_client_keys``: Z85
    public keys (or key files) of devices allowed in; empty = any client that speaks
    CURVE (encryption without client authentication, logged as a warning).
    """

    def __init__(self, secret_key_file: str | Path, allowed_client_keys: tuple[str, ...] = ()):
        self.public_key, self._secret_key = load_keypair(secret_key_file)
        self._allowed = frozenset(load_public_key(k) for k in allowed_client_keys)
        self._auth: ThreadAuthenticator | None = None

    def apply(self, ctx: zmq.Context, sock: zmq.Socket) -> None:
        """Start the ZAP authenticator on ``ctx`` and make ``sock`` a CURVE server (before bind)."""
        self._auth = ThreadAuthenticator(ctx, log=logging.getLogger(__name__ + ".zap"))
        self._auth.start()
        if self._allowed:
            self._auth.configure_curve_callback("*", credentials_provider=_AllowList(self._allowed))
        else:
            log.warning("CURVE without --allow-client-key: any client with the server key may connect")
            self._auth.configure_curve(domain="*", location=zmq.auth.CURVE_ALLOW_ANY)
        sock.curve_secretkey = self._secret_key
        sock.curve_publickey = self.public_key
        sock.curve_server = True

    def stop(self) -> None:
        if self._auth is not None:
            self._auth.stop()
            self._auth = None

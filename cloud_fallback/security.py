"""Gateway-side CURVE: server keys and a ZAP allow-list of client public keys."""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import zmq
from zmq.auth.thread import ThreadAuthenticator

from edge_runtime.cloud_link.keys import endpoint_is_loopback, load_keypair, load_public_key
from edge_runtime.errors import ConfigError

log = logging.getLogger(__name__)

__all__ = ["CurveServer", "add_allowed_key", "endpoint_is_loopback", "read_allow_list"]


def read_allow_list(path: str | os.PathLike) -> frozenset[bytes]:
    """Client public keys from an allow-list file: one Z85 key per line, optionally followed
    by a comment (``KEY  kitchen-device``); blank lines and ``#`` lines are ignored.
    Raises ``ConfigError`` naming the line of a malformed key."""
    keys = set()
    p = Path(path).expanduser()
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read the client allow-list {p}: {exc}",
                          hint="create it with `edge-cloud keys add KEY --allow-list FILE`"
                          ) from None
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        token = line.split()[0]
        if len(token) != 40:
            raise ConfigError(f"{p}:{n}: {token[:50]!r} is not a 40-character Z85 public key",
                              hint="fix or delete the line; add keys with `edge-cloud keys add`")
        keys.add(load_public_key(token))
    return frozenset(keys)


def add_allowed_key(path: str | os.PathLike, key_or_file: str,
                    comment: str = "") -> tuple[str, bool]:
    """Append a client key (Z85 text or a ``.key`` file) to the allow-list file, creating it.
    Returns ``(z85_key, added)``; ``added`` is False when the key was there already."""
    key = load_public_key(key_or_file)
    p = Path(path).expanduser()
    if p.exists() and key in read_allow_list(p):
        return key.decode(), False
    p.parent.mkdir(parents=True, exist_ok=True)
    comment = " ".join(comment.split())
    needs_newline = p.exists() and p.stat().st_size > 0 and not p.read_bytes().endswith(b"\n")
    with p.open("a", encoding="utf-8") as f:
        f.write(("\n" if needs_newline else "") + key.decode()
                + (f"  {comment}" if comment else "") + "\n")
    return key.decode(), True


class _AllowList:
    """ZAP credentials provider: fixed keys plus an allow-list file re-read when it changes,
    so `edge-cloud keys add` takes effect on a running gateway without a restart."""

    def __init__(self, keys: frozenset[bytes], file: Path | None = None) -> None:
        self._fixed = keys
        self._file = file
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._from_file: frozenset[bytes] = frozenset()
        if file is not None:
            self._reload()

    def _reload(self) -> None:
        assert self._file is not None
        try:
            st = self._file.stat()
        except OSError:
            st = None
        stamp = None if st is None else (st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return
        try:
            self._from_file = read_allow_list(self._file) if st is not None else frozenset()
            log.info("client allow-list %s: %d key(s)", self._file, len(self._from_file))
        except ConfigError as exc:        # keep the previous keys; say what is wrong
            if self._stamp is None:
                raise
            log.error("keeping the previous client allow-list: %s", exc.one_line())
        self._stamp = stamp

    def callback(self, domain: str, key: bytes) -> bool:
        with self._lock:
            if self._file is not None:
                self._reload()
            ok = key in self._fixed or key in self._from_file
        if not ok:
            log.warning("refused a CURVE client with unknown public key %s", key.decode())
        return ok


class CurveServer:
    """Gateway CURVE settings.

    ``secret_key_file``: the gateway's ``.key_secret`` file; ``allowed_client_keys``: Z85
    public keys (or key files) of devices allowed in; ``allow_list_file``: a file of such
    keys (see :func:`read_allow_list`), re-read when it changes. Neither = any client that
    speaks CURVE (encryption without client authentication, logged as a warning).
    """

    def __init__(self, secret_key_file: str | Path, allowed_client_keys: tuple[str, ...] = (),
                 allow_list_file: str | Path | None = None):
        self.public_key, self._secret_key = load_keypair(secret_key_file)
        self._allowed = frozenset(load_public_key(k) for k in allowed_client_keys)
        self._file = Path(allow_list_file).expanduser() if allow_list_file else None
        self._provider = (_AllowList(self._allowed, self._file)
                          if self._allowed or self._file is not None else None)
        self._auth: ThreadAuthenticator | None = None

    def apply(self, ctx: zmq.Context, sock: zmq.Socket) -> None:
        """Start the ZAP authenticator on ``ctx`` and make ``sock`` a CURVE server (before bind)."""
        self._auth = ThreadAuthenticator(ctx, log=logging.getLogger(__name__ + ".zap"))
        self._auth.start()
        if self._provider is not None:
            self._auth.configure_curve_callback("*", credentials_provider=self._provider)
        else:
            log.warning("CURVE without --allow-client-key(s-file): any client with the server "
                        "key may connect")
            self._auth.configure_curve(domain="*", location=zmq.auth.CURVE_ALLOW_ANY)
        sock.curve_secretkey = self._secret_key
        sock.curve_publickey = self.public_key
        sock.curve_server = True

    def stop(self) -> None:
        if self._auth is not None:
            self._auth.stop()
            self._auth = None

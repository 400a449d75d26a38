"""``edge-cloud``: the cloud side of the edge ⇄ cloud link.

    edge-cloud serve --bind tcp://127.0.0.1:5555 --backend embedded --model-dir DIR --threads 2
    edge-cloud serve --backend embedded --max-batch 8      # 8 requests decode together
    edge-cloud serve --backend openai --openai-url http://127.0.0.1:8000/v1 --openai-model NAME \
        --openai-parallel 8                                # 8 concurrent HTTP requests
    edge-cloud keys generate DIR [--name server]   # CURVE key pair (`keys DIR` works too)
    edge-cloud keys add KEY_OR_FILE --allow-list FILE [--comment NAME]   # let a device in

``serve`` prints ``edge-cloud ready on tcp://HOST:PORT`` on stdout once it accepts requests
and stops cleanly on SIGTERM/SIGINT. Errors print one line and exit non-zero (2: bad input or
configuration).

``--workers 0`` (the default) runs as many workers as the backend's capacity (embedded:
``--max-batch``; openai: ``--openai-parallel``; echo: 8); ``--queue-size 0`` (the
default) lets ``QUEUE_PER_WORKER`` x workers requests wait.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from collections.abc import Sequence

from edge_runtime.config import LlmConfig, PathsConfig
from edge_runtime.errors import EdgeError, run_command

from .backends.base import Backend

log = logging.getLogger("cloud_fallback")

QUEUE_PER_WORKER = 4       # default --queue-size: this many waiting requests per worker


def _default_model_dir() -> Path:
    return PathsConfig().models_dir / LlmConfig.model / "onnx"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="edge-cloud", description="edge-runtime cloud gateway")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve LLM requests from devices over ZeroMQ")
    s.add_argument("--bind", default="tcp://127.0.0.1:5555",
                   help="ZeroMQ endpoint to bind (port 0 = any free port)")
    s.add_argument("--backend", choices=("embedded", "openai", "echo"), default="embedded",
                   help="embedded: the ONNX engine; openai: an OpenAI-compatible server; "
                        "echo: no model (link tests)")
    s.add_argument("--model-dir", type=Path, default=None,
                   help=f"built ONNX model directory (default {_default_model_dir()})")
    s.add_argument("--model-name", default="", help="model name requests must use (default: "
                   "the engine's own name)")
    s.add_argument("--threads", type=int, default=2, help="CPU threads of the embedded engine")
    s.add_argument("--providers", default="cuda,cpu",
                   help="onnxruntime provider order for the embedded engine")
    s.add_argument("--max-batch", type=int, default=8,
                   help="embedded: concurrent requests decoded together in one batch (1..16; "
                        "1 = one at a time)")
    s.add_argument("--workers", type=int, default=0,
                   help="concurrent generations (0 = the backend's capacity: --max-batch, "
                        "--openai-parallel, or 8 for echo)")
    s.add_argument("--queue-size", type=int, default=0,
                   help="requests waiting for a worker before new ones get 'overloaded' "
                        f"(0 = {QUEUE_PER_WORKER} x workers)")
    s.add_argument("--max-new-tokens", type=int, default=512,
                   help="cap on the tokens one request may ask for")
    s.add_argument("--openai-url", default="http://127.0.0.1:8000/v1")
    s.add_argument("--openai-model", default="")
    s.add_argument("--openai-api-key-env", default="OPENAI_API_KEY",
                   help="environment variable holding the API key (never a flag)")
    s.add_argument("--openai-timeout-s", type=float, default=10.0,
                   help="seconds without a byte from the server before a request fails")
    s.add_argument("--openai-parallel", type=int, default=8,
                   help="openai: requests sent to the server at once (its parallel slots)")
    s.add_argument("--echo-delay-ms", type=float, default=0.0, help="echo: delay per piece")
    s.add_argument("--echo-repeat", type=int, default=1, help="echo: repeat the message N times")
    s.add_argument("--curve-secret-key-file", default="",
                   help="gateway CURVE key (NAME.key_secret from `edge-cloud keys`)")
    s.add_argument("--allow-client-key", action="append", default=[], metavar="KEY",
                   help="Z85 public key (or NAME.key file) of a device allowed in; repeatable")
    s.add_argument("--allow-client-keys-file", default="", metavar="FILE",
                   help="allow-list file of device keys (`edge-cloud keys add`); re-read "
                        "when it changes, so added devices get in without a restart")
    s.add_argument("--allow-insecure", action="store_true",
                   help="allow a non-loopback --bind without CURVE (trusted networks only)")
    s.add_argument("--no-warm-up", action="store_true",
                   help="serve at once, without measuring the backend on a short prompt first")
    s.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    k = sub.add_parser("keys", help="CURVE keys: generate a pair, add a device to an allow-list")
    ks = k.add_subparsers(dest="keys_command", required=True)
    g = ks.add_parser("generate", help="write NAME.key and NAME.key_secret into DIRECTORY")
    g.add_argument("directory", type=Path)
    g.add_argument("--name", default="server")
    a = ks.add_parser("add", help="append a device's public key to an allow-list file")
    a.add_argument("key", help="the device's Z85 public key or its NAME.key file")
    a.add_argument("--allow-list", required=True, type=Path, metavar="FILE",
                   help="the file `edge-cloud serve --allow-client-keys-file` reads")
    a.add_argument("--comment", default="", help="a label kept next to the key")
    return p


def _normalize(argv: Sequence[str]) -> list[str]:
    """Accept the v1 form ``keys DIR [--name N]`` as ``keys generate DIR [--name N]``."""
    argv = list(argv)
    if (len(argv) >= 2 and argv[0] == "keys"
            and argv[1] not in ("generate", "add", "-h", "--help")):
        argv.insert(1, "generate")
    return argv


def make_backend(args: argparse.Namespace) -> Backend:
    """Build the backend the flags choose (imports heavy modules only for the chosen one)."""
    if args.backend == "echo":
        from .backends.echo import EchoBackend
        return EchoBackend(delay_s=args.echo_delay_ms / 1000.0, repeat=args.echo_repeat,
                           model_name=args.model_name or "echo")
    if args.backend == "openai":
        from .backends.openai_http import OpenAIBackend
        return OpenAIBackend.from_env(args.openai_url, args.openai_model,
                                      api_key_env=args.openai_api_key_env,
                                      timeout_s=args.openai_timeout_s,
                                      parallel=args.openai_parallel)
    from .backends.embedded import EmbeddedBackend
    providers = tuple(p.strip() for p in args.providers.split(",") if p.strip())
    return EmbeddedBackend(args.model_dir or _default_model_dir(), threads=args.threads,
                           model_name=args.model_name, providers=providers,
                           max_batch=args.max_batch)


def gateway_sizes(args: argparse.Namespace, backend: Backend) -> tuple[int, int]:
    """(workers, queue_size): the flags, or where 0 (the default) the backend's ``capacity``
    and ``QUEUE_PER_WORKER`` x workers. Negative values are refused."""
    if args.workers < 0 or args.queue_size < 0:
        raise EdgeError("--workers and --queue-size must be >= 0 (0 = automatic)",
                        code="bad_config", stage="config",
                        hint="omit them to size the gateway from the backend")
    workers = args.workers or max(1, int(getattr(backend, "capacity", 1) or 1))
    return workers, args.queue_size or QUEUE_PER_WORKER * workers


def _serve(args: argparse.Namespace) -> int:
    from .gateway import Gateway, serve
    from .security import CurveServer

    curve = None
    if args.curve_secret_key_file:
        curve = CurveServer(args.curve_secret_key_file, tuple(args.allow_client_key),
                            args.allow_client_keys_file or None)
        log.info("CURVE on: server public key %s", curve.public_key.decode())
    elif args.allow_client_key or args.allow_client_keys_file:
        raise EdgeError("--allow-client-key/--allow-client-keys-file need "
                        "--curve-secret-key-file", code="bad_config",
                        stage="config", hint="create keys with `edge-cloud keys DIR`")
    backend = make_backend(args)
    try:
        workers, queue_size = gateway_sizes(args, backend)
        gateway = Gateway(backend, args.bind, workers=workers, queue_size=queue_size,
                          max_new_tokens=args.max_new_tokens, curve=curve,
                          allow_insecure=args.allow_insecure)
        if not args.no_warm_up:
            gateway.warm_up()
        serve(gateway, ready=_ready)
    finally:
        backend.close()
    return 0


def _keys(args: argparse.Namespace) -> int:
    from edge_runtime.cloud_link.keys import generate_keypair, load_public_key

    if args.keys_command == "add":
        from .security import add_allowed_key
        key, added = add_allowed_key(args.allow_list, args.key, args.comment)
        print(f"{'added' if added else 'already allowed'}: {key} in {args.allow_list}")
        return 0
    public, secret = generate_keypair(args.directory, args.name)
    key = load_public_key(str(public)).decode()
    print(f"public key file: {public}\nsecret key file: {secret}\npublic key: {key}")
    return 0


def _ready(endpoint: str) -> None:
    """Say so on stdout and to systemd (Type=notify in jetson/edge-cloud.service)."""
    from edge_runtime import systemd
    print(f"edge-cloud ready on {endpoint}", flush=True)
    systemd.ready(f"serving on {endpoint}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(_normalize(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(level=getattr(args, "log_level", "INFO"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run_command({"serve": _serve, "keys": _keys}[args.command], args, "edge-cloud")


if __name__ == "__main__":
    sys.exit(main())

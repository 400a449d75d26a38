"""``edge-runtime keys generate``: the device's CURVE key pair, and what to do with it.

    edge-runtime keys generate [--dir DIR] [--name NAME] [--json]

Writes ``NAME.key`` (public) and ``NAME.key_secret`` (mode 0600) into ``DIR`` (default
``$XDG_CONFIG_HOME/edge-runtime/keys``), then prints the config key to set on the device and
the ``edge-cloud keys add`` command that lets this device into a gateway.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from collections.abc import Sequence

from ..errors import EdgeError
from .keys import generate_keypair, load_public_key


def default_keys_dir() -> Path:
    """``$XDG_CONFIG_HOME/edge-runtime/keys`` (``~/.config/edge-runtime/keys``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "edge-runtime" / "keys"


def add_keys_generate_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The flags of ``keys generate`` (for a parent CLI that builds its own sub-parser)."""
    p.add_argument("--dir", type=Path, default=None,
                   help=f"where to write the key files (default {default_keys_dir()})")
    p.add_argument("--name", default="device", help="file name stem (default: device)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def keys_generate(args: argparse.Namespace) -> int:
    """Run ``keys generate`` with parsed ``args`` (``dir``, ``name``, ``json``); returns 0.
    Raises ``ConfigError`` (e.g. the secret file exists already)."""
    public, secret = generate_keypair(args.dir or default_keys_dir(), args.name)
    key = load_public_key(str(public)).decode()
    if args.json:
        print(json.dumps({"public_key": key, "public_key_file": str(public),
                          "secret_key_file": str(secret)}))
        return 0
    print(f"public key:      {key}\npublic key file: {public}\nsecret key file: {secret}\n\n"
          f"on this device set:  cloud.client_secret_key_file = \"{secret}\"\n"
          f"                     cloud.server_public_key = \"<the gateway's public key>\"\n"
          f"on each gateway run: edge-cloud keys add {shlex.quote(key)} --allow-list FILE "
          f"--comment {shlex.quote(args.name)}")
    return 0


def keys_generate_main(argv: Sequence[str] | None = None) -> int:
    """``edge-runtime keys generate`` as a function: parses ``argv`` (the arguments after
    ``keys generate``), prints, returns the exit status (2 with one line on error)."""
    parser = add_keys_generate_arguments(argparse.ArgumentParser(
        prog="edge-runtime keys generate", description="write this device's CURVE key pair"))
    args = parser.parse_args(argv)
    try:
        return keys_generate(args)
    except EdgeError as exc:
        print(f"edge-runtime: {exc.one_line()}", file=sys.stderr)
        return 2

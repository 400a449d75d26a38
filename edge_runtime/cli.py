"""`edge-runtime`: serve | ask | chat | models | nlu | bench | config | doctor.

Every command takes ``--config FILE`` and ``--set section.key=value`` (repeatable); the
effective config is defaults < TOML file < EDGE_RUNTIME_* env < --set < named flags.
Errors print one line to stderr and exit non-zero (2 = bad input or config).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from collections.abc import Callable

from .config import Config, config_to_toml, load_config, parse_overrides
from .errors import BadInputError, ConfigError, EdgeError, run_command

log = logging.getLogger("edge_runtime")


def _common(top: bool = False) -> argparse.ArgumentParser:
    """The options every command takes. Sub-commands leave them unset unless given, so
    `edge-runtime --set a.b=1 nlu parse ...` keeps the top-level value (argparse would
    otherwise reset it to the sub-command's default)."""
    p = argparse.ArgumentParser(add_help=False)
    unset: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    overrides_default: dict[str, Any] = {"default": []} if top else unset
    p.add_argument("--config", metavar="FILE", help="TOML config file", **unset)
    p.add_argument("--set", dest="overrides", action="append", metavar="SECTION.KEY=VALUE",
                   help="override one config key (repeatable)", **overrides_default)
    p.add_argument("--log-level", help="DEBUG, INFO, WARNING or ERROR", **unset)
    return p


def _load(args: argparse.Namespace, extra: dict[str, dict[str, Any]] | None = None, *,
          one_shot: bool = False) -> Config:
    """The config from file, env and flags; logging set up from it. ``one_shot`` commands
    print their result, so their INFO lines are kept off unless --log-level asks."""
    overrides = parse_overrides(args.overrides)
    for sec, values in (extra or {}).items():
        overrides.setdefault(sec, {}).update({k: v for k, v in values.items() if v is not None})
    if args.log_level:
        overrides.setdefault("logging", {})["level"] = args.log_level
    cfg = load_config(args.config, overrides=overrides)
    level = cfg.logging.level.upper()
    if one_shot and not args.log_level and level in ("DEBUG", "INFO"):
        level = "WARNING"
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return cfg


# -- commands ------------------------------------------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    from .daemon import serve
    cfg = _load(args, {"server": {"host": args.host, "port": args.port},
                       "wyoming": {"uri": args.wyoming}})
    asyncio.run(serve(cfg))
    return 0


def _print_result(obj: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(obj, ensure_ascii=False))
        return
    t = obj["timings_ms"]
    print(obj["answer"])
    print(f"  [{obj['route']}/{obj['device']}] {obj['reason']} — first token "
          f"{t['first_token']} ms, total {t['total']} ms", file=sys.stderr)


def cmd_ask(args: argparse.Namespace) -> int:
    if (args.text is None) == (args.wav is None):
        raise BadInputError("give either TEXT or --wav FILE",
                            hint="edge-runtime ask 'what time is it'")
    cfg = _load(args, one_shot=True)
    if args.stream and not args.url:
        raise BadInputError("--stream reads a running daemon's stream: add --url URL")
    if args.url:
        if args.wav or args.speak:
            raise BadInputError("--wav/--speak run in process; drop --url (or POST the WAV "
                                "to /v1/audio)")
        if args.stream if args.stream is not None else not args.json:
            from .api.client import print_stream
            print_stream(args.url, args.text, cfg.server.token, args.budget_ms,
                         as_json=args.json)
            return 0
        obj = _ask_remote(args.url, args.text, cfg.server.token, args.budget_ms)
    else:
        obj = asyncio.run(_ask_local(cfg, args))
    _print_result(obj, args.json)
    return 0


async def _ask_local(cfg: Config, args: argparse.Namespace) -> dict:
    from .runtime import Runtime
    rt = Runtime.build(cfg)
    try:
        await rt.start()
        if args.wav or args.speak:
            from .voice.cli import ask_text_spoken, ask_wav
            if args.wav:
                return await ask_wav(rt, args.wav, args.speak)
            return await ask_text_spoken(rt, args.text, args.speak)
        return (await rt.pipeline.ask(args.text, budget_ms=args.budget_ms)).to_dict()
    finally:
        await rt.close()


def _ask_remote(url: str, text: str, token: str, budget_ms: float | None) -> dict:
    body: dict[str, Any] = {"text": text}
    if budget_ms is not None:
        body["budget_ms"] = budget_ms
    req = urllib.request.Request(url.rstrip("/") + "/v1/ask", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as exc:
        try:
            err = json.loads(exc.read())["error"]
        except Exception:
            raise EdgeError(f"daemon answered HTTP {exc.code}", stage="api") from None
        raise EdgeError(err["message"], hint=err.get("hint"), code=err["code"],
                        stage=err["stage"]) from None
    except urllib.error.URLError as exc:
        raise EdgeError(f"cannot reach the daemon at {url}: {exc.reason}", stage="api",
                        hint="start it with `edge-runtime serve`") from None


def cmd_chat(args: argparse.Namespace) -> int:
    cfg = _load(args)
    return asyncio.run(_chat(cfg, args.text))


async def _chat(cfg: Config, text_mode: bool) -> int:
    from .voice.cli import chat        # attaches to a running daemon, else loads the models
    return await chat(cfg, text_mode)


def cmd_bench(args: argparse.Namespace) -> int:
    """The harness lives in benchmarks/ of a checkout, not in the wheel: run it when present."""
    import importlib
    try:
        harness = importlib.import_module("benchmarks")
    except ModuleNotFoundError as exc:
        if exc.name != "benchmarks":
            raise
        harness = None
    run = getattr(harness, "run", None)
    if run is None or not hasattr(harness, "BENCHES"):     # absent, or another "benchmarks"
        raise ConfigError("the benchmark harness is not installed (it is benchmarks/ of the "
                          "source checkout; the wheel holds the runtime alone)",
                          hint=f"run it from the repository root: python -m benchmarks "
                               f"{args.what} ...")
    try:
        return int(run(args.what, args.rest))
    except ModuleNotFoundError as exc:
        raise ConfigError(f"benchmark {args.what} is not available ({exc.name} missing)",
                          hint="install the dev extra: pip install -e '.[dev]'") from None


def cmd_models(args: argparse.Namespace) -> int:
    from .models.store import ModelStore
    cfg = _load(args)
    store = ModelStore(cfg)
    names = [args.name] if getattr(args, "name", None) else \
        [n for n, e in store.manifest.items() if e.default]
    if args.action == "add":
        from .models.user import add_model
        added = add_model(store, args.file, name=args.name, force=args.force)
        if args.json:
            print(json.dumps(added, indent=2))
        else:
            print(f"{added['name']}: {added['architecture']}, {added['layers']} layers, "
                  f"sha256 {added['sha256']}; built {added['built']}\n"
                  f"use it with --set llm.model={added['name']}")
    elif args.action == "pull":
        for name in names:
            for path in store.pull(name, force=args.force):
                print(f"{name}: {path} (sha256 verified)")
    elif args.action == "build":
        for name in names:
            if store.entry(name).build:
                out = store.build(name, force=args.force,
                                  precision=getattr(args, "precision", "fp32"))
                print(f"{name}: built {out}")
        if cfg.nlu.home and not getattr(args, "name", None):
            from .nlu.home.serve import with_home_dir
            from .nlu.train.home.build import build_default
            nlu = with_home_dir(cfg.nlu, cfg.paths.resolved_home())
            print(f"home understanding: built {build_default(nlu, force=args.force)}")
    elif args.action == "list":
        rows = [store.status(n) for n in (names if args.name else store.manifest)]
        if args.json:
            print(json.dumps(rows, indent=2))
        for r in rows if not args.json else []:
            files = ", ".join(f"{k}: {v}" for k, v in r["files"].items())
            built = {None: "no build step", True: "built", False: "not built"}[r["built"]]
            print(f"{r['name']:<24} {r['role']:<5} {files}; {built}\n"
                  f"{'':<24} source {r['source']}; licence {r['licence']}")
        if not args.json and any("verified" not in r["files"].values() or r["built"] is False
                                 for r in rows):
            print("run `edge-runtime models pull && edge-runtime models build` to fetch and "
                  "build what is missing", file=sys.stderr)
    elif args.action == "check":
        from .models.gguf2onnx import check_fidelity
        text = _check_text(args.text) if getattr(args, "text", None) else None
        from .runtime import step_ops_library
        for name in names:
            report = check_fidelity(store.require_source(name),
                                    store.built_dir(name, getattr(args, "precision", "fp32")),
                                    text, provider=args.provider,
                                    step_ops=step_ops_library(cfg))
            print(json.dumps({"model": name, **report}))
    return 0


def _check_text(path: str) -> str:
    """The text of ``models check --text FILE`` (a typed error for a missing, unreadable or
    empty file)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the check text {path}: {exc}",
                          hint="pass a UTF-8 text file") from None
    if len(text.split()) < 2:
        raise ConfigError(f"the check text {path} is empty",
                          hint="pass a file with a few sentences of text")
    return text


def cmd_nlu(args: argparse.Namespace) -> int:
    from .nlu import Understander
    cfg = _load(args)
    intent = Understander.from_config(cfg.nlu).parse(args.text)
    print(json.dumps(intent.to_dict(), ensure_ascii=False))
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    print(config_to_toml(_load(args)), end="")
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    from .cloud_link.keys_cli import keys_generate
    return int(keys_generate(args) or 0)


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import run_doctor
    return run_doctor(_load(args, one_shot=True), gpu=args.gpu)


# -- parser --------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    common = _common()
    p = argparse.ArgumentParser(prog="edge-runtime", description=__doc__.splitlines()[0],
                                parents=[_common(top=True)])
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", parents=[common], help="run the daemon (HTTP API)")
    s.add_argument("--host")
    s.add_argument("--port", type=int)
    s.add_argument("--wyoming", metavar="URI", help="also serve Wyoming (Home Assistant), "
                   "e.g. tcp://127.0.0.1:10700 (config wyoming.uri)")
    s.set_defaults(fn=cmd_serve)

    s = sub.add_parser("ask", parents=[common], help="answer one request and exit")
    s.add_argument("text", nargs="?")
    s.add_argument("--json", action="store_true", help="print the answer object as JSON")
    s.add_argument("--url", help="ask a running daemon instead, e.g. http://127.0.0.1:8080")
    s.add_argument("--budget-ms", type=float, help="latency budget for this request")
    s.add_argument("--stream", action=argparse.BooleanOptionalAction, default=None,
                   help="with --url: print the answer as it is generated (default without "
                        "--json; with --json, every stream event as one JSON line)")
    s.add_argument("--wav", help="a WAV file to transcribe and answer")
    s.add_argument("--speak", metavar="OUT.wav", help="write the spoken answer to this WAV")
    s.set_defaults(fn=cmd_ask)

    s = sub.add_parser("chat", parents=[common], help="a conversation loop (microphone)")
    s.add_argument("--text", action="store_true", help="type instead of speaking")
    s.set_defaults(fn=cmd_chat)

    s = sub.add_parser("bench", help="benchmarks (side by side, medians; --json)")
    s.add_argument("what", choices=("llm", "voice", "cloud", "load"))
    s.add_argument("rest", nargs=argparse.REMAINDER, help="the benchmark's own flags")
    s.set_defaults(fn=cmd_bench)

    s = sub.add_parser("models", parents=[common], help="pull, build, list or check models")
    msub = s.add_subparsers(dest="action", required=True)
    for action, text in (("pull", "download and verify"), ("build", "build ONNX models"),
                         ("list", "show what is present and verified"),
                         ("check", "fidelity of the built LLM vs its GGUF")):
        a = msub.add_parser(action, parents=[common], help=text)
        a.add_argument("name", nargs="?")
        if action in ("pull", "build"):
            a.add_argument("--force", action="store_true")
        if action in ("build", "check"):
            a.add_argument("--precision", choices=("fp32", "fp16"), default="fp32",
                           help="fp16: the variant for the CUDA / TensorRT providers, in "
                           "<model>/onnx-fp16 (chosen when one of them runs the LLM)")
        if action in ("list", "check"):
            a.add_argument("--json", action="store_true", help="one JSON object (check: "
                           "always; top1_agreement is its fidelity figure)")
        if action == "check":
            a.add_argument("--text", metavar="FILE", help="check on this UTF-8 text instead "
                           "of the built-in 161-token passage (e.g. text like your answers; "
                           "benchmarks/data/fidelity_passages.txt: two longer ones)")
            a.add_argument("--provider", choices=("cpu", "cuda", "tensorrt"), default="cpu",
                           help="run the built model on this onnxruntime provider (a GPU "
                           "one with the fp16 variant: --precision fp16)")
    a = msub.add_parser("add", parents=[common], help="add your own GGUF LLM and build it")
    a.add_argument("file", metavar="FILE.gguf")
    a.add_argument("--name", help="the model's name (default: from the file name)")
    a.add_argument("--force", action="store_true", help="replace a model added before")
    a.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_models)

    s = sub.add_parser("nlu", parents=[common], help="understanding: parse, train, eval")
    nsub = s.add_subparsers(dest="action", required=True)
    a = nsub.add_parser("parse", parents=[common], help="show how a sentence is understood")
    a.add_argument("text")
    a.set_defaults(fn=cmd_nlu)
    from .nlu.train.cli import add_nlu_subcommands
    add_nlu_subcommands(nsub, common)

    s = sub.add_parser("config", parents=[common], help="configuration")
    csub = s.add_subparsers(dest="action", required=True)
    csub.add_parser("show", parents=[common], help="print the effective config as TOML")
    s.set_defaults(fn=cmd_config)

    s = sub.add_parser("keys", help="CURVE keys for the cloud link")
    ksub = s.add_subparsers(dest="action", required=True)
    from .cloud_link.keys_cli import add_keys_generate_arguments
    add_keys_generate_arguments(ksub.add_parser("generate", help="write this device's key "
                                                "pair; print the public key for `edge-cloud "
                                                "keys add`"))
    s.set_defaults(fn=cmd_keys)

    s = sub.add_parser("doctor", parents=[common], help="check models, providers, services")
    s.add_argument("--gpu", action="store_true", help="the GPU check: build every engine, "
                   "compare with the CPU, time it, show the LLM's node placement (exit 77 "
                   "without a GPU)")
    s.set_defaults(fn=cmd_doctor)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    fn: Callable[[argparse.Namespace], int] = args.fn
    return run_command(fn, args)


if __name__ == "__main__":
    sys.exit(main())

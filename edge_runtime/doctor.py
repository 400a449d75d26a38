"""`edge-runtime doctor`: what works, what does not, and the command that fixes it."""
from __future__ import annotations

import socket
import sys
from collections.abc import Callable

from .config import Config
from .errors import EdgeError


def _check_python(cfg: Config) -> str:
    return sys.version.split()[0]


def _check_onnxruntime(cfg: Config) -> str:
    import onnxruntime as ort
    return f"{ort.__version__}, providers available: {', '.join(ort.get_available_providers())}"


def _check_models(cfg: Config) -> str:
    from .models.store import ModelStore
    store = ModelStore(cfg)
    status = store.status(cfg.llm.model, deep=False)
    if "verified" not in status["files"].values():
        raise EdgeError(f"{cfg.llm.model} not pulled or corrupt", hint="edge-runtime models pull")
    store.llm_dir()
    return f"{cfg.llm.model} pulled, verified and built"


def _check_step_ops(cfg: Config) -> str:
    """Whether the LLM's decode steps run edge-runtime's kernels (llm/step_ops): optional,
    so every state is an ok line that names the fix."""
    import json

    from .llm.step_ops import find_library, library_path, variant_of
    from .models.store import ModelStore
    if not cfg.llm.step_ops:
        return "off (llm.step_ops = false): decode steps on onnxruntime's kernels"
    lib = find_library(cfg.paths.resolved_home())
    if lib is None:
        return (f"not built ({library_path(cfg.paths.resolved_home()).name}): decode steps "
                "on onnxruntime's kernels; `edge-runtime models build` compiles them (needs cc)")
    model_dir = ModelStore(cfg).llm_dir()
    mcfg = json.loads((model_dir / "model_config.json").read_text())
    if variant_of(model_dir, mcfg, lib) is None:
        why = ("made for another build of the kernels: run `edge-runtime models build`"
               if mcfg.get("step_ops") else "no decode-step graph (a model without fold_steps)")
        return f"{lib.name} built; {cfg.llm.model}: {why}"
    ops = ", ".join(f"{n} {op}" for op, n in sorted(mcfg["step_ops"].get("ops", {}).items()))
    return f"{lib.name}; {cfg.llm.model} decodes on them ({ops})"


def _check_port(cfg: Config) -> str:
    with socket.socket() as s:
        try:
            s.bind((cfg.server.host, cfg.server.port))
        except OSError as exc:
            raise EdgeError(f"{cfg.server.host}:{cfg.server.port} is taken ({exc.strerror})",
                            hint="stop the other process or set server.port") from None
    return f"{cfg.server.host}:{cfg.server.port} free"


def _check_redis(cfg: Config) -> str:
    if not cfg.cache.redis_url:
        return "not configured (optional)"
    import redis
    redis.Redis.from_url(cfg.cache.redis_url, socket_timeout=1).ping()
    return f"{cfg.cache.redis_url} answers"


def _check_cloud(cfg: Config) -> str:
    if not cfg.cloud.enabled:
        return "disabled"
    import asyncio
    from .cloud_link import ZmqCloudClient

    async def probe() -> str:
        client = ZmqCloudClient(cfg.cloud)
        await client.start()
        try:
            for _ in range(20):
                if client.state != "unknown":
                    break
                await asyncio.sleep(0.1)
            return client.state
        finally:
            await client.close()
    state = asyncio.run(probe())
    if state != "up":
        raise EdgeError(f"cloud link {cfg.cloud.endpoint} is {state}",
                        hint="start it with `edge-cloud serve` (the device still answers "
                             "locally without it)")
    return f"{cfg.cloud.endpoint} up"


def _check_gpu(cfg: Config) -> str:
    from .gpu.probe import probe
    return probe(cfg)


def _check_gpu_daemon(cfg: Config) -> str:
    from .gpu.probe import daemon
    return daemon(cfg)


CHECKS: dict[str, Callable[[Config], str]] = {
    "python": _check_python, "onnxruntime": _check_onnxruntime, "models": _check_models,
    "step ops": _check_step_ops, "api port": _check_port, "redis": _check_redis,
    "cloud": _check_cloud, "gpu": _check_gpu, "gpu daemon": _check_gpu_daemon,
}


def run_doctor(cfg: Config, *, gpu: bool = False) -> int:
    """Every check, one line each; ``gpu``: then the full GPU check (``gpu.check``: builds
    every engine, compares with the CPU, prints one table)."""
    if gpu:
        from .gpu.check import run_gpu_check
        return run_gpu_check(cfg)
    failed = 0
    for name, check in CHECKS.items():
        try:
            print(f"ok    {name:<12} {check(cfg)}")
        except EdgeError as exc:
            failed += 1
            print(f"FAIL  {name:<12} {exc.one_line()}")
        except Exception as exc:  # a broken optional part must not hide the others
            failed += 1
            print(f"FAIL  {name:<12} {type(exc).__name__}: {exc}")
    return 1 if failed else 0

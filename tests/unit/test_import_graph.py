"""The import graph keeps serving apart from build-time code.

Serving = every module of ``edge_runtime`` outside ``edge_runtime/nlu/train/`` (training,
calibration, evaluation, datasets). Serving code never imports the training package, torch
or transformers, and nothing in ``edge_runtime`` imports the gateway (``cloud_fallback``)
or the harness (``benchmarks``).
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import edge_runtime

PACKAGE = Path(edge_runtime.__file__).resolve().parent
TRAIN = "edge_runtime.nlu.train"
HEAVY = ("torch", "transformers")
# The command front end registers the build-time `edge-runtime nlu train | eval ...`
# sub-commands (inside build_parser, not at import); nothing else may name the package.
MAY_IMPORT_TRAIN = {"edge_runtime.cli"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _serving_modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        if name != TRAIN and not name.startswith(TRAIN + "."):
            out[name] = path
    return out


def _imported(name: str, path: Path) -> set[str]:
    """Every module an import statement in ``path`` names (at any depth: function-level
    imports too), relative imports resolved."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _hits(names: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == r or n.startswith(r + ".") for r in roots))


def test_the_walk_sees_the_serving_modules_and_resolves_relative_imports() -> None:
    modules = _serving_modules()
    assert "edge_runtime.nlu.understander" in modules and "edge_runtime.daemon" in modules
    assert not _hits(set(modules), (TRAIN,))
    # the training CLI (outside the serving set) does import training code, relatively
    train_cli = PACKAGE / "nlu" / "train" / "cli.py"
    assert _hits(_imported(f"{TRAIN}.cli", train_cli), (TRAIN,))
    assert "edge_runtime.errors" in _imported(f"{TRAIN}.cli", train_cli)


def test_no_serving_module_names_training_code_torch_the_gateway_or_the_harness() -> None:
    problems = {}
    for name, path in _serving_modules().items():
        names = _imported(name, path)
        bad = _hits(names, (*HEAVY, "cloud_fallback", "benchmarks"))
        if name not in MAY_IMPORT_TRAIN:
            bad += _hits(names, (TRAIN,))
        if bad:
            problems[name] = bad
    assert problems == {}


def test_importing_every_serving_module_loads_no_training_code_nor_torch() -> None:
    """What the static walk cannot see (an import of a serving module that pulls training
    code through a chain): import them all in a fresh interpreter and look."""
    code = (
        "import importlib, json, sys\n"
        f"names = {sorted(_serving_modules())!r}\n"
        "for n in names:\n"
        "    importlib.import_module(n)\n"
        "import edge_runtime.cli\n"
        "before = sorted(sys.modules)\n"
        "edge_runtime.cli.build_parser()\n"
        "print(json.dumps({'serving': before, 'cli': sorted(sys.modules)}))\n")
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=240, env=env, cwd=PACKAGE.parent)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert "edge_runtime.nlu.understander" in loaded["serving"]
    assert _hits(set(loaded["serving"]), (TRAIN, *HEAVY)) == []
    # building the CLI parser registers the training sub-commands, still without torch
    assert _hits(set(loaded["cli"]), HEAVY) == []

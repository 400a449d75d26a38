"""The benchmark and drill harness (not part of the runtime wheel; run from a checkout).

    python -m benchmarks WHAT [flags]         WHAT: llm | voice | cloud | load | home_spoken
    python -m benchmarks.llm_bench [flags]    (each harness also runs on its own)

``edge-runtime bench WHAT`` runs the same when this package is importable (a checkout on
``sys.path``). ``cloud/``: the cloud-link drills and the gateway fleet the tests share;
``load/``: the open-loop load generator.
"""
from __future__ import annotations

import importlib
from collections.abc import Sequence

# WHAT -> the module whose ``main(argv) -> int`` runs it
BENCHES = {"llm": "benchmarks.llm_bench", "voice": "benchmarks.voice_bench",
           "cloud": "benchmarks.cloud_bench", "load": "benchmarks.load_bench",
           "home_spoken": "benchmarks.home_spoken"}


def run(what: str, argv: Sequence[str]) -> int:
    """Run benchmark ``what`` with its own flags; its exit code."""
    if what not in BENCHES:
        raise ValueError(f"unknown benchmark {what!r}; choose from {', '.join(BENCHES)}")
    return int(importlib.import_module(BENCHES[what]).main(list(argv)) or 0)

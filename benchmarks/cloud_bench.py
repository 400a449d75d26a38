"""Cloud link benchmark: ``python -m benchmarks.cloud_bench [--json] [--quick]``.

The same as ``edge-runtime bench cloud`` (see ``edge_runtime.cloud_link.bench``).
"""
from __future__ import annotations

import sys

from edge_runtime.cloud_link.bench import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``python -m benchmarks llm | voice | cloud | load [the benchmark's own flags]``."""
from __future__ import annotations

import sys

from benchmarks import BENCHES, run


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in BENCHES:
        print(f"usage: python -m benchmarks {{{','.join(BENCHES)}}} [flags]", file=sys.stderr)
        return 2
    return run(args[0], args[1:])


if __name__ == "__main__":
    sys.exit(main())

"""`python -m decoy_lab.sandbox [--host …] [--port …] …` — the same as `decoy-lab sandbox`."""
from __future__ import annotations

import argparse
import sys

from .server import add_cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m decoy_lab.sandbox")
    sub = parser.add_subparsers(dest="command")
    add_cli(sub)
    args = parser.parse_args(["sandbox", *(sys.argv[1:] if argv is None else argv)])
    return args.run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The `decoy-lab` command."""
from __future__ import annotations

import argparse
import sys

from . import __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="decoy-lab", description="Decoy memory workbench")
    p.add_argument("--version", action="version", version=f"decoy-lab {__version__}")
    p.add_subparsers(dest="command")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    return args.run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

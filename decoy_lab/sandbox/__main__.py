"""`python -m decoy_lab.sandbox [--host …] [--port …] …` — the same as `decoy-lab sandbox`."""

from __future__ import annotations

import argparse
import sys

from decoy_lab.sandbox.server import DESCRIPTION, add_arguments, run_args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m decoy_lab.sandbox", description=DESCRIPTION)
    add_arguments(parser)
    return run_args(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

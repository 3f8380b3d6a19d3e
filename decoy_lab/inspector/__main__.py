"""`python -m decoy_lab.inspector [--sandbox | --upstream URL | --replay FILE.har] …` — the same as
`decoy-lab proxy`."""

from __future__ import annotations

import argparse
import sys

from decoy_lab.inspector.command import DESCRIPTION, add_arguments, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m decoy_lab.inspector", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""`python -m decoy_lab.conformance [options] -- COMMAND [ARG…]` (see command.py)."""

from __future__ import annotations

import sys

from decoy_lab.conformance.command import main

if __name__ == "__main__":
    sys.exit(main())

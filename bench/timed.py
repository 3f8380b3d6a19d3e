"""`python -m bench.timed FILE -- COMMAND [ARG…]`: run COMMAND and add its wall time, in seconds, as
one line to FILE; exit with its code. The check bench wraps the agent in it, so the agent's own
time is measured from outside the workbench, by the same clock for every scenario."""

from __future__ import annotations

import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    out, sep, *command = argv
    if sep != "--" or not command:
        print("usage: python -m bench.timed FILE -- COMMAND [ARG…]", file=sys.stderr)
        return 2
    started = time.perf_counter()
    code = subprocess.call(command)
    with open(out, "a", encoding="utf-8") as f:
        f.write(f"{time.perf_counter() - started:.6f}\n")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

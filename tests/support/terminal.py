"""A program started as a user at a terminal starts it: with Ctrl-C (SIGINT) at its default.

A shell running the suite as a background job (no job control) starts it with SIGINT ignored, and
a program inherits that: a test that presses Ctrl-C would meet a program that cannot hear it,
which is not what a user at a terminal sees.
"""

from __future__ import annotations

import sys

_RESTORED = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"


def as_at_a_terminal(argv: list[str]) -> list[str]:
    """`argv` (its first item a path to an executable) run with SIGINT at its default."""
    return [sys.executable, "-c", _RESTORED, *argv]

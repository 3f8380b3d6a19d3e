"""Types for command-line options, shared by every command and the `%decoy` magics: a bad value
is argparse's one-line `error: argument --port: …`, never a traceback or a value taken anyway."""

from __future__ import annotations

import argparse


def port_number(text: str) -> int:
    """`--port`: a TCP port, 0-65535 (0: any free one)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a TCP port (0-65535)")
    return port


def seconds(text: str) -> float:
    """A time limit or an interval: a finite number of seconds above 0 (0 would spin or give up at once)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be more than 0 seconds")
    return value

"""Types for command-line options, shared by every command and the `%decoy` magics: a bad value
is argparse's one-line `error: argument --port: …`, never a traceback or a value taken anyway."""

from __future__ import annotations

import argparse


def port_problem(port: int) -> str | None:
    """Why `port` is no TCP port to listen on, or None (0: any free one)."""
    return None if 0 <= port <= 65535 else f"{port} is not a TCP port (0-65535)"


def port_number(text: str) -> int:
    """`--port`: a TCP port, 0-65535 (0: any free one)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    why = port_problem(port)
    if why is not None:
        raise argparse.ArgumentTypeError(why)
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

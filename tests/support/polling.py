"""Waiting in a test for what another thread or process does: poll, never sleep a guess."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(fn: Callable[[], T], timeout: float = 30.0) -> T:
    """Poll `fn` until it is truthy and return what it gave; fail the test after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError("timed out")


def holds_within(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll `condition` until it holds or `timeout` s pass; whether it held (the test asserts)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def process_running(marker: str) -> bool:
    """Whether a process on this machine has `marker` in its command line (`ps -eo args`)."""
    return marker in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout

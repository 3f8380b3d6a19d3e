"""Legacy space rows: a sandbox per test on a fake clock that the connection's waits move."""

from __future__ import annotations

import pytest

from decoy_lab.sandbox import FakeClock, Sandbox


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_800_000_000.0)


@pytest.fixture
def sb(clock):
    """A sandbox per test: one Me space each, and a clock the connection's waits move."""
    with Sandbox.start(seed="none", clock=clock) as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox

"""Scenarios side by side (runner.py): each in its own sandbox, the results in the order asked
whatever order they end in, and an interrupted check stops every running agent."""

from __future__ import annotations

import os
import sys
import time

import pytest

from decoy_lab.conformance.runner import run_scenarios

from support.polling import holds_within, process_running


def test_runs_come_back_in_the_order_asked_and_say_how_they_were_staged():
    ended: list[str] = []
    names = ["slow-pairing", "clean", "missing-permission"]  # slow-pairing ends last: it waits 14 s to pair
    quick = "import time; time.sleep(0.5)"
    runs, staging = run_scenarios(
        names, [sys.executable, "-c", quick], timeout=30, workers=3, on_done=lambda n, r: ended.append(n)
    )
    assert [r.scenario for r in runs] == names
    assert list(staging.seeds) == names and staging.seeds["missing-permission"] == "none"
    assert list(staging.clocks) == names and all(abs(c - time.time()) < 120 for c in staging.clocks.values())
    assert b"PRIVATE KEY" in staging.owner_pem and "PRIVATE" not in repr(staging)
    assert sorted(ended) == sorted(names)


def test_an_interrupted_check_stops_every_running_agent():
    marker = f"decoy-runner-interrupt-{os.getpid()}"
    script = f"import time\n# {marker}\ntime.sleep(60)"
    seen_running: list[bool] = []

    def interrupt(name: str) -> None:
        if name == "token-rotation":  # once the first agent is running, not after a fixed guess
            seen_running.append(holds_within(lambda: process_running(marker), 30))
            raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_scenarios(["clean", "token-rotation"], [sys.executable, "-c", script], timeout=60, on_start=interrupt)
    assert time.monotonic() - started < 30  # not the agent's 60 s: the interrupt ends the run (slack for busy cores)
    assert seen_running == [True], "the interrupt came while an agent was running"
    holds_within(lambda: not process_running(marker), 10)  # the kill is sent; the process may take a moment to go
    assert not process_running(marker)

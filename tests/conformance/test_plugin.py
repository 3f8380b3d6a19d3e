"""The pytest plugin: an agent's own test asserts `violations(inspector) == []`."""

from __future__ import annotations

import os
import subprocess
import sys

from decoy_lab.conformance.pytest_plugin import violations

from support.check_agents import AGENT, NEW_TOPIC


def run_agent(url: str, *extra: str) -> None:
    env = {**os.environ, "DECOY_BASE_URL": url}
    done = subprocess.run(
        [sys.executable, str(AGENT), "--topic", NEW_TOPIC, *extra], env=env, timeout=90, capture_output=True, text=True
    )
    assert done.returncode in (0, 1), done.stderr


def test_a_correct_agent_has_no_violations(decoy_inspector):
    run_agent(str(decoy_inspector.url))
    assert violations(decoy_inspector) == []
    assert len(decoy_inspector) >= 5


def test_a_buggy_agent_has_its_violation(decoy_inspector):
    run_agent(str(decoy_inspector.url), "--bug", "raw-owner-wrap")
    found = violations(decoy_inspector)
    assert found and all(v.startswith("rows.owner-opens: ") for v in found), found

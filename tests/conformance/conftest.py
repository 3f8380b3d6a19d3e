"""The checker's tests: the example agents run through `check`'s scenarios (each run once per
session and shared), the spec text, the plugin's fixtures."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from decoy_lab.conformance.model import Run
from decoy_lab.conformance.pytest_plugin import decoy_inspector, decoy_sandbox  # noqa: F401  (fixtures)
from decoy_lab.conformance.scenarios import SCENARIOS, run_scenario

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "examples" / "agents" / "check" / "memory_agent.py"
WORKBENCH_AGENT = ROOT / "examples" / "agents" / "check" / "workbench_agent.py"
NEW_TOPIC = "Golf club headcovers"  # not in the demo vault: the agent creates it
SEEDED_TOPIC = "Lisbon trip"  # in the demo vault: the agent must reuse it


def agent_command(bug: str | None = None, topic: str = SEEDED_TOPIC, script: Path = AGENT) -> list[str]:
    return [sys.executable, str(script), "--topic", topic, *(["--bug", bug] if bug else [])]


@pytest.fixture(scope="session")
def runs() -> Callable[..., Run]:
    """`runs(scenario, bug=None, topic=…)`: that agent's Run under that scenario, made once."""
    made: dict[tuple, Run] = {}

    def get(scenario: str, bug: str | None = None, topic: str = SEEDED_TOPIC, script: Path = AGENT) -> Run:
        key = (scenario, bug, topic, script)
        if key not in made:
            made[key] = run_scenario(SCENARIOS[scenario], agent_command(bug, topic, script), timeout=100)
        return made[key]

    return get

"""The checker's tests: the example agents run through `check`'s scenarios (each run once per
session and shared), the spec text, the plugin's fixtures."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # check_agents.py, beside this file

from check_agents import AGENT, SEEDED_TOPIC, agent_command

from decoy_lab.conformance.model import Run
from decoy_lab.conformance.pytest_plugin import decoy_inspector, decoy_sandbox  # noqa: F401  (fixtures)
from decoy_lab.conformance.scenarios import SCENARIOS, run_scenario


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

"""The checker's tests: the example agents run through `check`'s scenarios (each run once per
session and shared), the spec text, the plugin's fixtures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from decoy_lab.conformance.pytest_plugin import decoy_inspector, decoy_sandbox  # noqa: F401  (fixtures)
from decoy_lab.conformance.rulebook import Run
from decoy_lab.conformance.scenarios import SCENARIOS, run_scenario

from support.check_agents import AGENT, SEEDED_TOPIC, agent_command


@pytest.fixture(scope="session")
def agent_pem(tmp_path_factory) -> Path:
    """The example agent's private key, kept in a file (`--key`) so the check can hold it too."""
    from decoy_lab.wire.crypto import AgentKey

    path = tmp_path_factory.mktemp("agent-key") / "agent.pem"
    path.write_text(AgentKey.generate().to_pem())
    return path


@pytest.fixture(scope="session")
def runs(agent_pem) -> Callable[..., Run]:
    """`runs(scenario, bug=None, topic=…, with_key=False)`: that agent's Run under that scenario,
    made once; `with_key` runs the agent with a known key and gives the check that key."""
    made: dict[tuple, Run] = {}

    def get(
        scenario: str, bug: str | None = None, topic: str = SEEDED_TOPIC, script: Path = AGENT, with_key: bool = False
    ) -> Run:
        key = (scenario, bug, topic, script, with_key)
        if key not in made:
            pem = agent_pem if with_key else None
            command = agent_command(bug, topic, script, key=pem)
            made[key] = run_scenario(
                SCENARIOS[scenario], command, timeout=100, agent_key=pem.read_bytes() if pem else None
            )
        return made[key]

    return get

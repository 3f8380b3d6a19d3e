"""What the checker's tests share: where the example agents are, and their command lines."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "examples" / "agents" / "check" / "memory_agent.py"
WORKBENCH_AGENT = ROOT / "examples" / "agents" / "check" / "workbench_agent.py"
NEW_TOPIC = "Golf club headcovers"  # not in the demo vault: the agent creates it
SEEDED_TOPIC = "Lisbon trip"  # in the demo vault: the agent must reuse it


def agent_command(
    bug: str | None = None, topic: str = SEEDED_TOPIC, script: Path = AGENT, key: Path | None = None
) -> list[str]:
    """The example agent's command line (`key`: the PEM file it keeps its private key in)."""
    return [
        sys.executable,
        str(script),
        "--topic",
        topic,
        *(["--bug", bug] if bug else []),
        *(["--key", str(key)] if key else []),
    ]

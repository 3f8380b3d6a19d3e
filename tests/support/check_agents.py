"""What the checker's tests share: where the example agents are, their command lines, and
`check(...)`: `decoy-lab check` run as a user runs it."""

from __future__ import annotations

import os
import subprocess
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


def check(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """`python -m decoy_lab.conformance ARGS` from the checkout, its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "decoy_lab.conformance", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )


# which example-agent bugs create a topic, and which rules a bug fails beside its own
CREATES_TOPIC = {"no-self-wrap", "raw-owner-wrap", "bad-kid", "two-about", "long-relation", "topic-alone", "user-topic",
                 "delete-used-topic"}  # fmt: skip
# a bug that really breaks two rules: polling every second also ignores the slow_down it earns; a
# row its own agent cannot read back (or the server refuses) also ends the task in failure, which
# `outcome.finished` reports beside the rule of the bug; rows that preparing-as-missing never
# waited for are still preparing at its last read
FINISHED = {"outcome.finished"}
ALSO_FAILS = {
    "poll-fast": {"pairing.slow-down"},
    "no-self-wrap": FINISHED,
    "bad-kid": FINISHED,
    "self-wrap-other-key": FINISHED,
    "rotate-without-wraps": FINISHED,
    "repair-for-access": FINISHED,
    "preparing-as-missing": {"reading.retry-after"},
    # the new client_id is a second connection holding the agent's own key: memory-grantees lists its
    # first one, whose grant reaches the reminder, and the agent (which skips its own key) never wraps to it
    "new-client-on-continue": {"wraps.every-reader"},
}

"""A pytest plugin: an agent's own tests run against a sandbox behind the inspector, then ask
which rules what it did breaks.

    # pyproject.toml: [project.entry-points.pytest11] decoy_lab = "decoy_lab.conformance.pytest_plugin"
    from decoy_lab.conformance import pytest_plugin

    def test_my_agent_saves(decoy_inspector):
        run_my_agent(base_url=decoy_inspector.url)      # the agent pairs and works through it
        assert pytest_plugin.violations(decoy_inspector) == []

`pytest --decoy-agent-key PEM` gives the agent's private key: each row's self_wrap must then
open to the key its owner_wrap holds (without it, only its layout is checked).

`decoy_sandbox` is a fresh sandbox (no seed, the owner approves at once); `decoy_inspector` records
in front of it and opens every written row as its owner would. `violations(inspector)` judges the
rules over what was recorded so far and lists each failure as "rule id: evidence".
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from decoy_lab.conformance.rulebook import FAILED, Exchange, Run
from decoy_lab.conformance.rules import RULES

_AGENT_KEYS: weakref.WeakKeyDictionary[Any, bytes] = weakref.WeakKeyDictionary()  # inspector -> --decoy-agent-key


def record(inspector: Any, scenario: str = "pytest", *, agent_key: bytes | str | None = None) -> Run:
    """What `inspector` recorded, as a Run (with its sandbox's owner view when it has one, and the
    agent's PEM key when given: `self_wrap` is then opened with it)."""
    inspector.settle(30.0)
    sandbox = getattr(inspector, "sandbox", None)
    view = sandbox.owner.app_view() if sandbox is not None and hasattr(sandbox, "owner") else []
    key = agent_key.encode("ascii") if isinstance(agent_key, str) else agent_key
    key = key if key is not None else _AGENT_KEYS.get(inspector)
    return Run(scenario, [Exchange.of(f) for f in inspector.all_flows()], view, agent_key=key)


def violations(inspector: Any, *, warnings: bool = False, agent_key: bytes | str | None = None) -> list[str]:
    """Each failed rule (and each warning, with `warnings=True`) as "rule id: evidence". With
    `agent_key` (PEM; or `pytest --decoy-agent-key PEM`) each row's self_wrap must open to its key."""
    run = record(inspector, agent_key=agent_key)
    out = []
    for rule in RULES:
        result = rule.evaluate(run)
        if result.status == FAILED or (warnings and result.status == "warning"):
            out += [f"{rule.id}: {e}" for e in result.evidence] or [f"{rule.id}: {result.status}"]
    return out


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--decoy-agent-key",
        metavar="PEM",
        default=None,
        help="decoy_lab: the agent's private key (PEM file): decoy_inspector opens what it writes with it, "
        "and violations() checks each self_wrap opens to its row's key",
    )


@pytest.fixture
def decoy_sandbox() -> Iterator[Any]:
    """A fresh sandbox on a loopback port: empty vault, the owner approving at once."""
    from decoy_lab.sandbox import Sandbox

    with Sandbox.start(seed="none") as sandbox:
        yield sandbox


@pytest.fixture
def decoy_inspector(decoy_sandbox: Any, request: Any) -> Iterator[Any]:
    """The recording inspector in front of `decoy_sandbox`; give the agent its `.url`."""
    from pathlib import Path

    from decoy_lab.conformance.recording import start_inspector

    path = request.config.getoption("--decoy-agent-key", default=None)
    key = Path(path).read_bytes() if path else None
    inspector = start_inspector(decoy_sandbox.url, decoy_sandbox, agent_key=key)
    if key is not None:
        _AGENT_KEYS[inspector] = key  # what violations() opens self_wrap with
    try:
        yield inspector
    finally:
        inspector.close()

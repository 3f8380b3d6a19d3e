"""Conformance: judge any agent by the spec, rule by rule, under staged faults (`decoy-lab check`).

It sits above the inspector, the client and the sandbox, and drives a sandbox and the inspector
through their public APIs (the owner API, the recorded flows), never the sandbox's private state.

    model.py          Rule, Result, Run, Exchange: rules as data and what a run hands them
    rules/            every rule by area (rows, topics, writes, reading, access, pairing)
    hop.py            the staging hop between inspector and sandbox: faults at chosen exchanges
    recording.py      the inspector in front of the hop, opening rows as the sandbox's owner
    scenarios.py      clean, lost-answers, preparing, owner-edits, missing-permission, slow-pairing,
                      token-rotation: a fresh sandbox each, the agent's command run against it
    reproduce.py      a curl line per exchange a failure names, to re-send it against a sandbox
    report.py         the scorecard: text, JSON, JUnit XML, an offline HTML page
    docs.py           docs/rules.md from the rules
    command.py        `decoy-lab check`: add_arguments(parser) and run(args)
    pytest_plugin.py  fixtures decoy_sandbox and decoy_inspector; violations(inspector)
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Names load on first use, so `decoy-lab --help` (which builds this package's parser) stays quick.
_EXPORTS = {
    "FAILED": "decoy_lab.conformance.model",
    "NOT_EXERCISED": "decoy_lab.conformance.model",
    "PASSED": "decoy_lab.conformance.model",
    "RULES": "decoy_lab.conformance.rules",
    "Result": "decoy_lab.conformance.model",
    "Rule": "decoy_lab.conformance.model",
    "Run": "decoy_lab.conformance.model",
    "SCENARIOS": "decoy_lab.conformance.scenarios",
    "Scenario": "decoy_lab.conformance.scenarios",
    "Scorecard": "decoy_lab.conformance.report",
    "WARNING": "decoy_lab.conformance.model",
    "run_scenario": "decoy_lab.conformance.scenarios",
    "score": "decoy_lab.conformance.report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__

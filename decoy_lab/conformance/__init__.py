"""Conformance: judge any agent by the spec, rule by rule, under staged faults (`decoy-lab check`).

It sits above the inspector, the client and the sandbox, and drives a sandbox and the inspector
through their public APIs (the owner API, the recorded flows), never the sandbox's private state.

    rulebook.py       Rule, Result, Evidence, Run, Exchange: rules as data and what a run hands them
    rules/            every rule by area (outcome, rows, topics, writes, reading, access, pairing,
                      contents, wraps, limits)
    staging.py        the staging hop between inspector and sandbox: faults at chosen exchanges
    recording.py      the inspector in front of the hop, opening rows as the sandbox's owner
    scenarios.py      clean, lost-answers, preparing, owner-edits, missing-permission, slow-pairing,
                      token-rotation, other-connections, rate-limit, owner-unlabels (and, not by
                      default, owner-denies, read-write, session-ended and accounts): a fresh
                      sandbox each, the agent's command run against it
    inventory.py      every normative sentence of the spec's memory sections: enforced by rules,
                      not observable in traffic (why), or a gap; the coverage figure
    spectext.py       finds those sentences in the spec by their wording (the inventory's test)
    runner.py         the scenarios side by side (a bounded pool), each in its own sandbox; Staging
    fixes.py          what to do instead, per rule
    reproduce.py      a curl line per exchange a failure names, and --replay in a sandbox staged the same way
    report.py         the scorecard, failed first: text, JSON (+ REPORT.d/), JUnit XML, an offline HTML page
    docs.py           docs/rules.md from the rules
    command.py        `decoy-lab check`: add_arguments(parser) and run(args)
    pytest_plugin.py  fixtures decoy_sandbox and decoy_inspector; violations(inspector)
"""

from __future__ import annotations

from typing import Any

from decoy_lab import lazy

# Names load on first use, so `decoy-lab --help` (which builds this package's parser) stays quick.
_EXPORTS = {
    "Evidence": "rulebook",
    "FAILED": "rulebook",
    "NOT_EXERCISED": "rulebook",
    "PASSED": "rulebook",
    "RULES": "rules",
    "Result": "rulebook",
    "Rule": "rulebook",
    "Run": "rulebook",
    "SCENARIOS": "scenarios",
    "Scenario": "scenarios",
    "Scorecard": "report",
    "WARNING": "rulebook",
    "run_scenario": "scenarios",
    "score": "report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return lazy.load(__name__, _EXPORTS, name)


def __dir__() -> list[str]:
    return __all__

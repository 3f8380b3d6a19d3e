"""docs/rules.md, made from the rules themselves (`python -m decoy_lab.conformance --rules-md`)."""

from __future__ import annotations

from decoy_lab.conformance.model import Rule
from decoy_lab.conformance.rules import RULES
from decoy_lab.conformance.scenarios import SCENARIOS

EXAMPLE = "examples/agents/check/memory_agent.py"


def rules_md() -> str:
    out = [
        "# The rules `decoy-lab check` judges",
        "",
        "Generated from `decoy_lab/conformance/rules/` by `python -m decoy_lab.conformance --rules-md`;",
        "a test keeps it up to date. Each rule quotes the spec sentence it enforces, verbatim, from the",
        "memory contract (`000`) or the Agent API (`001`). A rule no scenario exercised is reported",
        "`not-exercised`, never `passed`.",
        "",
        "## Scenarios",
        "",
        "| scenario | what is staged |",
        "| --- | --- |",
        *[f"| `{s.name}` | {s.title} |" for s in SCENARIOS.values()],
        "",
        "## Rules",
        "",
    ]
    for r in RULES:
        out += [
            f"### `{r.id}` — {r.title}",
            "",
            f"> {r.spec}",
            "",
            f"{r.doc} · {r.section} · severity `{r.severity}` · exercised by {', '.join(f'`{s}`' for s in r.scenarios)}",
            "",
        ]
    out += [
        "## Mutation table: the bug each rule catches",
        "",
        f"Each row is one deliberate bug of the example agent (`{EXAMPLE} --bug NAME`); the tests run it",
        "through `check` and assert that exactly that rule fails.",
        "",
        "| rule | scenario | `--bug` | the bug |",
        "| --- | --- | --- | --- |",
        *[f"| `{r.id}` | `{r.scenarios[0]}` | `{r.bug}`{_with_key(r)} | {r.catches} |" for r in RULES],
        "",
    ]
    return "\n".join(out)


def _with_key(rule: Rule) -> str:
    return " *with `--agent-key`*" if rule.needs_agent_key else ""

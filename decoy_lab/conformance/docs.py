"""docs/rules.md, made from the rules themselves (`python -m decoy_lab.conformance --rules-md`)."""

from __future__ import annotations

from decoy_lab.conformance import inventory
from decoy_lab.conformance.rulebook import Rule
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
        f"**Coverage of the spec's sentences:** {inventory.coverage_line()} (the inventory below; rules ÷ "
        "observable sentences).",
        "",
        "A run judges what the agent did, by outcome: an agent that exits non-zero, or whose writes the",
        "server refused, fails `outcome.finished` (the refusal codes and its last stderr line as evidence);",
        "rules about rows judge only rows the server kept; a trigger that happened (a `401` with",
        "`recovery: refresh`, a `429`, a `409`, a `preparing` read) without the reaction the spec asks",
        "for is `failed`, never `not-exercised`.",
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
            f"> {_unlinked(r.spec)}",
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
        *_inventory(),
    ]
    return "\n".join(out)


def _cell(text: str) -> str:
    return _unlinked(text).replace("|", "\\|").replace("\n", " ")


def _unlinked(text: str) -> str:
    """The spec's links point into Decoy's own site: quoted here, they must not become links
    that lead nowhere in this checkout (`](` is written `]\\(`, shown the same)."""
    return text.replace("](", "]\\(")


def _inventory() -> list[str]:
    out = [
        "## Sentence inventory",
        "",
        "Every normative sentence (must, never, always, only, exactly, required, do not, an imperative) of",
        "the memory contract (`000`) and of the Agent API operations a memory agent uses (`001`: pairing,",
        "errors and their recovery, grant-request, policies, the memory routes, rate limits), from",
        "`decoy_lab/conformance/inventory.toml`; a test fails on a sentence of the spec it does not place.",
        "Each is enforced by rules, not observable in traffic (and why), or a gap: observable, no rule yet.",
        "",
        f"{inventory.coverage_line()}.",
        "",
    ]
    section = None
    for s in inventory.SENTENCES:
        if (s.doc, s.section) != section:
            section = (s.doc, s.section)
            out += ["", f"### {s.doc} · {s.section}", "", "| sentence | placed |", "| --- | --- |"]
        if s.enforced_by:
            where = "enforced: " + ", ".join(f"`{r}`" for r in s.enforced_by)
        elif s.unobservable:
            where = f"not observable: {s.unobservable}"
        else:
            where = f"**gap**: {s.gap}"
        out.append(f"| {_cell(s.text)} | {_cell(where)} |")
    return [*out, ""]


def _with_key(rule: Rule) -> str:
    return " *with `--agent-key`*" if rule.needs_agent_key else ""

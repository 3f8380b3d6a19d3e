"""The mutation suite: every rule has a mutant of the Python example agent (`--bug NAME`, written
from the rule's spec sentence) that only that rule catches. One test runs them all, three scenarios
at once, and reports the mutation score: the mutants that fail exactly their rule, of all rules.

It grows with the inventory: a new rule needs a `bug` (tests/conformance/test_rules_data.py), and
that bug runs here. Its record is kept in build/conformance/mutation-score.txt.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from decoy_lab.conformance.report import score
from decoy_lab.conformance.rules import RULES

from support.check_agents import ALSO_FAILS, CREATES_TOPIC, NEW_TOPIC, SEEDED_TOPIC

ROOT = Path(__file__).resolve().parents[2]
WORKERS = 3  # scenarios mostly wait (the owner's delays, staged faults): three at once


def test_mutation_score(runs):
    def judge(rule):
        topic = NEW_TOPIC if rule.bug in CREATES_TOPIC else SEEDED_TOPIC
        run = runs(rule.scenarios[0], bug=rule.bug, topic=topic, with_key=rule.needs_agent_key)
        failed = {v.rule.id for v in score(RULES, [run]).failed}
        evidence = rule.evaluate(run).evidence
        # each line names its exchange (the agent's exit status is the process's, no exchange's)
        named = bool(evidence) and all("#" in e or e.startswith("the agent ") for e in evidence)
        return rule, failed, named, run

    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(judge, RULES))
    lines, killed = [], 0
    for rule, failed, named, run in results:
        ok = failed == {rule.id} | ALSO_FAILS.get(rule.bug, set()) and named
        killed += ok
        extra = sorted(failed - {rule.id} - ALSO_FAILS.get(rule.bug, set()))
        why = "" if ok else f"  failed {sorted(failed)} (also: {extra}); exit {run.exit_code}"
        lines.append(f"{'killed ' if ok else 'MISSED '} {rule.id:<34} --bug {rule.bug} [{rule.scenarios[0]}]{why}")
    report = f"mutation score: {killed}/{len(RULES)} mutants fail exactly their rule\n" + "\n".join(lines) + "\n"
    out = ROOT / "build" / "conformance"
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutation-score.txt").write_text(report, encoding="utf-8")
    print(report)
    assert killed == len(RULES), report

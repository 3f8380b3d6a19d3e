"""Proof that `check` judges: the correct example agent passes every scenario and every rule in its
scenario, the workbench scores clean. (Each one-bug variant failing exactly its rule, and the
mutation score: test_mutants.py.)"""

from __future__ import annotations

import pytest

from decoy_lab.conformance.model import FAILED, PASSED
from decoy_lab.conformance.report import score
from decoy_lab.conformance.rules import RULES
from decoy_lab.conformance.scenarios import DEFAULT

from support.check_agents import CREATES_TOPIC, NEW_TOPIC, SEEDED_TOPIC, WORKBENCH_AGENT


# bugs that create a topic need a subject the demo vault does not hold; the rest reuse one
@pytest.mark.parametrize("scenario", DEFAULT)
def test_the_correct_agent_fails_no_rule(runs, scenario):
    run = runs(scenario)
    assert run.exit_code == 0 and not run.timed_out, run.stderr[-2000:]
    card = score(RULES, [run])
    assert not card.failed, [(v.rule.id, v.evidence) for v in card.failed]


def test_the_correct_agent_creating_a_topic_fails_no_rule(runs):
    run = runs("clean", topic=NEW_TOPIC)
    assert run.exit_code == 0, run.stderr[-2000:]
    card = score(RULES, [run])
    assert not card.failed, [(v.rule.id, v.evidence) for v in card.failed]
    for rid in ("topics.one-post", "topics.not-the-user", "rows.size-caps", "topics.reuse-before-create"):
        assert card.status_of(rid) == PASSED, rid


def test_every_rule_is_exercised_and_passed_by_the_correct_agent_in_its_scenario(runs):
    for rule in RULES:
        topic = NEW_TOPIC if rule.bug in CREATES_TOPIC else SEEDED_TOPIC
        result = rule.evaluate(runs(rule.scenarios[0], topic=topic))
        assert result.status == PASSED, (rule.id, result)


def test_the_staged_faults_fired(runs):
    assert {e["kind"] for e in runs("lost-answers").events} == {"drop", "answer"}
    assert [e["kind"] for e in runs("owner-edits").events] == ["before"]
    assert next(e["kind"] for e in runs("token-rotation").events) == "expire"
    assert [e["kind"] for e in runs("slow-pairing").events] == ["answer"]
    assert any(x.code == "REV_CONFLICT" for x in runs("owner-edits").exchanges)
    assert any(x.code == "INSUFFICIENT_GRANT" for x in runs("missing-permission").exchanges)
    assert any(
        (x.response or {}).get("preparing_others") for x in runs("preparing").exchanges if isinstance(x.response, dict)
    )


@pytest.mark.parametrize("scenario", ["clean", "lost-answers"])
def test_the_workbench_connection_scores_clean(runs, scenario):
    run = runs(scenario, script=WORKBENCH_AGENT)
    assert run.exit_code == 0, run.stderr[-2000:]
    card = score(RULES, [run])
    assert not card.failed, [(v.rule.id, v.evidence) for v in card.failed]
    assert card.status_of("rows.owner-opens") == PASSED
    assert all(v.status != FAILED for v in card.verdicts)

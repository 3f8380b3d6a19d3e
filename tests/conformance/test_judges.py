"""Proof that `check` judges: the correct example agent passes every scenario, each one-bug
variant fails exactly the rule its bug breaks (and no other), the workbench scores clean."""

from __future__ import annotations

import pytest
from check_agents import NEW_TOPIC, SEEDED_TOPIC, WORKBENCH_AGENT

from decoy_lab.conformance.model import FAILED, PASSED
from decoy_lab.conformance.report import score
from decoy_lab.conformance.rules import BY_ID, RULES
from decoy_lab.conformance.scenarios import DEFAULT

# bugs that create a topic need a subject the demo vault does not hold; the rest reuse one
CREATES_TOPIC = {"no-self-wrap", "raw-owner-wrap", "bad-kid", "two-about", "long-relation", "topic-alone", "user-topic",
                 "delete-used-topic"}  # fmt: skip
# a bug that really breaks two rules: polling every second also ignores the slow_down it earns
ALSO_FAILS = {"poll-fast": {"pairing.slow-down"}}


def failed_rules(run) -> set[str]:
    return {v.rule.id for v in score(RULES, [run]).failed}


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


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.bug)
def test_each_bug_fails_exactly_its_rule(runs, rule):
    topic = NEW_TOPIC if rule.bug in CREATES_TOPIC else SEEDED_TOPIC
    run = runs(rule.scenarios[0], bug=rule.bug, topic=topic, with_key=rule.needs_agent_key)
    got = failed_rules(run)
    assert got == {rule.id} | ALSO_FAILS.get(rule.bug, set()), (rule.bug, got, run.stdout[-1500:], run.stderr[-1500:])
    evidence = BY_ID[rule.id].evaluate(run).evidence
    assert evidence and all("#" in e for e in evidence), evidence  # each names its exchange


@pytest.mark.parametrize("scenario", ["clean", "lost-answers"])
def test_the_workbench_connection_scores_clean(runs, scenario):
    run = runs(scenario, script=WORKBENCH_AGENT)
    assert run.exit_code == 0, run.stderr[-2000:]
    card = score(RULES, [run])
    assert not card.failed, [(v.rule.id, v.evidence) for v in card.failed]
    assert card.status_of("rows.owner-opens") == PASSED
    assert all(v.status != FAILED for v in card.verdicts)

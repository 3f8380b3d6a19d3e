"""Proof that `check` judges: the correct example agent passes every scenario and every rule in its
scenario, the workbench scores clean. (Each one-bug variant failing exactly its rule, and the
mutation score: test_mutants.py.)"""

from __future__ import annotations

import pytest

from decoy_lab.conformance.report import score
from decoy_lab.conformance.rulebook import FAILED, NOT_EXERCISED, PASSED
from decoy_lab.conformance.rules import BY_ID, RULES
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


ACCOUNT_RULES = [r.id for r in RULES if r.id.startswith("accounts.")]


def test_the_correct_agent_signs_up_in_the_accounts_scenario_and_fails_no_rule(runs):
    """`accounts` (not a default scenario): granted Create accounts, the agent makes the account with its
    address, sets its password, adds the API key as a field, saves a memory about it and unlocks it."""
    run = runs("accounts")
    assert run.exit_code == 0 and not run.timed_out, run.stderr[-2000:]
    assert "password through unlock: verified" in run.stdout and "about the account (read back)" in run.stdout
    card = score(RULES, [run])
    assert not card.failed, [(v.rule.id, v.evidence) for v in card.failed]
    here = [r.id for r in RULES if r.id in ACCOUNT_RULES and "accounts" in r.scenarios]  # unlock-pending: slow-unlock
    assert len(here) == 8 and all(card.status_of(rid) == PASSED for rid in here)
    assert "accounts" not in DEFAULT


def test_without_account_create_the_agent_makes_no_account(runs):
    """The other scenarios grant no account.create: the agent's traffic there has no account call."""
    run = runs("clean")
    assert not [x.label() for x in run.exchanges if x.path.startswith(("/api/agent/decoys", "/api/agent/accounts"))]
    assert all(BY_ID[rid].evaluate(run).status == NOT_EXERCISED for rid in ACCOUNT_RULES)


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

"""The owner slow to allow an unlock (`slow-unlock`) and a queued address edit applied late
(`late-edit`): the example agent waits as 001 says, and each mutant of it fails its rule alone.

001 `unlock_request`: "`state: "preparing"`: … send the same request again after
`retry_after_seconds`." "Poll `GET /api/agent/unlock/{requestId}` for the sealed envelope and open it
with your agent key." `decoy_edit_request`: "The call answers `202` at once; poll `GET
/api/agent/decoys/{decoyId}/edits/{editId}` for `applied`." "Queued edits are never dropped."
"""

from __future__ import annotations

import pytest

from decoy_lab.conformance.report import score
from decoy_lab.conformance.rulebook import PASSED
from decoy_lab.conformance.rules import BY_ID, RULES
from decoy_lab.conformance.scenarios import DEFAULT

WAITS = ("accounts.unlock-retry-after", "accounts.unlock-pending", "accounts.edit-polled", "accounts.edit-once")


def test_the_scenarios_are_not_default():
    assert "slow-unlock" not in DEFAULT and "late-edit" not in DEFAULT


def test_the_slow_owner_is_waited_for_by_polling_one_request(runs):
    run = runs("slow-unlock")
    asks = run.where("POST", "/api/agent/unlock")
    assert [x.status for x in asks] == [201] and asks[0].response["status"] == "pending"
    polls = [x for x in run.exchanges if x.method == "GET" and x.path.startswith("/api/agent/unlock/")]
    statuses = [p.response["status"] for p in polls]
    assert statuses[0] == "pending" and statuses[-1] == "ready"  # the owner allowed it 12 s after it was asked
    assert any("allowed the unlock" in n for n in run.notes)
    assert not score(RULES, [run]).failed, [v.rule.id for v in score(RULES, [run]).failed]
    assert BY_ID["accounts.unlock-pending"].evaluate(run).status == PASSED


def test_the_late_edit_is_polled_until_applied_and_queued_once(runs):
    run = runs("late-edit")
    queued = [x for x in run.where("POST") if x.path.endswith("/edits")]
    assert [x.status for x in queued] == [202]
    polls = [x for x in run.exchanges if x.method == "GET" and "/edits/" in x.path]
    statuses = [p.response["status"] for p in polls]
    assert statuses[0] == "pending" and statuses[-1] == "applied"  # the phone applied it 15 s after it was queued
    assert not score(RULES, [run]).failed, [v.rule.id for v in score(RULES, [run]).failed]
    for rule in WAITS:
        if rule != "accounts.unlock-pending":
            assert BY_ID[rule].evaluate(run).status == PASSED, rule


@pytest.mark.parametrize("rule_id", WAITS)
def test_each_mutant_fails_its_rule_alone(runs, rule_id):
    rule = BY_ID[rule_id]
    run = runs(rule.scenarios[0], bug=rule.bug)
    failed = {v.rule.id for v in score(RULES, [run]).failed}
    assert failed == {rule_id}, (failed, run.exit_code, run.stdout[-2000:])
    assert all("#" in e for e in rule.evaluate(run).evidence)

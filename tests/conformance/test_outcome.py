"""Verdicts by outcome, on hand-made records: a refused write and a non-zero exit fail
`outcome.finished`; a trigger without its reaction is failed, never not-exercised; a deletion is
verified only by a read that no longer lists the row."""

from __future__ import annotations

from decoy_lab.conformance.rulebook import FAILED, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID

MEM = "/api/agent/context/memories"


def x(i, method, path, status=200, request=None, response=None, start=None, form=None, token="t1"):
    t = float(i) if start is None else start
    return Exchange(i, method, path, "", status, "answered", t, t + 0.1, request, response, form or {}, [], token)


def test_a_refused_write_and_a_non_zero_exit_fail_outcome_finished():
    refused = x(1, "POST", MEM, 400, {"rows": []}, {"code": "PLAINTEXT_REJECTED", "message": "text outside"})
    run = Run("clean", [refused], exit_code=1, stderr="saving…\nerror: 400 PLAINTEXT_REJECTED\n")
    result = BY_ID["outcome.finished"].evaluate(run)
    assert result.status == FAILED
    assert "PLAINTEXT_REJECTED" in result.evidence[0] and "error: 400 PLAINTEXT_REJECTED" in result.evidence[-1]
    assert run.refusals == [{"exchange": 1, "method": "POST", "path": MEM, "status": 400, "code": "PLAINTEXT_REJECTED"}]
    # rules about rows judge no row of a refused write
    for rid in ("rows.self-wrap", "writes.read-back", "contents.no-secrets"):
        assert BY_ID[rid].evaluate(run).status == NOT_EXERCISED, rid


def test_a_clean_exit_passes_and_an_empty_record_is_not_exercised():
    assert BY_ID["outcome.finished"].evaluate(Run("clean", [x(1, "GET", MEM)], exit_code=0)).status == PASSED
    assert BY_ID["outcome.finished"].evaluate(Run("clean", [])).status == NOT_EXERCISED


def test_a_401_refresh_never_refreshed_is_failed():
    expired = x(1, "GET", MEM, 401, None, {"code": "TOKEN_EXPIRED", "recovery": "refresh"})
    assert BY_ID["pairing.refresh-once"].evaluate(Run("token-rotation", [expired], exit_code=1)).status == FAILED


def test_a_429_never_sent_again_is_failed_and_one_sent_too_soon_too():
    limited = x(1, "POST", MEM, 429, {"rows": []}, {"code": "RATE_LIMITED", "retry_after_seconds": 3})
    assert BY_ID["limits.retry-after"].evaluate(Run("rate-limit", [limited])).status == FAILED
    soon = x(2, "POST", MEM, 201, {"rows": []}, {"created": []}, start=1.5)
    assert BY_ID["limits.retry-after"].evaluate(Run("rate-limit", [limited, soon])).status == FAILED
    later = x(2, "POST", MEM, 201, {"rows": []}, {"created": []}, start=4.5)
    assert BY_ID["limits.retry-after"].evaluate(Run("rate-limit", [limited, later])).status == PASSED


def test_a_preparing_read_never_read_again_is_failed():
    owed = x(1, "GET", MEM, 200, None, {"memories": [], "preparing_others": 3, "retry_after_seconds": 5})
    assert BY_ID["reading.retry-after"].evaluate(Run("preparing", [owed])).status == FAILED


def test_a_deletion_is_verified_only_by_a_read_that_no_longer_lists_it():
    gone = x(1, "POST", f"{MEM}/delete", 200, {"ids": ["r1"]}, {"deleted": ["r1"], "refused": []})
    still = x(2, "GET", MEM, 200, None, {"memories": [{"id": "r1"}]})
    assert BY_ID["deletes.verified"].evaluate(Run("clean", [gone, still])).status == FAILED
    after = x(3, "GET", MEM, 200, None, {"memories": [{"id": "r2"}]})
    assert BY_ID["deletes.verified"].evaluate(Run("clean", [gone, still, after])).status == PASSED

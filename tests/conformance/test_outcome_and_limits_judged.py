"""`decoy-lab check`'s outcome.finished and limits.retry-after (conformance/rules/outcome.py,
limits.py), and what every rule shares (rules/base.py: topic names normalized, a row's topic, a read
still owed rows), on hand-made records. Each record breaks (or keeps) one sentence:

000 "use or verify the documented path rather than reporting a plan as a save." 001 "`429`: wait
`retry_after_seconds`." 000 "Find or create": a topic name is matched after NFKC, lower case, collapsed
whitespace and surrounding quotes stripped.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest

from decoy_lab.conformance.rulebook import FAILED, MEMORIES, NOT_EXERCISED, PASSED, WARNING, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.conformance.rules.base import normalize
from decoy_lab.inspector.flow_record import Row

M = MEMORIES


def x(i: int, method: str, path: str = M, status: int = 200, response: Any = None, rows=(), start=None, done=-1.0):
    t = float(i) if start is None else start
    end = t + 0.1 if done == -1.0 else done
    return Exchange(i, method, path, "", status, "answered", t, end, {}, response, {}, list(rows), "t1")


def judge(rule: str, *exchanges: Exchange, **run: Any) -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(Run(run.pop("scenario", "clean"), list(exchanges), **run))
    for e in result.evidence:  # a line that names an exchange links it (the report's reproducer)
        named = re.findall(r"#(\d+)", e)
        assert not named or int(named[0]) in e.exchanges, e
    return result.status, [str(e) for e in result.evidence]


# -- outcome.finished ------------------------------------------------------------------------------


def refused(
    i: int, code: str | None = "PLAINTEXT_REJECTED", status: int = 400, path: str = M, method: str = "POST", **body: Any
):
    return x(i, method, path, status, {**({"code": code} if code else {}), **body})


def test_a_refused_write_fails_with_the_servers_words():
    status, evidence = judge("outcome.finished", refused(1, message="text outside ciphertext"), exit_code=0)
    assert status == FAILED
    assert evidence == [f"POST {M} #1: refused 400 PLAINTEXT_REJECTED: nothing was stored (text outside ciphertext)"]
    status, evidence = judge("outcome.finished", refused(1, None, error="bad json"), exit_code=0)
    assert evidence == [f"POST {M} #1: refused 400 bad json: nothing was stored (bad json)"]
    status, evidence = judge("outcome.finished", refused(1, None), exit_code=0)  # no words at all: none shown
    assert evidence == [f"POST {M} #1: refused 400 (no code): nothing was stored ()"]
    bare = x(1, "PUT", M, 404, ["not", "an", "object"])
    assert judge("outcome.finished", bare, exit_code=0)[1] == [
        f"PUT {M} #1: refused 404 (no code): nothing was stored ()"
    ]
    for path in (f"{M}/delete", "/api/agent/context/memory-wraps"):
        assert judge("outcome.finished", refused(1, path=path), exit_code=0)[0] == FAILED, path


def test_more_than_three_refused_writes_are_counted():
    status, evidence = judge("outcome.finished", *(refused(i) for i in range(1, 6)), exit_code=0)
    assert status == FAILED and len(evidence) == 4 and evidence[3] == "… and 2 more refused writes"
    assert len(judge("outcome.finished", *(refused(i) for i in range(1, 4)), exit_code=0)[1]) == 3


@pytest.mark.parametrize(
    "answer",
    [
        {"status": 401, "code": "TOKEN_EXPIRED"},
        {"status": 429, "code": "X"},
        {"status": 409, "code": "REV_CONFLICT"},
        {"status": 409, "code": "KID_CONFLICT"},
        {"status": 409, "code": "HOLDERS_MISSING"},
        {"status": 409, "code": "GRANT_ALREADY_REQUESTED"},
        {"status": 400, "code": "RATE_LIMITED"},
        {"status": 403, "code": "INSUFFICIENT_GRANT", "permission_request": {"permissions": ["memory.save"]}},
        {"status": 403, "code": "GRANT_EXPIRED", "recovery": "request_access"},
    ],
)
def test_a_refusal_with_its_own_recovery_is_that_recoverys_to_judge(answer):
    body = {k: v for k, v in answer.items() if k != "status"}
    status, _ = judge("outcome.finished", refused(1, status=answer["status"], **body), exit_code=0)
    assert status == PASSED


def test_a_403_without_a_way_to_ask_fails_and_other_requests_are_not_writes():
    assert (
        judge("outcome.finished", refused(1, "INSUFFICIENT_GRANT", 403, permission_request="x"), exit_code=0)[0]
        == FAILED
    )
    assert judge("outcome.finished", refused(1, "X", 403, recovery="refresh"), exit_code=0)[0] == FAILED
    for other in (refused(1, path="/api/agent/policies"), refused(1, method="GET"), refused(1, method="DELETE")):
        assert judge("outcome.finished", other, exit_code=0)[0] == PASSED


def test_how_the_agent_ended_is_judged():
    status, evidence = judge("outcome.finished", x(1, "GET"), exit_code=2, stderr="saving…\n  error: boom  \n\n")
    assert status == FAILED and evidence == ["the agent exited with status 2 (last line of its stderr: 'error: boom')"]
    status, evidence = judge("outcome.finished", x(1, "GET"), exit_code=1, stdout="done?\n")
    assert evidence == ["the agent exited with status 1 (last line of its stderr: 'done?')"]
    status, evidence = judge("outcome.finished", x(1, "GET"), exit_code=1, stderr="e" * 400)
    assert evidence == [f"the agent exited with status 1 (last line of its stderr: {'e' * 300!r})"]
    status, evidence = judge("outcome.finished", exit_code=None, timed_out=True, stderr="waiting\n")
    assert status == FAILED and evidence == [
        "the agent did not finish: stopped at the time limit (last line: 'waiting')"
    ]
    status, evidence = judge("outcome.finished", x(1, "GET"), exit_code=0, timed_out=True)
    assert evidence == ["the agent did not finish: stopped at the time limit (last line: '')"]


def test_a_clean_finish_passes_and_nothing_done_is_not_exercised():
    status, evidence = judge("outcome.finished", x(1, "GET"), x(2, "POST", status=201), exit_code=0)
    assert status == PASSED and evidence == [
        "the agent exited 0 and the server refused none of its writes (2 exchanges)"
    ]
    live = judge("outcome.finished", x(1, "GET"))  # the pytest plugin's record: no process to have exited
    assert live == (PASSED, ["the server refused none of its writes (1 exchanges)"])
    assert judge("outcome.finished", exit_code=0)[0] == NOT_EXERCISED
    assert judge("outcome.finished")[0] == NOT_EXERCISED
    assert judge("outcome.finished", exit_code=3)[0] == FAILED


# -- limits.retry-after ----------------------------------------------------------------------------


def limited(i: int, wait: Any = 3, path: str = M, method: str = "POST", **kw: Any) -> Exchange:
    return x(i, method, path, 429, {"code": "RATE_LIMITED", "retry_after_seconds": wait}, **kw)


def again(i: int, path: str = M, method: str = "POST", **kw: Any) -> Exchange:
    return x(i, method, path, 201, {}, **kw)


def test_sent_again_after_the_wait_passes():
    status, evidence = judge("limits.retry-after", limited(1, done=1.5), again(2, start=4.5), scenario="rate-limit")
    assert status == PASSED and evidence == [f"POST {M} #2: sent again 3.0 s after the 429 of #1 (3 s)"]
    assert judge("limits.retry-after", limited(1, done=1.5), again(2, start=4.1))[0] == PASSED  # within the slack
    assert judge("limits.retry-after", limited(1, done=None), again(2, start=4.0))[0] == PASSED  # from its start
    assert judge("limits.retry-after", limited(1, wait=None, done=1.5), again(2, start=1.6))[0] == PASSED
    odd = x(1, "POST", M, 429, ["slow down"], done=1.5)
    assert judge("limits.retry-after", odd, again(2, start=1.6))[1] == [
        f"POST {M} #2: sent again 0.1 s after the 429 of #1 (0 s)"
    ]


def test_sent_again_too_soon_fails_and_names_both():
    status, evidence = judge("limits.retry-after", limited(1, done=1.5), again(2, start=3.9))
    assert status == FAILED and evidence == [f"POST {M} #2: sent again 2.4 s after the 429 of #1; it said 3 s"]
    result = BY_ID["limits.retry-after"].evaluate(Run("rate-limit", [limited(1, done=1.5), again(2, start=3.9)]))
    assert result.evidence[0].exchanges == (2, 1)


def test_never_sent_again_fails():
    status, evidence = judge(
        "limits.retry-after", limited(1), again(2, path="/api/agent/policies"), again(3, method="PUT")
    )
    assert status == FAILED
    assert evidence == [
        f"POST {M} #1: 429 RATE_LIMITED (retry_after_seconds 3); never sent again: what it asked for was never done"
    ]
    assert judge("limits.retry-after", again(0), limited(1))[0] == FAILED  # only what came after counts
    assert judge("limits.retry-after", again(1))[0] == NOT_EXERCISED


def test_limits_keeps_three_lines_of_each():
    seq = [e for i in range(5) for e in (limited(2 * i + 1, done=2 * i + 1.1), again(2 * i + 2, start=2 * i + 1.2))]
    assert len(judge("limits.retry-after", *seq)[1]) == 3
    ok = [
        e
        for i in range(5)
        for e in (limited(10 * i + 1, wait=1, done=10 * i + 1.1), again(10 * i + 2, start=10 * i + 5.0))
    ]
    assert len(judge("limits.retry-after", *ok)[1]) == 3


# -- what every rule shares ------------------------------------------------------------------------


def test_topic_names_match_after_normalizing():
    assert normalize("  “Lisbon   TRIP” ") == "lisbon trip"
    assert normalize("'Ｐｏｒｔｏ'") == "porto"  # full-width letters fold (NFKC)
    assert normalize('"me"') == "me"


def test_a_rows_topic_is_read_from_an_opened_object_too():
    filed = Row("m1", "request.rows[0]", "readable", plaintext=SimpleNamespace(topic_id="topic:t1"))
    write = x(1, "POST", M, 201, {}, [filed])
    delete = Exchange(
        2, "POST", f"{M}/delete", "", 200, "answered", 2.0, 2.1, {"ids": ["t1"]}, {"deleted": ["t1"]}, {}, [], "t1"
    )
    status, evidence = judge("deletes.keep-used-topics", write, delete)
    assert status == FAILED and "deletes a topic that a saved memory is filed under" in evidence[0]
    unfiled = Row("m1", "request.rows[0]", "readable", plaintext=SimpleNamespace())
    assert judge("deletes.keep-used-topics", x(1, "POST", M, 201, {}, [unfiled]), delete)[0] == PASSED
    topic_row = Row("t1", "request.rows[0]", "readable", plaintext={"kind": "topic", "topic": {"id": "topic:t1"}})
    assert judge("deletes.keep-used-topics", x(1, "POST", M, 201, {}, [topic_row]), delete)[0] == PASSED


def test_a_read_owing_rows_by_any_of_its_three_words_is_preparing():
    for body in ({"preparing": ["a"]}, {"preparing_others": 1}, {"preparing_unknown": True}):
        owed = x(1, "GET", M, 200, {"memories": [], **body, "retry_after_seconds": 2})
        status, evidence = judge("reading.retry-after", owed)
        assert status == FAILED and "never read again" in evidence[0], body
    assert judge("reading.retry-after", x(1, "GET", M, 200, {"memories": [], "preparing": []}))[0] == NOT_EXERCISED


def test_a_check_that_stops_is_a_warning_never_a_crash():
    odd = Row("r1", "request.rows[0]", "unreadable", reason=None)  # type: ignore[arg-type]  # a reason that is no text
    broken = Exchange(1, "POST", M, "", 201, "answered", 1.0, 1.1, {"rows": [{"id": "r1"}]}, {}, {}, [odd], "t1")
    result = BY_ID["rows.owner-opens"].evaluate(Run("clean", [broken]))
    assert result.status == WARNING and result.evidence[0].startswith("the check stopped: ")


# -- what the first run left alive: each a record a user could send --------------------------------


def test_a_429_is_answered_only_by_a_later_send():
    status, evidence = judge("limits.retry-after", again(0, path="/api/agent/policies"), limited(1))
    assert status == FAILED and evidence[0].endswith("never sent again: what it asked for was never done")
    seq = [limited(1, path="/api/agent/policies"), limited(2, done=2.1), again(3, start=2.5)]
    assert len(judge("limits.retry-after", *seq)[1]) == 2  # the first never sent again, the second too soon
    assert (
        judge("limits.retry-after", limited(1, done=1.5), again(2, start=4.0))[0] == PASSED
    )  # 2.5 s: the wait less its slack


def test_four_refused_writes_are_all_named():
    status, evidence = judge("outcome.finished", *(refused(i) for i in range(1, 5)), exit_code=0)
    assert status == FAILED and len(evidence) == 4 and evidence[3] == "… and 1 more refused writes"


def test_a_401_is_a_refresh_to_make_whatever_its_code_and_a_403_of_no_json_is_refused():
    assert judge("outcome.finished", refused(1, "X", 401), exit_code=0)[0] == PASSED
    listed = x(1, "POST", M, 403, ["forbidden"])
    assert judge("outcome.finished", listed, exit_code=0)[0] == FAILED


def test_rows_opened_without_a_plaintext_are_read_as_empty():
    bare = Row("m1", "request.rows[0]", "readable", kind="memory", opened_by="owner key")
    write = x(1, "POST", M, 201, {"created": ["m1"]}, [bare])
    write.request = {"rows": [{"id": "m1"}]}
    assert judge("rows.about-once", write)[1] == [f"POST {M} #1, row m1: about None"]
    assert judge("contents.no-copy-to-relabel", write)[0] == NOT_EXERCISED

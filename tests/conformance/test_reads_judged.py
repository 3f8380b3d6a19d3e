"""`decoy-lab check`'s reading.* rules (conformance/rules/reading.py) on hand-made records: a write
with no read before it, a read answered `preparing` met by re-creating the owed rows or re-pairing, a
read again too soon or never. Each record breaks (or keeps) one sentence of the spec (the rules quote
them: `python -m decoy_lab.conformance --rules-md`)."""

from __future__ import annotations

import re
from typing import Any

from decoy_lab.conformance.rulebook import FAILED, MEMORIES, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.inspector.flow_record import Row

M = MEMORIES
DELETE = f"{M}/delete"


def x(
    i: int, method: str, path: str = M, status: int | None = 200, response: Any = None, rows=(), start=None, done=-1.0
):
    t = float(i) if start is None else start
    end = t + 0.1 if done == -1.0 else done
    ended = "answered" if status is not None else "no answer"
    request = {"rows": [{"id": r.id} for r in rows]} if method == "POST" else None
    return Exchange(i, method, path, "", status, ended, t, end, request, response, {}, list(rows), "t1")


def read(i: int, *ids: str, preparing: int = 0, wait: Any = None, status: int | None = 200, **kw: Any) -> Exchange:
    body: dict[str, Any] = {"memories": [{"id": r} for r in ids]}
    if preparing:
        body |= {"preparing_others": preparing, "retry_after_seconds": wait}
    return x(i, "GET", M, status, body, **kw)


def judge(
    rule: str, *exchanges: Exchange, view: list[dict] | None = None, scenario: str = "clean"
) -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(Run(scenario, list(exchanges), app_view=view or []))
    for e in result.evidence:  # a line links the exchange it names first (the report's reproducer)
        named = re.findall(r"#(\d+)", e)
        assert not named or int(named[0]) in e.exchanges, e
    return result.status, [str(e) for e in result.evidence]


def links(rule: str, *exchanges: Exchange, view: list[dict] | None = None) -> list[tuple[int, ...]]:
    return [e.exchanges for e in BY_ID[rule].evaluate(Run("preparing", list(exchanges), app_view=view or [])).evidence]


# -- reading.read-first ----------------------------------------------------------------------------


def test_a_write_after_an_answered_read_passes():
    status, evidence = judge("reading.read-first", read(1), x(2, "POST", M, 201))
    assert status == PASSED and evidence == [f"GET {M} #1: read before the first write (POST {M} #2)"]
    assert links("reading.read-first", read(1), x(2, "POST", M, 201)) == [(1, 2)]
    for first in (x(2, "PUT", M, 200), x(2, "POST", DELETE, 200)):
        assert judge("reading.read-first", read(1), first)[0] == PASSED, first.path


def test_a_first_write_with_no_answered_read_before_it_fails():
    status, evidence = judge("reading.read-first", x(1, "POST", M, 201), read(2))
    assert status == FAILED
    assert evidence == [f"POST {M} #1: the task's first memory write, with no read of {M} answered before it"]
    for before in (read(1, status=None), read(1, status=300), read(1, status=500)):
        assert judge("reading.read-first", before, x(2, "POST", M, 201))[0] == FAILED, before.status
    assert judge("reading.read-first", read(1, start=2.0), x(2, "POST", M, 201))[0] == FAILED  # sent with it
    other = x(1, "GET", "/api/agent/policies", 200, {})
    assert judge("reading.read-first", other, x(2, "PUT", M, 200))[0] == FAILED
    assert judge("reading.read-first", read(1), x(2, "GET", M, 200))[0] == NOT_EXERCISED  # no write
    wraps = x(2, "POST", "/api/agent/context/memory-wraps", 200)  # not a memory write of its own
    assert judge("reading.read-first", wraps)[0] == NOT_EXERCISED
    assert judge("reading.read-first", x(1, "DELETE", M, 200))[0] == NOT_EXERCISED


def test_only_the_first_write_is_judged():
    seq = [read(0, status=500), read(1), x(2, "POST", M, 201), x(3, "PUT", M, 200)]
    assert judge("reading.read-first", *seq)[1] == [f"GET {M} #1: read before the first write (POST {M} #2)"]


# -- reading.preparing-wait ------------------------------------------------------------------------

VIEW = [{"id": "t-owed", "kind": "topic", "name": "Lisbon Trip"}, {"id": "t-seen", "kind": "topic", "name": "Porto"}]


def made(i: int, tid: str, name: str, **kw: Any) -> Exchange:
    row = Row(tid, "request.rows[0]", "readable", text=name, plaintext={"kind": "topic", "name": name})
    return x(i, "POST", M, 201, {"created": [tid]}, [row], **kw)


def test_a_topic_recreated_while_its_copy_is_preparing_fails():
    status, evidence = judge(
        "reading.preparing-wait", read(1, "t-seen", preparing=2), made(2, "t-new", " lisbon  TRIP"), view=VIEW
    )
    assert status == FAILED
    assert evidence == [
        f"POST {M} #2, row t-new: created topic ' lisbon  TRIP' while its copy t-owed was still preparing (read #1)"
    ]


def test_pairing_again_after_a_preparing_read_fails():
    pair = x(2, "POST", "/oauth/device", 200, {})
    status, evidence = judge("reading.preparing-wait", read(1, preparing=2), pair, view=VIEW)
    assert status == FAILED and evidence == [
        "POST /oauth/device #2: paired again after read #1 said rows were preparing"
    ]
    early = x(0, "POST", "/oauth/device", 200, {})
    assert judge("reading.preparing-wait", early, read(1, preparing=2))[0] == PASSED


def test_waiting_through_a_preparing_read_passes():
    status, evidence = judge("reading.preparing-wait", read(1, preparing=2), view=VIEW)
    assert status == PASSED and evidence == [f"GET {M} #1: 2 rows preparing; nothing saved or recreated in their place"]
    listed = x(1, "GET", M, 200, {"memories": [], "preparing": ["a", "b"], "preparing_others": 3})
    assert judge("reading.preparing-wait", listed)[1] == [
        f"GET {M} #1: 5 rows preparing; nothing saved or recreated in their place"
    ]
    for ok in (
        made(2, "t-new", "Porto"),  # the read served Porto: no copy owed
        made(2, "t-new", "Madrid"),  # no stored topic of that name
        made(0, "t-new", "Lisbon Trip"),  # made before the read
        made(2, "t-owed", "Lisbon Trip"),  # the owed topic is the agent's own
    ):
        assert judge("reading.preparing-wait", read(1, "t-seen", preparing=2), ok, view=VIEW)[0] == PASSED
    assert (
        judge(
            "reading.preparing-wait",
            read(1, "t-seen", preparing=2),
            made(2, "t-new", "Lisbon Trip", start=1.0),
            view=VIEW,
        )[0]
        == PASSED
    )
    assert judge("reading.preparing-wait", read(1), made(2, "t-new", "Lisbon Trip"), view=VIEW)[0] == NOT_EXERCISED
    unanswered = read(1, preparing=2, status=None)
    assert judge("reading.preparing-wait", unanswered, made(2, "t-new", "Lisbon Trip"), view=VIEW)[0] == NOT_EXERCISED
    memories = [*VIEW, {"id": "m1", "kind": "memory", "name": "Lisbon Trip"}]  # only topics are owed by name
    assert (
        judge(
            "reading.preparing-wait",
            read(1, "t-owed", "t-seen", preparing=2),
            made(2, "t-new", "Lisbon Trip"),
            view=memories,
        )[0]
        == PASSED
    )
    many = [read(i, preparing=1) for i in range(1, 6)]
    assert len(judge("reading.preparing-wait", *many)[1]) == 3
    unnamed = Row("t-new", "request.rows[0]", "readable", plaintext={"kind": "topic", "name": "Lisbon Trip"})  # no text
    view = [{"id": "t-owed", "kind": "topic"}]  # a stored topic without a name: owed as ""
    assert (
        judge("reading.preparing-wait", read(1, preparing=2), x(2, "POST", M, 201, {}, [unnamed]), view=view)[0]
        == FAILED
    )


def test_each_preparing_read_is_judged_and_one_bad_read_fails_them_all():
    seq = [read(1, preparing=2), read(5, "t-seen", preparing=1), made(6, "t-new", "Lisbon Trip")]
    status, evidence = judge("reading.preparing-wait", *seq, view=VIEW)
    assert status == FAILED and len(evidence) == 2 and "(read #1)" in evidence[0] and "(read #5)" in evidence[1]


# -- reading.retry-after ---------------------------------------------------------------------------


def test_a_preparing_read_read_again_after_its_wait_passes():
    status, evidence = judge("reading.retry-after", read(1, preparing=2, wait=3, done=1.5), read(5, start=4.5))
    assert status == PASSED and evidence == [f"GET {M} #5: read again 3.0 s after #1 (retry_after_seconds 3)"]
    assert links("reading.retry-after", read(1, preparing=2, wait=3, done=1.5), read(5, start=4.5)) == [(5,)]
    slack = judge(
        "reading.retry-after", read(1, preparing=2, wait=3, done=1.5), read(5, start=4.1)
    )  # 2.6 s: within the slack
    assert slack[0] == PASSED
    no_wait = judge("reading.retry-after", read(1, preparing=2, done=1.5), read(5, start=1.6))
    assert no_wait == (PASSED, [f"GET {M} #5: read again 0.1 s after #1 (retry_after_seconds 0)"])
    undone = judge("reading.retry-after", read(1, preparing=2, wait=3, done=None), read(5, start=4.0))
    assert undone[1] == [f"GET {M} #5: read again 3.0 s after #1 (retry_after_seconds 3)"]


def test_a_preparing_read_read_again_too_soon_fails():
    status, evidence = judge("reading.retry-after", read(1, preparing=2, wait=3, done=1.5), read(5, start=3.9))
    assert status == FAILED and evidence == [f"GET {M} #5: read again 2.4 s after #1; retry_after_seconds was 3"]
    assert links("reading.retry-after", read(1, preparing=2, wait=3, done=1.5), read(5, start=3.9)) == [(5,)]


def test_many_early_reads_are_summed_up_in_one_line():
    seq = [read(i, preparing=1, wait=5) for i in range(1, 6)] + [read(6)]
    status, evidence = judge("reading.retry-after", *seq)
    assert status == FAILED
    assert evidence == [
        f"GET {M} #2: read again 0.9 s after #1; retry_after_seconds was 5",
        "… and 4 more reads as early (#3 to #6)",
    ]
    assert links("reading.retry-after", *seq)[1] == (3, 6)
    two = [read(1, preparing=1, wait=5), read(2, preparing=1, wait=5), read(3)]
    assert judge("reading.retry-after", *two)[1][1] == "… and 1 more reads as early (#3 to #3)"


def test_a_preparing_read_never_read_again_fails_unless_a_write_followed():
    status, evidence = judge("reading.retry-after", read(1), read(2, preparing=2, wait=5))
    assert status == FAILED and evidence == [
        f"GET {M} #2: rows were preparing (retry_after_seconds 5); never read again"
    ]
    wrote = x(3, "POST", M, 201, {})
    assert judge("reading.retry-after", read(2, preparing=2, wait=5), wrote)[0] == NOT_EXERCISED
    before = x(1, "POST", M, 201, {})
    assert judge("reading.retry-after", before, read(2, preparing=2, wait=5))[0] == FAILED
    alongside = x(3, "POST", M, 201, {}, start=2.0)  # sent with the read: not after it
    assert judge("reading.retry-after", read(2, preparing=2, wait=5), alongside)[0] == FAILED


def test_a_read_after_a_write_is_a_read_back_not_a_retry():
    seq = [read(1, preparing=2, wait=5), x(2, "POST", M, 201, {}), read(3)]
    assert judge("reading.retry-after", *seq)[0] == NOT_EXERCISED
    edge = [read(1, preparing=2, wait=5), x(2, "POST", M, 201, {}, start=3.0), read(3)]  # the write sent with the read
    assert judge("reading.retry-after", *edge)[0] == FAILED
    first = [read(1, preparing=2, wait=5, start=1.0), x(2, "POST", M, 201, {}, start=1.0), read(3)]
    assert judge("reading.retry-after", *first)[0] == FAILED


def test_reads_that_were_not_preparing_or_not_answered_are_not_judged():
    assert judge("reading.retry-after", read(1), read(2))[0] == NOT_EXERCISED
    assert judge("reading.retry-after", read(1, preparing=2, wait=5, status=None), read(2))[0] == NOT_EXERCISED
    odd = x(1, "GET", M, 200, ["preparing"])
    assert judge("reading.retry-after", odd, read(2))[0] == NOT_EXERCISED
    first_plain = [read(0), read(1, preparing=2, wait=5, done=1.5), read(5, start=7.0)]
    assert judge("reading.retry-after", *first_plain)[0] == PASSED
    many = [read(i, preparing=1, start=i * 10.0, done=i * 10.0 + 0.1) for i in range(1, 7)] + [read(7, start=70.0)]
    assert len(judge("reading.retry-after", *many)[1]) == 3


# -- what the first run left alive: each a record a user could send --------------------------------


def test_rows_owed_by_id_alone_are_counted():
    listed = x(1, "GET", M, 200, {"memories": [], "preparing": ["a", "b"]})
    assert judge("reading.preparing-wait", listed)[1] == [
        f"GET {M} #1: 2 rows preparing; nothing saved or recreated in their place"
    ]
    with_read = x(1, "POST", "/oauth/device", 200, {}, start=1.0)  # sent with the read, not after its answer
    assert judge("reading.preparing-wait", read(1, preparing=2), with_read)[0] == PASSED


def test_each_preparing_read_is_judged_past_a_read_back():
    seq = [read(1, preparing=2, wait=5), x(2, "POST", M, 201, {}), read(3, preparing=2, wait=5), read(4)]
    status, evidence = judge("reading.retry-after", *seq)
    assert status == FAILED and evidence[0].startswith(f"GET {M} #4: read again")
    edge = [read(1, preparing=2, wait=3, done=1.5), read(5, start=4.0)]  # 2.5 s: the wait less its slack, exactly
    assert judge("reading.retry-after", *edge)[0] == PASSED

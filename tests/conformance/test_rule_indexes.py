"""The indexes that keep the rules linear over a big run (bench/check.py: 10,001 exchanges) judge
as the scans they replace: a write's grantees are those of the latest memory-grantees answer sent
before it; the shared lists of writes and reads follow the record as it grows. A rule failing on
thousands of exchanges keeps reproducers for the first REPRODUCERS_KEPT and counts the rest."""

from __future__ import annotations

from decoy_lab.conformance.report import REPRODUCERS_KEPT, score, text
from decoy_lab.conformance.rulebook import MEMORIES, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.conformance.rules.base import opened_rows, reads, writes
from decoy_lab.conformance.rules.wraps import GRANTEES, grantees_before, listings
from decoy_lab.inspector.flow_record import Row


def x(i, method, path, status=200, response=None, start=None, rows=None):
    t = float(i) if start is None else start
    return Exchange(i, method, path, "", status, "answered", t, t + 0.1, None, response, {}, rows or [], "t1")


def listing(*token_ids):
    return {"grantees": [{"token_id": t, "selectors": {"all": True}} for t in token_ids]}


def test_a_write_gets_the_grantees_of_the_latest_listing_sent_before_it():
    run = Run(
        "other-connections",
        [
            x(1, "POST", MEMORIES, 201),  # before any listing: no grantee
            x(2, "GET", GRANTEES, 200, listing("a")),
            x(3, "POST", MEMORIES, 201),
            x(4, "GET", GRANTEES, 500, None),  # not answered: not a listing
            x(5, "GET", GRANTEES, 200, listing("a", "b")),
            x(6, "POST", MEMORIES, 201, start=5.0),  # sent as #5 was: only what started before it counts
            x(7, "PUT", MEMORIES, 200),
        ],
    )
    index = listings(run)
    seen = {w.id: sorted(grantees_before(run, w, index)) for w in writes(run)}
    assert seen == {1: [], 3: ["a"], 6: ["a"], 7: ["a", "b"]}
    assert all(grantees_before(run, w) == grantees_before(run, w, index) for w in writes(run))


def test_the_shared_lists_follow_the_record_and_are_the_callers_own():
    run = Run("clean", [x(1, "GET", MEMORIES, 200, {"memories": []}), x(2, "POST", MEMORIES, 201)])
    first = writes(run)
    first.clear()  # a rule changing its list changes no other rule's
    assert [w.id for w in writes(run)] == [2]
    run.exchanges.append(x(3, "PUT", MEMORIES, 409, {"code": "REV_CONFLICT"}))
    run.exchanges.append(x(4, "GET", MEMORIES, 200, {"memories": []}))
    assert [w.id for w in writes(run)] == [2] and [w.id for w in writes(run, refused=True)] == [2, 3]
    assert [r.id for r in reads(run)] == [1, 4]


def test_opened_rows_are_those_of_the_request_only():
    sent = Row("r1", "request.rows[0]", "readable")
    answered = Row("r2", "response.memories[0]", "readable")
    assert opened_rows(x(1, "POST", MEMORIES, 201, rows=[sent, answered])) == (sent,)


def test_a_rule_failing_on_every_write_keeps_some_reproducers_and_counts_them_all():
    posts = [
        Exchange(i, "POST", MEMORIES, "", 201, "answered", float(i), i + 0.1, {"rows": [{"id": f"r{i}"}]},
                 {"created": [f"r{i}"]}, {}, [Row(f"r{i}", "request.rows[0]", "readable")], "t1", b'{"rows": []}')
        for i in range(1, 201)
    ]  # fmt: skip
    card = score([BY_ID["rows.self-wrap"]], [Run("clean", posts, exit_code=0)])
    (v,) = card.failed
    assert len(v.evidence) == 200 and len(v.reproducers) == REPRODUCERS_KEPT and v.named == 200
    assert v.to_dict()["exchanges_named"] == 200 and "(+199 more exchanges)" in text(card)

"""`decoy-lab check`'s writes.* rules (conformance/rules/writes.py) on hand-made records: a retry that
rebuilds its rows, a 409 answered without reading, a save never fetched back, an edit that puts back
what the owner removed, a memory another wrote relabelled. Each record breaks (or keeps) one sentence:

000 "Never build new rows for a retry; that makes a second topic." "On `409 REV_CONFLICT`, read current
content and reconcile rather than overwrite the owner's changes." "After saving, retain the returned
memory ID and fetch that row through Decoy." "Keep every other field, and the id." "a connection
editing someone else's memory with Read & write may correct its text, and must leave its labels
byte-identical"
"""

from __future__ import annotations

import re
from typing import Any

from decoy_lab.conformance.rulebook import FAILED, MEMORIES, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.inspector.flow_record import Row

M = MEMORIES


def x(
    i: int, method: str, status: int | None = 200, request: Any = None, response: Any = None, rows=(), ended="answered"
):
    return Exchange(i, method, M, "", status, ended, float(i), i + 0.1, request, response, {}, list(rows), "t1")


def row(rid: str, text: str | None = None, **plain: Any) -> Row:
    return Row(rid, "request.rows[0]", "readable", text=text, plaintext={"kind": "memory", **plain} if plain else None)


def post(i: int, *rows: tuple[str, str], status: int | None = 201, ended: str = "answered", texts=None) -> Exchange:
    """A POST of rows (id, ciphertext), each opened to its text (`texts`, else 'text of <id>')."""
    texts = texts or {}
    sent = [{"id": rid, "ciphertext": c} for rid, c in rows]
    opened = [row(rid, texts.get(rid, f"text of {rid}")) for rid, _ in rows]
    return x(i, "POST", status, {"rows": sent}, {"created": [r for r, _ in rows]} if status else None, opened, ended)


def read(i: int, *ids: str, status: int = 200) -> Exchange:
    return x(i, "GET", status, None, {"memories": [{"id": r} for r in ids]})


def judge(rule: str, *exchanges: Exchange, scenario: str = "clean", **run: Any) -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(Run(scenario, list(exchanges), **run))
    for e in result.evidence:  # a line links each exchange it names (a reproducer each in the report), no other
        named = [int(n) for n in re.findall(r"#(\d+)", e)]
        assert named[0] in e.exchanges and set(e.exchanges) == set(named), e
    return result.status, [str(e) for e in result.evidence]


# -- writes.same-rows-on-retry ---------------------------------------------------------------------


def test_the_same_sealed_rows_sent_again_after_a_lost_answer_pass():
    status, evidence = judge(
        "writes.same-rows-on-retry",
        post(1, ("r1", "c1"), ("r2", "c2"), status=502),
        post(2, ("r1", "c1"), ("r2", "c2")),
    )
    assert status == PASSED
    assert evidence == [f"POST {M} #2 resent the 2 sealed rows of POST {M} #1 (status 502)"]
    cut = post(1, ("r1", "c1"), status=None, ended="cut")
    status, evidence = judge("writes.same-rows-on-retry", cut, post(2, ("r1", "c1"), ("r3", "c3")))
    assert status == PASSED and evidence == [f"POST {M} #2 resent the 1 sealed rows of POST {M} #1 (cut)"]


def test_new_rows_rebuilt_for_a_retry_fail():
    lost = post(
        1,
        ("r1", "c1"),
        ("r2", "c2"),
        status=None,
        ended="no answer",
        texts={"r1": "Pick up the dry cleaning", "r2": "Trips"},
    )
    again = post(2, ("r8", "c8"), ("r9", "c9"), texts={"r8": "Pick up the dry cleaning", "r9": "Trips"})
    status, evidence = judge("writes.same-rows-on-retry", lost, again)
    assert status == FAILED
    assert evidence == [
        f"POST {M} #2, row r8: new rows for a retry of POST {M} #1 (no answer): 2 rebuilt with new ids "
        "(e.g. 'Pick up the dry cleaning')"
    ]
    resealed = post(2, ("r1", "other"))  # the same id sealed again is a new row too
    resealed.rows[0] = row("r9", "text of r1")
    assert judge("writes.same-rows-on-retry", post(1, ("r1", "c1"), status=503), resealed)[0] == FAILED


def test_other_rows_after_a_lost_answer_are_no_retry():
    status, evidence = judge("writes.same-rows-on-retry", post(1, ("r1", "c1"), status=500), post(2, ("r5", "c5")))
    assert status == PASSED
    assert evidence == [f"POST {M} #2 after POST {M} #1 (status 500) carries other rows, none rebuilt"]
    empty = post(1, status=500)  # no rows: nothing to resend
    assert judge("writes.same-rows-on-retry", empty, post(2, ("r5", "c5")))[1][0].endswith(
        "carries other rows, none rebuilt"
    )


def test_a_lost_answer_is_learned_by_a_read_or_not_at_all():
    status, evidence = judge("writes.same-rows-on-retry", post(1, ("r1", "c1"), status=502), read(2, "r1"))
    assert status == PASSED and evidence == [f"POST {M} #1 (status 502): the agent read back to learn the outcome"]
    status, evidence = judge("writes.same-rows-on-retry", read(0), post(1, ("r1", "c1"), status=502))
    assert status == FAILED
    assert evidence == [f"POST {M} #1 (status 502): the outcome was never learned: no resend, no read back"]


def test_known_outcomes_are_not_this_rules_and_passes_are_kept_short():
    assert judge("writes.same-rows-on-retry", post(1, ("r1", "c1")), post(2, ("r2", "c2")))[0] == NOT_EXERCISED
    assert judge("writes.same-rows-on-retry", post(1, ("r1", "c1"), status=400))[0] == NOT_EXERCISED
    many = [post(i, ("r1", "c1"), status=502) for i in range(1, 6)] + [post(6, ("r1", "c1"))]
    assert len(judge("writes.same-rows-on-retry", *many)[1]) == 3
    failing = [post(i, (f"r{i}", "c"), status=502, texts={f"r{i}": "same"}) for i in range(1, 6)]
    failing.append(post(6, ("r9", "c9"), texts={"r9": "same"}))
    assert len(judge("writes.same-rows-on-retry", *failing)[1]) == 5  # every rebuild is named


# -- writes.rev-conflict-reread --------------------------------------------------------------------


def edit(i: int, rid: str = "r1", status: int = 200, text: str | None = None) -> Exchange:
    answer = {"code": "REV_CONFLICT", "current_rev": 3} if status == 409 else {"id": rid}
    return x(i, "PUT", status, {"id": rid, "ciphertext": "…"}, answer, [row(rid, text)] if text else [])


OWNER = [{"kind": "before", "result": "Bring the blue folder"}]


def test_a_conflict_met_by_reading_and_keeping_the_owners_change_passes():
    status, evidence = judge(
        "writes.rev-conflict-reread",
        edit(1, status=409),
        read(2, "r1"),
        edit(3, text="Call Ana. Bring the blue folder"),
        events=OWNER,
    )
    assert status == PASSED
    assert evidence == [f"PUT {M} #3, row r1: re-read after 409 at #1 and kept the owner's change"]
    status, evidence = judge("writes.rev-conflict-reread", edit(1, status=409), read(2, "r1"))
    assert status == PASSED
    assert evidence == [
        f"PUT {M} #1, row r1: 409 REV_CONFLICT; the agent read the current row and did not overwrite it"
    ]


def test_a_conflict_answered_by_sending_again_unread_or_overwriting_fails():
    status, evidence = judge("writes.rev-conflict-reread", edit(1, status=409), edit(2, text="Call Ana"))
    assert status == FAILED
    assert evidence == [f"PUT {M} #2, row r1: sent again after 409 at #1 without reading the current row"]
    status, evidence = judge(
        "writes.rev-conflict-reread", edit(1, status=409), read(2), edit(3, text="Call Ana"), events=OWNER
    )
    assert status == FAILED
    assert evidence == [f"PUT {M} #3, row r1: overwrote the owner's change ('Bring the blue folder' is gone)"]
    status, evidence = judge("writes.rev-conflict-reread", read(0), edit(1, status=409))
    assert status == FAILED and evidence == [f"PUT {M} #1, row r1: 409 REV_CONFLICT; never re-read"]


def test_only_a_read_between_the_conflict_and_the_retry_counts():
    late = judge("writes.rev-conflict-reread", edit(1, status=409), edit(2, text="Call Ana"), read(3))
    assert late[0] == FAILED and "without reading" in late[1][0]
    other = judge("writes.rev-conflict-reread", edit(1, status=409), edit(2, rid="r2"), read(3))
    assert other[0] == PASSED  # r2's PUT is no retry of r1: r1 was re-read and left alone


def test_the_owners_relabel_is_no_text_and_other_refusals_are_no_conflict():
    removed = [{"kind": "before", "result": "removed category:x from r1"}]
    status, _ = judge(
        "writes.rev-conflict-reread", edit(1, status=409), read(2), edit(3, text="Call Ana"), events=removed
    )
    assert status == PASSED
    notfound = x(1, "PUT", 409, {"id": "r1"}, {"code": "ROW_EXISTS"})
    assert judge("writes.rev-conflict-reread", notfound)[0] == NOT_EXERCISED
    gone = x(1, "PUT", 404, {"id": "r1"}, {"code": "REV_CONFLICT"})
    assert judge("writes.rev-conflict-reread", gone)[0] == NOT_EXERCISED
    # a retry the owner's app could not open has no text to judge: kept
    assert judge("writes.rev-conflict-reread", edit(1, status=409), read(2), edit(3), events=OWNER)[0] == PASSED


def test_every_conflict_is_judged_and_passes_kept_short():
    many = [e for i in range(5) for e in (edit(3 * i + 1, rid=f"r{i}", status=409), read(3 * i + 2))]
    assert len(judge("writes.rev-conflict-reread", *many)[1]) == 3
    unread = [edit(i, rid=f"r{i}", status=409) for i in range(1, 6)]
    assert len(judge("writes.rev-conflict-reread", *unread)[1]) == 5


# -- writes.read-back ------------------------------------------------------------------------------


def test_every_saved_row_fetched_back_passes():
    status, evidence = judge("writes.read-back", post(1, ("r1", "c"), ("r2", "c")), read(2, "r1"), read(3, "r2", "r9"))
    assert status == PASSED and evidence == [f"POST {M} #1: all 2 rows fetched back by a later read"]


def test_a_saved_row_never_fetched_back_fails():
    status, evidence = judge("writes.read-back", read(0, "r2"), post(1, ("r1", "c"), ("r2", "c")), read(2, "r1"))
    assert status == FAILED
    assert evidence == [f"POST {M} #1, row r2: saved, and never fetched back (1 of 2 rows)"]
    unanswered = read(2, "r1", status=502)
    assert judge("writes.read-back", post(1, ("r1", "c")), unanswered)[0] == FAILED


def test_only_what_was_saved_is_owed_a_read_back():
    assert judge("writes.read-back", post(1, ("r1", "c"), status=502))[0] == NOT_EXERCISED  # outcome unknown
    assert judge("writes.read-back", post(1, ("r1", "c"), status=400))[0] == NOT_EXERCISED  # refused
    assert judge("writes.read-back", post(1, ("r1", "c"), status=304))[0] == NOT_EXERCISED
    assert judge("writes.read-back", post(1))[0] == NOT_EXERCISED  # no rows
    many = [post(i, (f"r{i}", "c")) for i in range(1, 6)]
    assert len(judge("writes.read-back", *many, read(9, "r1", "r2", "r3", "r4", "r5"))[1]) == 3
    assert len(judge("writes.read-back", *many)[1]) == 5


# -- writes.keep-other-fields ----------------------------------------------------------------------


def put(i: int, status: int = 200, rid: str = "r1", **plain: Any) -> Exchange:
    return x(i, "PUT", status, {"id": rid, "ciphertext": "…"}, {"id": rid}, [row(rid, **plain)])


def saved(i: int = 1, rid: str = "r1", **plain: Any) -> Exchange:
    return x(i, "POST", 201, {"rows": [{"id": rid}]}, {"created": [rid]}, [row(rid, **plain)])


UNLABELLED = [{"kind": "before", "result": "removed category:work from r1"}]
LABELS = ["category:home", "category:work"]


def test_an_edit_that_puts_back_the_owners_removal_fails():
    run = (saved(labels=LABELS), put(2, 409, labels=LABELS), put(3, labels=LABELS))
    status, evidence = judge("writes.keep-other-fields", *run, scenario="owner-unlabels", events=UNLABELLED)
    assert status == FAILED
    assert evidence == [f"PUT {M} #3, row r1: puts back the label 'category:work' the owner removed"]


def test_an_edit_that_keeps_the_removal_and_every_field_passes():
    run = (
        saved(labels=LABELS, metadata={"a": 1}),
        put(2, 409, labels=LABELS),
        put(3, labels=["category:home"], metadata={"a": 1}),
    )
    status, evidence = judge("writes.keep-other-fields", *run, scenario="owner-unlabels", events=UNLABELLED)
    assert status == PASSED
    assert evidence == [f"PUT {M} #3, row r1: kept every field it did not change"]
    # the first PUT is the one the owner's edit lands just before: it cannot have put anything back
    first = (saved(labels=LABELS), put(3, labels=LABELS))
    assert judge("writes.keep-other-fields", *first, events=UNLABELLED)[0] == PASSED
    # another row's removal, or a label not put back
    other = [{"kind": "before", "result": "removed category:work from r2"}]
    plain_run = (saved(labels=LABELS), put(2, 409, labels=LABELS))
    assert judge("writes.keep-other-fields", *plain_run, put(3, labels=LABELS), events=other)[0] == PASSED
    edited = [{"kind": "before", "result": "Bring the folder"}]  # an added text is no removal
    assert judge("writes.keep-other-fields", *plain_run, put(3, labels=LABELS), events=edited)[0] == PASSED


def test_an_edit_that_drops_a_field_it_did_not_change_fails():
    for field in ("metadata", "about_hint"):
        status, evidence = judge(
            "writes.keep-other-fields", saved(labels=LABELS, **{field: "kept"}), put(2, labels=LABELS)
        )
        assert status == FAILED and evidence == [f"PUT {M} #2, row r1: drops {field!r} it did not change"], field
    # the last version counts: dropped in #2 (failed there), absent in #3 as well (nothing left to drop)
    status, evidence = judge(
        "writes.keep-other-fields", saved(metadata="m"), put(2, labels=LABELS), put(3, labels=LABELS)
    )
    assert status == FAILED and len(evidence) == 1 and "#2" in evidence[0]


def test_what_keep_other_fields_cannot_judge():
    assert judge("writes.keep-other-fields", put(2, labels=LABELS))[0] == NOT_EXERCISED  # no version before
    assert judge("writes.keep-other-fields", saved(labels=LABELS), saved(2, labels=LABELS))[0] == NOT_EXERCISED
    opaque = x(2, "PUT", 200, {"id": "r1"}, {}, [Row("r1", "request", "readable", plaintext="bytes")])
    assert judge("writes.keep-other-fields", saved(labels=LABELS), opaque)[0] == NOT_EXERCISED
    sealed = x(2, "PUT", 200, {"id": "r1"}, {}, [Row("r1", "request", "layout only", plaintext={"labels": []})])
    assert judge("writes.keep-other-fields", saved(metadata="m"), sealed)[0] == NOT_EXERCISED
    refused = put(2, 409, labels=LABELS)  # refused writes changed nothing: not judged
    assert judge("writes.keep-other-fields", saved(metadata="m"), refused)[0] == NOT_EXERCISED
    many = [saved(i, rid=f"r{i}", labels=LABELS) for i in range(5)] + [
        put(10 + i, rid=f"r{i}", labels=LABELS) for i in range(5)
    ]
    assert len(judge("writes.keep-other-fields", *many)[1]) == 3
    bad = [saved(i, rid=f"r{i}", metadata="m") for i in range(5)] + [
        put(10 + i, rid=f"r{i}", labels=LABELS) for i in range(5)
    ]
    assert len(judge("writes.keep-other-fields", *bad)[1]) == 5


# -- writes.others-text-only -----------------------------------------------------------------------

BEFORE = [{"id": "m1", "kind": "memory", "labels": ["category:home"]}, {"id": "t1", "kind": "topic", "labels": []}]


def relabel(i: int, labels: list[str], rid: str = "m1", kind: str = "memory", verdict: str = "readable") -> Exchange:
    opened = Row(rid, "request", verdict, plaintext={"kind": kind, "labels": labels})
    return x(i, "PUT", 200, {"id": rid, "ciphertext": "…"}, {"id": rid}, [opened])


def test_correcting_another_writers_memory_keeps_its_labels():
    status, evidence = judge(
        "writes.others-text-only", relabel(1, ["category:home"]), scenario="read-write", app_view_before=BEFORE
    )
    assert status == PASSED
    assert evidence == [f"PUT {M} #1, row m1: corrected a memory another wrote; its labels ['category:home'] unchanged"]


def test_relabelling_another_writers_memory_fails():
    status, evidence = judge(
        "writes.others-text-only", relabel(1, ["category:home", "category:misc"]), app_view_before=BEFORE
    )
    assert status == FAILED
    assert evidence == [
        f"PUT {M} #1, row m1: a memory another wrote, relabelled from ['category:home'] to "
        "['category:home', 'category:misc']: Read & write corrects its text only"
    ]
    # judged against what it was last: a second PUT that keeps the new labels is not a second relabel
    status, evidence = judge(
        "writes.others-text-only", relabel(1, ["category:misc"]), relabel(2, ["category:misc"]), app_view_before=BEFORE
    )
    assert status == FAILED and len(evidence) == 1 and "#2" not in evidence[0]


def test_own_rows_and_rows_it_cannot_see_are_not_judged():
    own = saved(0, rid="m1")
    assert judge("writes.others-text-only", own, relabel(1, ["category:x"]), app_view_before=BEFORE)[0] == NOT_EXERCISED
    assert (
        judge("writes.others-text-only", relabel(1, ["category:x"], rid="m9"), app_view_before=BEFORE)[0]
        == NOT_EXERCISED
    )
    assert (
        judge("writes.others-text-only", relabel(1, ["category:x"], rid="t1", kind="topic"), app_view_before=BEFORE)[0]
        == NOT_EXERCISED
    )
    assert (
        judge("writes.others-text-only", relabel(1, ["category:x"], verdict="layout only"), app_view_before=BEFORE)[0]
        == NOT_EXERCISED
    )
    assert judge("writes.others-text-only", relabel(1, ["category:x"]))[0] == NOT_EXERCISED  # nobody else's rows
    topics_only = [{"id": "m1", "kind": "topic", "labels": ["category:home"]}]
    assert judge("writes.others-text-only", relabel(1, ["category:x"]), app_view_before=topics_only)[0] == NOT_EXERCISED
    saved_post = x(
        1,
        "POST",
        201,
        {"rows": [{"id": "m1"}]},
        {},
        [Row("m1", "request.rows[0]", "readable", plaintext={"kind": "memory", "labels": ["x"]})],
    )
    assert judge("writes.others-text-only", saved_post, app_view_before=BEFORE)[0] == NOT_EXERCISED  # not an edit
    many = [relabel(i, ["category:home"], rid=f"m{i}") for i in range(5)]
    view = [{"id": f"m{i}", "kind": "memory", "labels": ["category:home"]} for i in range(5)]
    assert len(judge("writes.others-text-only", *many, app_view_before=view)[1]) == 3
    wrong = [relabel(i, ["category:x"], rid=f"m{i}") for i in range(5)]
    assert len(judge("writes.others-text-only", *wrong, app_view_before=view)[1]) == 5


# -- what the first run left alive: each a record a user could send --------------------------------


def at(exchange: Exchange, start: float) -> Exchange:
    exchange.start, exchange.done = start, start + 0.1
    return exchange


def test_each_lost_answer_is_judged_with_the_post_that_follows_it():
    first, lost = post(1, ("r0", "c0")), post(2, ("r1", "c1"), status=502)
    status, evidence = judge("writes.same-rows-on-retry", first, lost, post(3, ("r1", "c1")))
    assert status == PASSED and evidence == [f"POST {M} #3 resent the 1 sealed rows of POST {M} #2 (status 502)"]
    assert judge("writes.same-rows-on-retry", first, lost, read(3))[0] == PASSED
    twice = (post(1, ("r1", "c1"), status=502), post(2, ("r1", "c1"), status=502), post(3, ("r1", "c1")))
    assert len(judge("writes.same-rows-on-retry", *twice)[1]) == 2
    alongside = at(read(3), 2.0)  # sent with the lost POST: it could not tell the outcome
    assert judge("writes.same-rows-on-retry", first, lost, alongside)[0] == FAILED


def test_a_retry_line_links_both_the_lost_post_and_the_one_after():
    lost = post(1, ("r1", "c1"), status=502)
    for nxt in (post(2, ("r1", "c1")), post(2, ("r5", "c5"))):
        result = BY_ID["writes.same-rows-on-retry"].evaluate(Run("lost-answers", [lost, nxt]))
        assert result.evidence[0].exchanges == (2, 1)


def test_a_rebuilt_rows_text_is_shown_up_to_forty_characters():
    long = "Pick up the dry cleaning before the shop closes at six"
    lost = post(1, ("r1", "c1"), status=502, texts={"r1": long})
    status, evidence = judge("writes.same-rows-on-retry", lost, post(2, ("r2", "c2"), texts={"r2": long}))
    assert status == FAILED and evidence[0].endswith(f"(e.g. {long[:40]!r})")


def test_each_conflict_is_judged_past_the_writes_around_it():
    first = edit(1, rid="r0")  # an edit that went through, before the conflict
    assert judge("writes.rev-conflict-reread", first, edit(2, status=409))[0] == FAILED
    unread = (edit(1, rid="r1", status=409), edit(2, rid="r2", status=409), edit(3, rid="r1"), edit(4, rid="r2"))
    status, evidence = judge("writes.rev-conflict-reread", *unread)
    assert status == FAILED and len(evidence) == 2
    alongside = at(read(2), 1.0)  # sent with the 409'd PUT: it cannot have seen the owner's change
    assert judge("writes.rev-conflict-reread", edit(1, status=409), alongside)[0] == FAILED
    with_retry = at(read(3), 4.0)  # sent with the retry: too late to reconcile
    assert judge("writes.rev-conflict-reread", edit(1, status=409), with_retry, edit(4, text="Call Ana"))[0] == FAILED


def test_a_conflicts_evidence_names_its_row_and_quotes_fifty_characters():
    nameless = x(1, "PUT", 409, {"ciphertext": "…"}, {"code": "REV_CONFLICT"})
    status, evidence = judge("writes.rev-conflict-reread", nameless)
    assert status == FAILED and evidence == [f"PUT {M} #1, row : 409 REV_CONFLICT; never re-read"]
    note = "Bring the blue folder and the signed lease to the meeting"
    owner = [{"kind": "before", "result": note}, {"kind": "before"}]  # an event without a result adds nothing
    status, evidence = judge(
        "writes.rev-conflict-reread", edit(1, status=409), read(2), edit(3, text="Call Ana"), events=owner
    )
    assert status == FAILED and evidence[0].endswith(f"({note[:50]!r} is gone)")
    kept = edit(3, text=f"Call Ana. {note}")
    assert judge("writes.rev-conflict-reread", edit(1, status=409), read(2), kept, events=owner)[0] == PASSED


def test_a_read_back_counts_by_when_it_started():
    saved_ok = post(1, ("r1", "c"))
    assert judge("writes.read-back", post(1, ("r1", "c"), status=300))[0] == NOT_EXERCISED
    late_listed = at(read(3, "r1"), 0.5)  # recorded after, but sent before the save
    assert judge("writes.read-back", saved_ok, read(2, "r1"), late_listed)[0] == PASSED
    alongside = at(read(2, "r1"), 1.0)
    assert judge("writes.read-back", saved_ok, alongside)[0] == FAILED


def test_keep_other_fields_reads_every_row_of_a_post():
    r0 = Row("r0", "request.rows[0]", "unreadable")
    r1 = row("r1", labels=LABELS, metadata="m")
    both = x(1, "POST", 201, {"rows": [{"id": "r0"}, {"id": "r1"}]}, {}, [r0, r1])
    assert judge("writes.keep-other-fields", both, put(2, labels=LABELS))[0] == FAILED
    r0 = row("r0", labels=LABELS)
    both = x(1, "POST", 201, {"rows": [{"id": "r0"}, {"id": "r1"}]}, {}, [r0, r1])
    assert judge("writes.keep-other-fields", both, put(2, labels=LABELS))[0] == FAILED


def test_others_text_only_reads_every_edit_after_a_save():
    mine = saved(0, rid="m7")
    status, _ = judge("writes.others-text-only", mine, relabel(1, ["category:x"]), app_view_before=BEFORE)
    assert status == FAILED

"""`decoy-lab check`'s rows.* rules (conformance/rules/rows.py) on hand-made records of the rows an
agent writes, as the owner's app opened them: a row without its self_wrap, a row the owner cannot
open, a kid that is not its key's, a memory about two things, a topic name or relation over its cap.
Each record breaks (or keeps) one sentence of 000:

"Both wraps are required." "The server never decrypts, so it accepts a wrongly sealed row and the app
silently can't read it." "`kid` = lowercase hex of the first 8 bytes of SHA-256(key)." "Exactly one
`about` value per memory: the user, one account or one topic." "`relationType` is free text in active
voice, at most 100 characters"
"""

from __future__ import annotations

import re
from typing import Any

from decoy_lab.conformance.rulebook import FAILED, MEMORIES, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.inspector.flow_record import Row
from decoy_lab.vocab import MAX_CIPHERTEXT

M = MEMORIES


def x(i: int, method: str = "POST", status: int = 201, request: Any = None, rows=(), response: Any = None) -> Exchange:
    answer = response if response is not None else ({"code": "BAD_ROW"} if status >= 400 else {})
    return Exchange(i, method, M, "", status, "answered", float(i), i + 0.1, request, answer, {}, list(rows), "t1")


def judge(rule: str, *exchanges: Exchange) -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(Run("clean", list(exchanges)))
    for e in result.evidence:  # a line links the exchange it names (the report's reproducer)
        assert e.exchanges == (int(re.findall(r"#(\d+)", e)[0]),), e
    return result.status, [str(e) for e in result.evidence]


def sent(*rows: dict, i: int = 1, status: int = 201) -> Exchange:
    return x(i, "POST", status, {"rows": list(rows)})


# -- rows.self-wrap --------------------------------------------------------------------------------


def test_a_row_with_its_self_wrap_passes_and_one_without_fails():
    assert judge("rows.self-wrap", sent({"id": "r1", "self_wrap": "AQ…"})) == (PASSED, [f"POST {M} #1, row r1"])
    for wrap in (None, "", 7):
        status, evidence = judge("rows.self-wrap", sent({"id": "r1", "self_wrap": wrap}))
        assert status == FAILED, wrap
        assert evidence == [f"POST {M} #1, row r1: no self_wrap (the agent cannot read its own row back)"]


def test_a_refused_row_without_its_self_wrap_fails_too_and_a_refused_one_with_it_proves_nothing():
    status, evidence = judge("rows.self-wrap", sent({"id": "r1"}, status=400))
    assert status == FAILED
    assert evidence == [
        f"POST {M} #1, row r1: no self_wrap (the agent cannot read its own row back) (refused 400 BAD_ROW)"
    ]
    assert judge("rows.self-wrap", sent({"id": "r1", "self_wrap": "AQ…"}, status=400))[0] == NOT_EXERCISED
    edit = x(1, "PUT", 200, {"id": "r1"})  # an edit may keep the key it has: not this rule's
    assert judge("rows.self-wrap", edit)[0] == NOT_EXERCISED
    many = sent(*({"id": f"r{i}", "self_wrap": "AQ…"} for i in range(5)))
    assert len(judge("rows.self-wrap", many)[1]) == 3
    assert len(judge("rows.self-wrap", sent(*({"id": f"r{i}"} for i in range(5))))[1]) == 5


# -- rows.owner-opens, rows.kid-fingerprint, rows.about-once ---------------------------------------


def opened(verdict: str = "readable", reason: str = "", problem: str = "", rid: str = "r1", **kw: Any) -> Exchange:
    row = Row(rid, "request.rows[0]", verdict, reason=reason, problem=problem, **kw)
    return x(1, "POST", 201, {"rows": [{"id": rid}]}, [row])


def test_a_row_the_owner_cannot_open_fails_in_the_owners_words():
    status, evidence = judge("rows.owner-opens", opened("unreadable", "owner_wrap holds the raw key"))
    assert status == FAILED
    assert evidence == [f"POST {M} #1, row r1: the owner's app cannot open it: owner_wrap holds the raw key"]
    said = "the owner's app cannot open it: the tag does not match"
    assert judge("rows.owner-opens", opened("unreadable", said))[1] == [f"POST {M} #1, row r1: {said}"]


def test_rows_the_owner_opens_pass_and_other_rules_problems_are_theirs():
    assert judge("rows.owner-opens", opened()) == (PASSED, [f"POST {M} #1, row r1"])
    assert judge("rows.owner-opens", opened("unreadable", "x", problem="self_wrap"))[0] == PASSED  # the owner opens it
    for reason in ("about value 'x' is not allowed", "about has two values", "the memory about r1 is not user"):
        assert judge("rows.owner-opens", opened("unreadable", reason))[0] == NOT_EXERCISED, reason  # rows.about-once's
    assert judge("rows.owner-opens", opened("unreadable", "kid", problem="kid_mismatch"))[0] == NOT_EXERCISED
    assert judge("rows.owner-opens", opened("layout only", "no owner key"))[0] == NOT_EXERCISED
    assert judge("rows.owner-opens", opened("unreadable", "the about field is fine, not user"))[0] == FAILED
    many = x(1, "POST", 201, {}, [Row(f"r{i}", "request.rows[0]", "readable") for i in range(5)])
    assert len(judge("rows.owner-opens", many)[1]) == 3
    bad = x(1, "POST", 201, {}, [Row(f"r{i}", "request.rows[0]", "unreadable", reason="x") for i in range(5)])
    assert len(judge("rows.owner-opens", bad)[1]) == 5


def test_a_kid_that_is_not_its_keys_fails():
    why = "kid 00ff does not match the key (kid of the key: a1b2)"
    status, evidence = judge("rows.kid-fingerprint", opened("unreadable", why, problem="kid_mismatch"))
    assert status == FAILED and evidence == [f"POST {M} #1, row r1: {why}"]
    status, evidence = judge("rows.kid-fingerprint", opened(kid="a1b2", opened_by="owner key"))
    assert status == PASSED and evidence == [f"POST {M} #1, row r1: kid a1b2 matches its key"]
    assert judge("rows.kid-fingerprint", opened(kid="a1b2", opened_by="agent key"))[0] == NOT_EXERCISED
    assert judge("rows.kid-fingerprint", opened("unreadable", kid="a1b2", opened_by="owner key"))[0] == NOT_EXERCISED
    many = x(1, "POST", 201, {}, [Row(f"r{i}", "request.rows[0]", "readable", opened_by="owner key") for i in range(5)])
    assert len(judge("rows.kid-fingerprint", many)[1]) == 3


def test_a_memory_about_two_things_fails_and_one_about_one_passes():
    why = "about value ['user', 'topic:t1']: exactly one"
    status, evidence = judge("rows.about-once", opened("unreadable", why))
    assert status == FAILED and evidence == [f"POST {M} #1, row r1: {why}"]
    status, evidence = judge(
        "rows.about-once", opened(opened_by="owner key", plaintext={"kind": "memory", "about": "user"})
    )
    assert status == PASSED and evidence == [f"POST {M} #1, row r1: about user"]
    assert judge("rows.about-once", opened("readable", why))[0] == NOT_EXERCISED  # it opened: no about problem
    topic = opened(opened_by="owner key", plaintext={"kind": "topic", "about": "user"})
    assert judge("rows.about-once", topic)[0] == NOT_EXERCISED
    assert judge("rows.about-once", opened(opened_by="agent key", plaintext={"kind": "memory"}))[0] == NOT_EXERCISED
    rows = [
        Row(f"r{i}", "request.rows[0]", "readable", opened_by="owner key", plaintext={"kind": "memory"})
        for i in range(5)
    ]
    assert len(judge("rows.about-once", x(1, "POST", 201, {}, rows))[1]) == 3


def test_rows_of_a_refused_write_or_of_an_answer_are_not_judged():
    refused = opened("unreadable", "x")
    refused.status, refused.response = 400, {"code": "BAD_ROW"}
    assert judge("rows.owner-opens", refused)[0] == NOT_EXERCISED
    served = x(1, "GET", 200, None, [Row("r1", "response.memories[0]", "unreadable", reason="x")], {"memories": []})
    assert judge("rows.owner-opens", served)[0] == NOT_EXERCISED


# -- rows.size-caps --------------------------------------------------------------------------------


def shaped(kind: str, **plain: Any) -> Exchange:
    return opened(plaintext={"kind": kind, **plain})


def test_a_topic_name_or_relation_over_its_cap_fails():
    status, evidence = judge("rows.size-caps", shaped("topic", name="t" * 201))
    assert status == FAILED and evidence == [f"POST {M} #1, row r1: the topic name is 201 characters; at most 200"]
    status, evidence = judge("rows.size-caps", shaped("link", relation="r" * 101))
    assert status == FAILED and evidence == [f"POST {M} #1, row r1: relationType is 101 characters; at most 100"]
    assert judge("rows.size-caps", shaped("link", relation_type="r" * 101))[0] == FAILED


def test_names_and_relations_at_their_caps_pass():
    status, evidence = judge("rows.size-caps", shaped("topic", name="t" * 200))
    assert status == PASSED and evidence == [f"POST {M} #1, row r1: topic within its caps"]
    assert judge("rows.size-caps", shaped("link", relation="r" * 100))[1] == [
        f"POST {M} #1, row r1: link within its caps"
    ]
    assert judge("rows.size-caps", shaped("memory", name="t" * 300, relation="r" * 300))[0] == NOT_EXERCISED
    assert judge("rows.size-caps", shaped("topic", relation="r" * 300))[0] == PASSED  # a topic has no relation
    assert judge("rows.size-caps", shaped("link", name="t" * 300))[0] == PASSED  # a link has no name
    rows = [Row(f"r{i}", "request.rows[0]", "readable", plaintext={"kind": "topic", "name": "t"}) for i in range(5)]
    assert len(judge("rows.size-caps", x(1, "POST", 201, {}, rows))[1]) == 3


def test_a_ciphertext_over_the_cap_fails():
    over = "A" * ((MAX_CIPHERTEXT + 1) * 4 // 3 + 4)
    status, evidence = judge("rows.size-caps", sent({"id": "r1", "ciphertext": over}))
    assert status == FAILED and evidence == [f"POST {M} #1, row r1: the ciphertext is over {MAX_CIPHERTEXT:,} bytes"]
    at_cap = "A" * (MAX_CIPHERTEXT * 4 // 3)
    assert judge("rows.size-caps", sent({"id": "r1", "ciphertext": at_cap}))[0] == NOT_EXERCISED
    assert judge("rows.size-caps", sent({"id": "r1", "ciphertext": None}))[0] == NOT_EXERCISED


def test_an_about_value_problem_anywhere_in_the_reason_is_about_once():
    why = "the row's about value lists two: exactly one"
    assert judge("rows.about-once", opened("unreadable", why))[0] == FAILED
    assert judge("rows.owner-opens", opened("unreadable", why))[0] == NOT_EXERCISED


def test_a_ciphertext_of_exactly_the_cap_passes():
    exact = next(n for n in range(MAX_CIPHERTEXT * 4 // 3, MAX_CIPHERTEXT * 4 // 3 + 4) if n * 3 // 4 == MAX_CIPHERTEXT)
    assert judge("rows.size-caps", sent({"id": "r1", "ciphertext": "A" * exact}))[0] == NOT_EXERCISED
    assert judge("rows.size-caps", sent({"id": "r1", "ciphertext": "A" * (exact + 2)}))[0] == FAILED

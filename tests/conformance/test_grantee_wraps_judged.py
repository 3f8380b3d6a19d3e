"""`decoy-lab check`'s wraps.* rules on hand-made records of an agent sharing row keys with the other
connections memory-grantees listed: a wrap that goes too far, a reader left out, an added label
whose key never went to the reader it now reaches. Each record breaks (or keeps) one sentence:

000 "It accepts other-recipient wraps only for reasons that recipient holds; `self` cannot be used for
another connection." … "a new key and `kid`, with `owner_wrap`, `self_wrap` and `grantee_wraps` for
every connection the remaining labels still reach."
001 "An edit that only adds labels (moving from `user` to a topic counts as adding) keeps the key; the
writer wraps it to the newly eligible connections with `POST /api/agent/context/memory-wraps`."
"""

from __future__ import annotations

import re
from typing import Any

from decoy_lab.conformance.report import score, text
from decoy_lab.conformance.rulebook import FAILED, MEMORIES, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.inspector.flow_record import Row

GRANTEES = "/api/agent/context/memory-grantees"
SHARE = "/api/agent/context/memory-wraps"
# the connections the agent's memory-grantees read lists (token ids short enough to show whole)
LISTED = {
    "tok-all": {"all": True},
    "tok-food": {"categories": ["food"]},
    "tok-trip": {"topics": ["t1"]},
    "tok-acct": {"account_ids": ["acc1"]},
    "tok-any": {"account_wildcard": True},
    "tok-both": {"topics": ["topic:t1"], "account_ids": ["acc1"]},
}


def x(i: int, method: str, path: str, status: int = 200, request: Any = None, response: Any = None, rows=()):
    return Exchange(i, method, path, "", status, "answered", float(i), i + 0.1, request, response, {}, list(rows), "t1")


def listing(i: int = 1, grants: dict | None = None) -> Exchange:
    grants = LISTED if grants is None else grants
    return x(i, "GET", GRANTEES, 200, None, {"grantees": [{"token_id": t, "selectors": s} for t, s in grants.items()]})


def opened(rid: str, labels: list[str], kind: str = "memory", verdict: str = "readable") -> Row:
    return Row(rid, "request.rows[0]", verdict, plaintext={"kind": kind, "labels": labels})


def wrap(token: str, *via: str) -> dict:
    return {"token_id": token, "wrapped_key": "…", "via": list(via)}


def post(i: int, rid: str, labels: list[str], *wraps: Any, kind: str = "memory", status: int = 201) -> Exchange:
    row = {"id": rid, "kid": f"k-{rid}", "grantee_wraps": list(wraps)}
    return x(i, "POST", MEMORIES, status, {"rows": [row]}, {"created": [rid]}, [opened(rid, labels, kind)])


def put(i: int, rid: str, labels: list[str], *wraps: Any, rotate: bool = False) -> Exchange:
    body: dict[str, Any] = {"id": rid, "ciphertext": "…", "grantee_wraps": list(wraps)}
    if rotate:
        body |= {"kid": "k-new", "owner_wrap": "…", "self_wrap": "…"}
    return x(i, "PUT", MEMORIES, 200, body, {"id": rid}, [opened(rid, labels)])


def share(i: int, rid: str, *tokens: str, status: int = 200, **extra: Any) -> Exchange:
    body = {"row_id": rid, "kid": f"k-{rid}", "wraps": [{"token_id": t, "wrapped_key": "…"} for t in tokens], **extra}
    return x(i, "POST", SHARE, status, body, {"ok": True})


def judge(rule: str, *exchanges: Exchange) -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(Run("other-connections", list(exchanges)))
    for e in result.evidence:  # a line links the exchange it is about (the report's reproducer), and only ones it names
        named = [int(n) for n in re.findall(r"#(\d+)", e)]
        assert named[0] in e.exchanges and set(e.exchanges) <= set(named), e
    return result.status, [str(e) for e in result.evidence]


# -- wraps.not-too-far ---------------------------------------------------------------------------


def test_a_wrap_under_a_reason_its_grant_holds_passes():
    status, evidence = judge(
        "wraps.not-too-far", listing(), post(2, "r1", ["category:food"], wrap("tok-food", "category:food"))
    )
    assert status == PASSED
    assert evidence == [
        "POST /api/agent/context/memories #2, row r1: the wrap to tok-food with via ['category:food']: "
        "a reason its grant holds on the row's labels"
    ]
    # `all` is a reason an all-grant holds on any row not about an account
    assert (
        judge("wraps.not-too-far", listing(), post(2, "r1", ["category:travel"], wrap("tok-all", "all")))[0] == PASSED
    )


def test_a_wrap_to_a_connection_never_listed_fails():
    status, evidence = judge("wraps.not-too-far", listing(), post(2, "r1", ["category:food"], wrap("tok-gone", "all")))
    assert status == FAILED
    assert evidence == [
        "POST /api/agent/context/memories #2, row r1: the wrap to tok-gone with via ['all']: "
        "memory-grantees never listed that connection"
    ]


def test_self_for_another_connection_fails():
    status, evidence = judge("wraps.not-too-far", listing(), post(2, "r1", ["category:food"], wrap("tok-all", "self")))
    assert status == FAILED and evidence[0].endswith("`self` names the agent's own access, never another connection's")


def test_a_wrap_whose_grant_reaches_no_label_of_the_row_goes_too_far():
    status, evidence = judge(
        "wraps.not-too-far", listing(), post(2, "r1", ["category:travel"], wrap("tok-food", "category:food"))
    )
    assert status == FAILED
    assert evidence[0].endswith(
        "its grant (category:food) reaches none of the row's labels ['category:travel']: the key goes too far"
    )


def test_an_all_grant_does_not_reach_a_row_about_an_account():
    row = ["account:acc1"]
    status, evidence = judge("wraps.not-too-far", listing(), post(2, "r1", row, wrap("tok-all", "all")))
    assert status == FAILED and "its grant (all) reaches none of the row's labels" in evidence[0]
    mixed = ["category:misc", "account:acc1"]  # all holds the category, but `all` is no reason on it
    status, evidence = judge("wraps.not-too-far", listing(), post(2, "r1", mixed, wrap("tok-all", "all")))
    assert status == FAILED and evidence[0].endswith(
        "['all'] is not a reason it holds on this row (it holds ['category:misc'])"
    )
    assert judge("wraps.not-too-far", listing(), post(2, "r1", mixed, wrap("tok-all", "category:misc")))[0] == PASSED
    for token in ("tok-acct", "tok-any"):  # the account's own grant, and the wildcard over accounts
        assert judge("wraps.not-too-far", listing(), post(2, "r1", row, wrap(token, "account:acc1")))[0] == PASSED, (
            token
        )
    assert (
        judge("wraps.not-too-far", listing(), post(2, "r1", ["account:acc2"], wrap("tok-acct", "account:acc2")))[0]
        == FAILED
    )


def test_a_reason_the_grant_does_not_hold_or_none_at_all_fails():
    status, evidence = judge("wraps.not-too-far", listing(), post(2, "r1", ["category:food"], wrap("tok-food", "all")))
    assert status == FAILED
    assert evidence[0].endswith("['all'] is not a reason it holds on this row (it holds ['category:food'])")
    status, evidence = judge("wraps.not-too-far", listing(), post(2, "r1", ["category:food"], wrap("tok-food")))
    assert status == FAILED and evidence[0].endswith(
        "no reason is not a reason it holds on this row (it holds ['category:food'])"
    )
    # one right reason beside a wrong one is still a wrong reason
    both = wrap("tok-food", "category:food", "category:travel")
    assert judge("wraps.not-too-far", listing(), post(2, "r1", ["category:food"], both))[0] == FAILED


def test_topic_grants_reach_their_topic_written_either_way():
    for token in ("tok-trip", "tok-both", "tok-all"):  # topics listed as "t1" and as "topic:t1"; all holds topics
        status, _ = judge("wraps.not-too-far", listing(), post(2, "r1", ["topic:t1"], wrap(token, "topic:t1")))
        assert status == PASSED, token
    assert judge("wraps.not-too-far", listing(), post(2, "r1", ["topic:t2"], wrap("tok-trip", "topic:t2")))[0] == FAILED
    # a label of no known family is held by no grant, not even all
    assert judge("wraps.not-too-far", listing(), post(2, "r1", ["user"], wrap("tok-food", "user")))[0] == FAILED


def test_a_link_is_reached_only_by_a_grant_that_holds_both_its_ends():
    ends = ["topic:t1", "account:acc1"]
    status, evidence = judge(
        "wraps.not-too-far", listing(), post(2, "l1", ends, wrap("tok-both", "and:topic:t1+account:acc1"), kind="link")
    )
    assert status == PASSED, evidence
    for token in ("tok-trip", "tok-acct", "tok-all"):  # one end only; all reaches no account
        status, evidence = judge(
            "wraps.not-too-far", listing(), post(2, "l1", ends, wrap(token, "topic:t1"), kind="link")
        )
        assert status == FAILED and "reaches none of the row's labels" in evidence[0], token
    # a link with one end is reached by that end's reason (and an all-grant by `all` too)
    one = post(2, "l1", ["topic:t1"], wrap("tok-trip", "topic:t1"), kind="link")
    assert judge("wraps.not-too-far", listing(), one)[0] == PASSED
    status, evidence = judge(
        "wraps.not-too-far", listing(), post(2, "l1", ["topic:t1"], wrap("tok-all", "self"), kind="link")
    )
    assert status == FAILED and "`self`" in evidence[0]
    status, evidence = judge(
        "wraps.not-too-far", listing(), post(2, "l1", ["topic:t1"], wrap("tok-all", "topic:t1", "all"), kind="link")
    )
    assert status == PASSED, evidence
    # a link with no end is reached by nothing but an all-grant's `all`
    status, evidence = judge(
        "wraps.not-too-far", listing(), post(2, "l1", ["category:x"], wrap("tok-food", "all"), kind="link")
    )
    assert status == FAILED and "reaches none" in evidence[0]


def test_the_listing_that_counts_is_the_latest_sent_before_the_write():
    late = listing(5)  # sent after the write: the agent could not have known it
    assert (
        judge("wraps.not-too-far", post(2, "r1", ["category:food"], wrap("tok-food", "category:food")), late)[0]
        == FAILED
    )
    shrunk = listing(3, {"tok-all": {"all": True}})  # the latest listing no longer holds tok-food
    status, evidence = judge(
        "wraps.not-too-far", listing(), shrunk, post(4, "r1", ["category:food"], wrap("tok-food", "category:food"))
    )
    assert status == FAILED and "never listed" in evidence[0]
    refused = x(3, "GET", GRANTEES, 500, None, None)  # no answer: not a listing
    assert (
        judge(
            "wraps.not-too-far", listing(), refused, post(4, "r1", ["category:food"], wrap("tok-food", "category:food"))
        )[0]
        == PASSED
    )


def test_what_no_rule_of_wraps_can_judge_is_not_exercised():
    bare = post(2, "r1", ["category:food"])  # no listing, no wrap: the owner's phone shares later
    assert judge("wraps.not-too-far", bare)[0] == NOT_EXERCISED
    assert judge("wraps.every-reader", bare)[0] == NOT_EXERCISED
    sealed = post(2, "r1", ["category:food"], wrap("tok-food", "category:food"))
    sealed.rows[0] = opened("r1", ["category:food"], verdict="layout only")  # the check could not open it
    assert judge("wraps.not-too-far", listing(), sealed)[0] == NOT_EXERCISED
    refused = post(2, "r1", ["category:travel"], wrap("tok-food", "all"), status=400)  # stored nothing
    assert judge("wraps.not-too-far", listing(), refused)[0] == NOT_EXERCISED
    odd = post(2, "r1", ["category:food"], "not a wrap")
    assert judge("wraps.not-too-far", listing(), odd)[0] == NOT_EXERCISED


def test_a_wrap_with_no_listing_at_all_is_judged_too():
    status, evidence = judge("wraps.not-too-far", post(2, "r1", ["category:food"], wrap("tok-food", "category:food")))
    assert status == FAILED and "memory-grantees never listed that connection" in evidence[0]


def test_the_grant_is_named_in_words_and_the_evidence_kept_short():
    grants = {"tok-mix": {"categories": ["food", "wine"], "topics": ["t9"], "account_ids": ["acc9"]}, "tok-none": {}}
    status, evidence = judge(
        "wraps.not-too-far", listing(1, grants), post(2, "r1", ["category:travel"], wrap("tok-mix", "all"))
    )
    assert "its grant (category:food, category:wine, t9, account:acc9) reaches none" in evidence[0]
    status, evidence = judge(
        "wraps.not-too-far", listing(1, grants), post(2, "r1", ["category:travel"], wrap("tok-none", "all"))
    )
    assert "its grant (nothing) reaches none" in evidence[0]
    many = [post(i, f"r{i}", ["category:travel"], wrap("tok-food", "all")) for i in range(2, 8)]
    status, evidence = judge("wraps.not-too-far", listing(), *many)
    assert status == FAILED and len(evidence) == 4  # the first four of six
    fine = [post(i, f"r{i}", ["category:food"], wrap("tok-food", "category:food")) for i in range(2, 8)]
    status, evidence = judge("wraps.not-too-far", listing(), *fine)
    assert status == PASSED and len(evidence) == 3


# -- wraps.every-reader --------------------------------------------------------------------------


def test_wraps_sent_at_once_must_reach_every_connection_the_labels_reach():
    status, evidence = judge("wraps.every-reader", listing(), post(2, "r1", ["category:food"], wrap("tok-all", "all")))
    assert status == FAILED
    assert evidence == [
        "POST /api/agent/context/memories #2, row r1: the row's key is wrapped to 1 of the 2 connections its "
        "labels ['category:food'] reach; not to tok-food (category:food)"
    ]
    every = post(2, "r1", ["category:food"], wrap("tok-all", "all"), wrap("tok-food", "category:food"))
    status, evidence = judge("wraps.every-reader", listing(), every)
    assert status == PASSED
    assert evidence == [
        "POST /api/agent/context/memories #2, row r1: the row's key wrapped to all 2 connections its labels reach"
    ]


def test_a_rotation_must_wrap_its_new_key_to_every_reader_left():
    rotation = put(3, "r1", ["category:food"], rotate=True)  # new kid and owner_wrap, no grantee wrap
    status, evidence = judge("wraps.every-reader", listing(), rotation)
    assert status == FAILED
    assert "the new key of a rotation is wrapped to 0 of the 2 connections" in evidence[0]
    assert "not to tok-all, tok-food (all)" in evidence[0]
    plain_edit = put(3, "r1", ["category:food"])  # no new key, no wraps: nothing to judge
    assert judge("wraps.every-reader", listing(), plain_edit)[0] == NOT_EXERCISED
    kid_only = put(3, "r1", ["category:food"])
    kid_only.request["kid"] = "k-new"  # a kid without owner_wrap is no rotation this rule judges
    assert judge("wraps.every-reader", listing(), kid_only)[0] == NOT_EXERCISED
    post_with_kid = post(3, "r1", ["category:food"])
    post_with_kid.request["rows"][0]["owner_wrap"] = "…"  # a POST is never a rotation
    assert judge("wraps.every-reader", listing(), post_with_kid)[0] == NOT_EXERCISED


def test_wraps_to_a_row_no_connection_reaches_are_not_this_rules():
    # the wraps go too far (wraps.not-too-far); no reader is missed
    assert (
        judge(
            "wraps.every-reader",
            listing(1, {"tok-food": {"categories": ["food"]}}),
            post(2, "r1", ["category:x"], wrap("tok-food", "all")),
        )[0]
        == NOT_EXERCISED
    )


def test_every_reader_keeps_its_evidence_short():
    many = [post(i, f"r{i}", ["category:food"], wrap("tok-all", "all")) for i in range(2, 8)]
    assert len(judge("wraps.every-reader", listing(), *many)[1]) == 4
    fine = [
        post(i, f"r{i}", ["category:food"], wrap("tok-all", "all"), wrap("tok-food", "category:food"))
        for i in range(2, 8)
    ]
    assert len(judge("wraps.every-reader", listing(), *fine)[1]) == 3


# -- wraps.share-on-add --------------------------------------------------------------------------


def test_a_label_added_shares_the_key_with_the_connection_it_newly_reaches():
    saved = post(2, "r1", ["category:travel"])
    added = put(4, "r1", ["category:travel", "category:food"])  # food newly reaches tok-food (tok-all had it)
    status, evidence = judge("wraps.share-on-add", listing(), saved, added, share(5, "r1", "tok-food"))
    assert status == PASSED
    assert evidence == [
        "PUT /api/agent/context/memories #4, row r1: added ['category:food']; POST "
        "/api/agent/context/memory-wraps #5 shared its key with the 1 connection(s) they newly reach"
    ]
    assert BY_ID["wraps.share-on-add"].evaluate(
        Run("other-connections", [listing(), saved, added, share(5, "r1", "tok-food")])
    ).evidence[0].exchanges == (4, 5)


def test_a_label_added_and_never_shared_fails():
    saved, added = post(2, "r1", ["category:travel"]), put(4, "r1", ["category:travel", "category:food"])
    status, evidence = judge("wraps.share-on-add", listing(), saved, added)
    assert status == FAILED
    assert evidence == [
        "PUT /api/agent/context/memories #4, row r1: added ['category:food']; its key never went to 1 "
        "connection(s) the new labels newly reach (tok-food: category:food) with POST /api/agent/context/memory-wraps"
    ]
    early = share(3, "r1", "tok-food")  # before the edit: not a share of the added label
    assert judge("wraps.share-on-add", listing(), saved, early, added)[0] == FAILED
    other = share(5, "r2", "tok-food")  # another row's key
    assert judge("wraps.share-on-add", listing(), saved, added, other)[0] == FAILED
    refused = share(5, "r1", "tok-food", status=403)
    assert judge("wraps.share-on-add", listing(), saved, added, refused)[0] == FAILED


def test_edits_that_add_nothing_new_to_share_are_not_judged():
    saved = post(2, "r1", ["category:travel"])
    for edit in (
        put(4, "r1", ["category:travel"]),  # nothing added
        put(4, "r1", ["category:food"]),  # travel removed: a rotation (writes.rotat*)
        put(4, "r1", ["category:travel", "category:food"], rotate=True),  # a new key with its own wraps
        put(4, "r1", ["category:travel", "category:wine"]),  # wine reaches no new connection
    ):
        assert judge("wraps.share-on-add", listing(), saved, edit)[0] == NOT_EXERCISED, edit.request
    # an edit of a row the agent never posted here is not its to share
    assert (
        judge("wraps.share-on-add", listing(), put(4, "r1", ["category:travel", "category:food"]))[0] == NOT_EXERCISED
    )
    topic = post(2, "t1", ["category:travel"], kind="topic")
    assert (
        judge("wraps.share-on-add", listing(), topic, put(4, "t1", ["category:travel", "category:food"]))[0]
        == NOT_EXERCISED
    )


def test_only_the_author_shares_a_key_and_only_row_kid_and_wraps():
    saved = post(2, "r1", ["category:travel"])
    status, evidence = judge("wraps.share-on-add", listing(), saved, share(3, "r9", "tok-food"))
    assert status == FAILED
    assert evidence == [
        "POST /api/agent/context/memory-wraps #3: shares the key of row r9, which the agent did not write "
        "(memory-wraps is for the author only)"
    ]
    before = share(1, "r1", "tok-food")  # before the agent wrote r1
    assert judge("wraps.share-on-add", saved, before)[0] == FAILED
    status, evidence = judge("wraps.share-on-add", listing(), saved, share(3, "r1", "tok-food", owner_wrap="…"))
    assert status == FAILED
    assert evidence == ["POST /api/agent/context/memory-wraps #3: sends ['owner_wrap'] besides row_id, kid and wraps"]
    assert judge("wraps.share-on-add", listing(), saved, share(3, "r1", "tok-food"))[0] == NOT_EXERCISED


def test_the_scorecard_names_the_failed_wrap_rule():
    run = Run(
        "other-connections",
        [listing(), post(2, "r1", ["category:travel"], wrap("tok-food", "category:food"))],
        exit_code=0,
    )
    report = text(score([BY_ID["wraps.not-too-far"]], [run]))
    assert "wraps.not-too-far" in report and "the key goes too far" in report


def at(exchange: Exchange, start: float) -> Exchange:
    exchange.start, exchange.done = start, start + 0.1
    return exchange


def test_every_wrap_and_row_of_a_record_is_judged_past_the_ones_skipped():
    first = post(1, "r0", ["category:food"])  # before any listing, no wrap: skipped
    later = post(3, "r1", ["category:travel"], "junk", wrap("tok-gone", "all"), wrap("tok-food", "category:food"))
    status, evidence = judge("wraps.not-too-far", first, listing(2), later)
    assert status == FAILED and len(evidence) == 2
    assert "never listed" in evidence[0] and "the key goes too far" in evidence[1]
    bare = post(3, "r1", ["category:food"])  # no wraps at all: the owner's phone shares; the next row is judged
    status, evidence = judge(
        "wraps.every-reader", listing(), bare, post(4, "r2", ["category:food"], wrap("tok-all", "all"))
    )
    assert status == FAILED and "#4, row r2" in evidence[0]


def test_only_an_answered_get_of_memory_grantees_is_a_listing():
    good = wrap("tok-food", "category:food")
    others = [
        x(2, "GET", MEMORIES, 200, None, {"memories": []}),  # another read
        x(3, "POST", GRANTEES, 405, {}, {"code": "METHOD_NOT_ALLOWED"}),  # the wrong method
        x(4, "GET", GRANTEES, 500, None, {"code": "INTERNAL"}),  # no answer, even with a body
    ]
    for other in others:
        assert judge("wraps.not-too-far", listing(), other, post(5, "r1", ["category:food"], good))[0] == PASSED, other


def test_the_connections_missing_are_all_named():
    grants = {"tok-food": {"categories": ["food"]}, "tok-f2": {"categories": ["food"]}, "tok-all": {"all": True}}
    saved, added = post(2, "r1", ["category:travel"]), put(4, "r1", ["category:travel", "category:food"])
    status, evidence = judge("wraps.share-on-add", listing(1, grants), saved, added)
    assert (
        status == FAILED
        and "never went to 2 connection(s) the new labels newly reach (tok-f2, tok-food: category:food)" in evidence[0]
    )


def test_a_connection_that_already_reached_the_row_is_not_newly_reached():
    grants = {"tok-tw": {"categories": ["travel", "food"]}}  # held travel: it had the key all along
    saved, added = post(2, "r1", ["category:travel"]), put(4, "r1", ["category:travel", "category:food"])
    assert judge("wraps.share-on-add", listing(1, grants), saved, added)[0] == NOT_EXERCISED


def test_each_memory_row_of_a_post_is_its_authors():
    two = post(2, "t1", ["category:travel"], kind="topic")
    two.request["rows"].append({"id": "r1"})
    two.request["rows"].append({"id": "r2"})
    two.rows += [opened("r1", ["category:travel"]), opened("r2", ["category:travel"])]
    added = put(4, "r2", ["category:travel", "category:food"])
    status, evidence = judge("wraps.share-on-add", listing(), two, added)
    assert status == FAILED and "#4, row r2: added ['category:food']" in evidence[0]
    assert judge("wraps.share-on-add", listing(), two, share(3, "r1", "tok-food"))[0] == NOT_EXERCISED


def test_a_share_sent_with_the_edit_or_the_post_is_not_after_it():
    saved, added = post(2, "r1", ["category:travel"]), put(4, "r1", ["category:travel", "category:food"])
    same = at(share(5, "r1", "tok-food"), 4.0)  # started as the edit did: not a share of what it added
    assert judge("wraps.share-on-add", listing(), saved, added, same)[0] == FAILED
    with_post = at(share(3, "r1", "tok-food"), 2.0)  # the row's author, started with its POST
    assert judge("wraps.share-on-add", listing(), saved, with_post)[0] == NOT_EXERCISED


def test_a_share_whose_body_is_not_json_names_no_row_of_the_agents():
    status, evidence = judge(
        "wraps.share-on-add", post(2, "r1", ["category:travel"]), x(3, "POST", SHARE, 200, None, {})
    )
    assert status == FAILED
    assert evidence == [
        "POST /api/agent/context/memory-wraps #3: shares the key of row , which the agent did not write "
        "(memory-wraps is for the author only)"
    ]


def test_share_on_add_keeps_four_failures_and_three_passes():
    saved = post(1, "r1", ["category:travel"])
    wrong = [share(i, f"r{i}", "tok-food") for i in range(2, 8)]
    assert len(judge("wraps.share-on-add", saved, *wrong)[1]) == 4
    rows = [post(1 + i, f"r{i}", ["category:travel"]) for i in range(5)]
    edits = [put(10 + i, f"r{i}", ["category:travel", "category:food"]) for i in range(5)]
    shares = [share(20 + i, f"r{i}", "tok-food") for i in range(5)]
    status, evidence = judge("wraps.share-on-add", listing(0), *rows, *edits, *shares)
    assert status == PASSED and len(evidence) == 3

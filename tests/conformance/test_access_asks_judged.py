"""`decoy-lab check`'s access.* rules (conformance/rules/access.py) on hand-made records of an agent
meeting missing access: a refusal's permission_request sent on or changed, a re-pairing, an ask
polled too fast or dropped, policies never read, a denial asked again, an ask without a reason, with
old keys, or for what the connection holds. Each record breaks (or keeps) one sentence of 001:

"Send `permission_request` as the body of `grant-request`, unchanged, then retry the call." "Poll `GET
/api/agent/grant-request?id=` every few seconds for up to about ten minutes." "Read `GET
/api/agent/policies` for what you now hold" "A denial stands: do not ask again unless the person
agrees." "Send `permissions`, one selection, and a `reason`" "never send `resource_id`, `kind` or
`level` with `permissions`." "Access this connection already holds is never asked again."
"""

from __future__ import annotations

import re
from typing import Any

from decoy_lab.conformance.rulebook import FAILED, MEMORIES, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID

GR = "/api/agent/grant-request"
POLICIES = "/api/agent/policies"
WANTED = {"permissions": ["memory.save"], "reason": "to save what you asked"}
RID = "0b7c6a52-1111-4000-8000-000000000001"


def x(i: int, method: str, path: str, status: int | None = 200, request: Any = None, response: Any = None,
      query: str = "", start: float | None = None, done: float | None = -1.0) -> Exchange:  # fmt: skip
    t = float(i) if start is None else start
    end = t + 0.1 if done == -1.0 else done
    ended = "answered" if status is not None else "no answer"
    return Exchange(i, method, path, query, status, ended, t, end, request, response, {}, [], "t1")


def judge(rule: str, *exchanges: Exchange, timed_out: bool = False) -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(Run("missing-permission", list(exchanges), timed_out=timed_out))
    for e in result.evidence:  # a line links the exchange it names first (the report's reproducer)
        assert int(re.findall(r"#(\d+)", e)[0]) in e.exchanges, e
    return result.status, [str(e) for e in result.evidence]


def links(rule: str, *exchanges: Exchange) -> list[tuple[int, ...]]:
    return [e.exchanges for e in BY_ID[rule].evaluate(Run("missing-permission", list(exchanges))).evidence]


def refusal(i: int, wanted: Any = None, **kw: Any) -> Exchange:
    body = {"code": "INSUFFICIENT_GRANT", "permission_request": WANTED if wanted is None else wanted}
    return x(i, "POST", MEMORIES, 403, {"rows": []}, body, **kw)


def ask(i: int, body: Any = None, status: int = 201, answer: Any = None, **kw: Any) -> Exchange:
    reply = {"status": "pending", "request_id": RID} if answer is None else answer
    return x(i, "POST", GR, status, WANTED if body is None else body, reply, **kw)


def pair(i: int, body: Any = None, **kw: Any) -> Exchange:
    return x(i, "POST", "/oauth/device", 200, body or {"client_id": "a"}, {"device_code": "d"}, **kw)


def poll(i: int, state: str = "pending", rid: str = RID, **kw: Any) -> Exchange:
    return x(i, "GET", GR, 200, None, {"status": state}, query=f"id={rid}", **kw)


# -- access.grant-request-not-repair ---------------------------------------------------------------


def test_the_refusals_request_sent_unchanged_then_the_call_retried_passes():
    retry = x(3, "POST", MEMORIES, 201, {"rows": []}, {})
    status, evidence = judge("access.grant-request-not-repair", refusal(1), ask(2), retry)
    assert status == PASSED
    assert evidence == [
        f"POST {GR} #2: sent the permission_request of POST {MEMORIES} #1 unchanged, then retried (POST {MEMORIES} #3, 201)"
    ]
    status, evidence = judge("access.grant-request-not-repair", refusal(1), ask(2))
    assert evidence == [f"POST {GR} #2: sent the permission_request of POST {MEMORIES} #1 unchanged"]
    # the same refusal met twice before the owner answered is one case
    assert len(judge("access.grant-request-not-repair", refusal(1), refusal(2), ask(3))[1]) == 1
    other_call = x(3, "GET", MEMORIES, 200, None, {})  # another call is no retry
    assert judge("access.grant-request-not-repair", refusal(1), ask(2), other_call)[1][0].endswith("unchanged")


def test_a_changed_request_no_request_or_a_re_pairing_fails():
    status, evidence = judge("access.grant-request-not-repair", refusal(1), ask(2, {"permissions": ["memory.read"]}))
    assert status == FAILED
    assert evidence == [f"POST {GR} #2: the grant request is not the permission_request of #1 unchanged"]
    status, evidence = judge("access.grant-request-not-repair", refusal(1))
    assert status == FAILED
    assert evidence == [
        f"POST {MEMORIES} #1 (INSUFFICIENT_GRANT): no grant request was sent for its permission_request"
    ]
    status, evidence = judge("access.grant-request-not-repair", refusal(1), pair(2), ask(3))
    assert status == FAILED
    assert evidence == [
        f"POST /oauth/device #2: paired again for access after POST {MEMORIES} #1 (INSUFFICIENT_GRANT) instead of asking"
    ]
    assert judge("access.grant-request-not-repair", refusal(1), pair(2))[0] == FAILED
    assert judge("access.grant-request-not-repair", refusal(1), ask(2), pair(3))[0] == PASSED  # asked first
    assert (
        judge("access.grant-request-not-repair", pair(0), at(ask(1), 0.5), refusal(2))[0] == FAILED
    )  # before: not an answer


def test_only_a_403_carrying_a_request_is_judged():
    assert judge("access.grant-request-not-repair", x(1, "POST", MEMORIES, 403, {}, {"code": "X"}))[0] == NOT_EXERCISED
    assert (
        judge("access.grant-request-not-repair", x(1, "POST", MEMORIES, 400, {}, {"permission_request": WANTED}))[0]
        == NOT_EXERCISED
    )
    assert judge("access.grant-request-not-repair", refusal(1, wanted="memory.save"))[0] == NOT_EXERCISED
    listed = x(1, "POST", MEMORIES, 403, {}, ["permission_request"])
    assert judge("access.grant-request-not-repair", listed)[0] == NOT_EXERCISED
    wrong_path = x(2, "POST", "/api/agent/grant-requests", 201, WANTED, {})
    assert judge("access.grant-request-not-repair", refusal(1), wrong_path)[0] == FAILED
    polled = x(2, "GET", GR, 200, WANTED, {})  # a poll is not an ask
    assert judge("access.grant-request-not-repair", refusal(1), polled)[0] == FAILED
    two = [refusal(1), ask(2), refusal(3, {"permissions": ["memory.read"]}), ask(4, {"permissions": ["memory.read"]})]
    assert len(judge("access.grant-request-not-repair", *two)[1]) == 2
    many = [
        e
        for i in range(5)
        for e in (refusal(2 * i + 1, {"permissions": [f"p{i}"]}), ask(2 * i + 2, {"permissions": [f"p{i}"]}))
    ]
    assert len(judge("access.grant-request-not-repair", *many)[1]) == 3


# -- access.poll-grant-request ---------------------------------------------------------------------


def test_an_ask_polled_every_few_seconds_until_answered_passes():
    seq = [ask(1, done=1.1), poll(3, done=3.1), poll(5, "approved")]
    status, evidence = judge("access.poll-grant-request", *seq)
    assert status == PASSED
    assert evidence == [f"POST {GR} #1: polled 2 times, each a second or more apart, until approved"]
    assert links("access.poll-grant-request", *seq) == [(1, 5)]
    exact = [ask(1, done=1.0), poll(2, start=1.75, done=2.0), poll(3, "denied", start=2.75)]  # 0.75 s: within the slack
    assert judge("access.poll-grant-request", *exact)[0] == PASSED
    joined = ask(1, status=409, answer={"code": "GRANT_ALREADY_REQUESTED", "request_id": RID})
    assert judge("access.poll-grant-request", joined, poll(3, "approved"))[0] == PASSED
    renewal = ask(1, status=200, answer={"status": "pending", "request_id": RID, "renewal": True})
    assert judge("access.poll-grant-request", renewal, poll(3, "approved"))[0] == PASSED
    timed = judge("access.poll-grant-request", ask(1), poll(3), timed_out=True)  # the run ended first
    assert timed == (PASSED, [f"POST {GR} #1: polled 1 times, each a second or more apart, until pending"])
    unanswered = x(3, "GET", GR, None, None, None, query=f"id={RID}")
    assert judge("access.poll-grant-request", ask(1), unanswered)[1][0].endswith("until the run ended")


def test_an_ask_never_polled_polled_fast_or_dropped_fails():
    status, evidence = judge("access.poll-grant-request", poll(0), ask(1))
    assert status == FAILED
    assert evidence == [f"POST {GR} #1: request 0b7c6a52… pending; never polled ({GR}?id=) for the owner's answer"]
    fast = [
        ask(1, done=1.1),
        poll(2, start=1.2, done=1.3),
        poll(3, start=1.4, done=1.5),
        poll(4, "approved", start=3.0),
    ]
    status, evidence = judge("access.poll-grant-request", *fast)
    assert status == FAILED
    assert evidence == [f"GET {GR} #2: polled 0.10 s after #1 (2 polls under 1 s apart): not every few seconds"]
    assert links("access.poll-grant-request", *fast) == [(2, 1)]
    undone = [ask(1, done=None), poll(2, start=1.5)]  # no answer recorded: from its start
    assert judge("access.poll-grant-request", *undone)[1][0].startswith(f"GET {GR} #2: polled 0.50 s after #1")
    status, evidence = judge("access.poll-grant-request", ask(1), poll(3), poll(5))
    assert status == FAILED
    assert evidence == [
        f"GET {GR} #5: still pending, and the agent stopped polling: the request stays open until the owner answers"
    ]
    other = poll(3, "approved", rid="ffffffff-0000")
    assert judge("access.poll-grant-request", ask(1), other)[0] == FAILED
    no_id = x(3, "GET", GR, 200, None, {"status": "approved"})
    assert judge("access.poll-grant-request", ask(1), no_id)[0] == FAILED


def test_only_an_ask_left_open_is_owed_polls():
    for answer in (
        {"status": "already_granted", "request_id": RID},
        {"status": "pending"},
        {"status": "pending", "request_id": 7},
        ["pending"],
    ):
        assert judge("access.poll-grant-request", ask(1, answer=answer), poll(3))[0] == NOT_EXERCISED, answer
    joined = [
        ask(1, done=1.1),
        ask(2, status=409, answer={"code": "GRANT_ALREADY_REQUESTED", "request_id": RID}),
        poll(4, "approved"),
    ]
    assert len(judge("access.poll-grant-request", *joined)[1]) == 1  # one request, one case
    other_q = x(3, "GET", GR, 200, None, {"status": "approved"}, query=f"x=1&id={RID}")
    assert judge("access.poll-grant-request", ask(1), other_q)[0] == PASSED
    many = [
        e
        for i in range(5)
        for e in (
            ask(10 * i, answer={"status": "pending", "request_id": f"r{i}"}),
            poll(10 * i + 3, "approved", rid=f"r{i}"),
        )
    ]
    assert len(judge("access.poll-grant-request", *many)[1]) == 3
    alongside = poll(1, "approved", start=1.0)  # sent with the ask: not a poll of its answer
    assert judge("access.poll-grant-request", ask(1), alongside)[0] == FAILED


# -- access.read-policies, access.denial-stands ----------------------------------------------------


def test_policies_read_after_an_approval_passes_and_never_read_fails():
    status, evidence = judge("access.read-policies", ask(1), poll(2, "approved"), x(3, "GET", POLICIES, 200, None, {}))
    assert status == PASSED and evidence == [f"GET {POLICIES} #3: read what it holds after GET {GR} #2 (approved)"]
    assert links("access.read-policies", poll(2, "resolved"), x(3, "GET", POLICIES, 200, None, {})) == [(3, 2)]
    status, evidence = judge(
        "access.read-policies",
        x(0, "GET", POLICIES, 200, None, {}),
        poll(2, "resolved"),
        x(3, "POST", POLICIES, 200, {}, {}),
    )
    assert status == FAILED
    assert evidence == [
        f"GET {GR} #2: request 0b7c6a52… resolved; {POLICIES} was never read for what the owner granted"
    ]
    assert judge("access.read-policies", poll(2), poll(3, "denied"))[0] == NOT_EXERCISED
    unanswered = x(2, "GET", GR, None, None, None, query=f"id={RID}")
    assert judge("access.read-policies", unanswered)[0] == NOT_EXERCISED
    refused_poll = x(
        2, "GET", GR, 404, None, {"status": "approved"}, query=f"id={RID}"
    )  # a 404 answered: words say approved
    assert judge("access.read-policies", refused_poll)[0] == FAILED
    many = [
        e
        for i in range(5)
        for e in (poll(10 * i, "approved", rid=f"r{i}"), x(10 * i + 1, "GET", POLICIES, 200, None, {}))
    ]
    assert len(judge("access.read-policies", *many)[1]) == 3


def test_a_denial_asked_again_or_re_paired_fails_and_one_left_alone_passes():
    status, evidence = judge("access.denial-stands", ask(1), poll(2, "denied"), ask(3))
    assert status == FAILED and evidence == [
        f"POST {GR} #3: asked again after the owner denied request 0b7c6a52… (GET {GR} #2)"
    ]
    assert links("access.denial-stands", ask(1), poll(2, "denied"), ask(3)) == [(3, 2)]
    status, evidence = judge("access.denial-stands", ask(1), poll(2, "denied"), pair(3))
    assert evidence == [f"POST /oauth/device #3: paired again after the owner denied request 0b7c6a52… (GET {GR} #2)"]
    status, evidence = judge("access.denial-stands", pair(0), ask(1), poll(2, "denied"))
    assert status == PASSED and evidence == [f"GET {GR} #2: request 0b7c6a52… denied; not asked again"]
    assert judge("access.denial-stands", ask(1), poll(2, "approved"), ask(3))[0] == NOT_EXERCISED
    many = [poll(i, "denied", rid=f"r{i}") for i in range(1, 6)]
    assert len(judge("access.denial-stands", *many)[1]) == 3


# -- access.ask-with-reason, access.ask-known-keys, access.ask-held-never --------------------------


def test_an_ask_of_its_own_names_permissions_one_selection_and_a_reason():
    good = {"permissions": ["personal.read"], "record_type": "cards", "personal_id": "p1", "reason": "to pay"}
    status, evidence = judge("access.ask-with-reason", ask(1, good))
    assert status == PASSED and evidence == [f"POST {GR} #1: ['personal.read'], one selection, and a reason"]
    status, evidence = judge("access.ask-with-reason", refusal(0, good), ask(1, good))
    assert evidence == [f"POST {GR} #1: a refusal's permission_request, unchanged"]
    cases = {
        f"POST {GR} #1: names no permissions": {"permissions": [], "reason": "r"},
        f"POST {GR} #1: 2 selections (account_id, domain): one per ask": {
            "permissions": ["account.read"],
            "account_id": "a",
            "domain": "d",
            "reason": "r",
        },
        f"POST {GR} #1: asks for ['memory.read'] with no reason for the owner": {
            "permissions": ["memory.read"],
            "reason": "  ",
        },
    }
    for said, body in cases.items():
        assert judge("access.ask-with-reason", ask(1, body)) == (FAILED, [said])
    assert judge("access.ask-with-reason", ask(1, {"permissions": "memory.read", "reason": "r"}))[0] == FAILED
    assert judge("access.ask-with-reason", ask(1, {"permissions": ["memory.read"], "reason": 7}))[0] == FAILED
    assert judge("access.ask-with-reason", ask(1, ["memory.read"]))[1] == [f"POST {GR} #1: names no permissions"]
    later = refusal(2, good)  # a refusal after the ask is not where the ask came from
    assert judge("access.ask-with-reason", ask(1, {**good, "reason": ""}), later)[0] == FAILED
    other_status = x(0, "POST", MEMORIES, 401, {}, {"permission_request": good})
    assert judge("access.ask-with-reason", other_status, ask(1, {**good, "reason": ""}))[0] == FAILED
    many = [ask(i, good) for i in range(1, 6)]
    assert len(judge("access.ask-with-reason", *many)[1]) == 3
    handed = [refusal(0, good)] + [ask(i, good) for i in range(1, 6)]
    assert len(judge("access.ask-with-reason", *handed)[1]) == 3


def test_an_ask_with_old_keys_beside_permissions_fails():
    status, evidence = judge(
        "access.ask-known-keys", ask(1, {"permissions": ["personal.read"], "level": "read", "kind": "x"})
    )
    assert status == FAILED and evidence == [f"POST {GR} #1: sends kind, level with permissions ['personal.read']"]
    rows = {"client_id": "a", "authorization_details": [{"permissions": ["acctmail.read"], "resource_id": "r"}, "junk"]}
    for path in ("/oauth/device", "/oauth/par"):
        status, evidence = judge("access.ask-known-keys", x(1, "POST", path, 200, rows, {}))
        assert status == FAILED and evidence == [
            f"POST {path} #1: sends resource_id with permissions ['acctmail.read']"
        ], path
    assert judge("access.ask-known-keys", x(1, "GET", "/oauth/par", 200, rows, {}))[0] == NOT_EXERCISED
    assert judge("access.ask-known-keys", x(1, "POST", "/oauth/device", 200, ["x"], {}))[0] == NOT_EXERCISED


def test_an_ask_by_name_only_passes_and_old_forms_alone_are_not_judged():
    status, evidence = judge("access.ask-known-keys", ask(1, {"permissions": ["memory.save"]}))
    assert status == PASSED and evidence == [f"POST {GR} #1: asks by permission name only"]
    legacy = ask(1, {"kind": "memory", "level": "read"})  # an older form with no permissions: still accepted
    assert judge("access.ask-known-keys", legacy)[0] == NOT_EXERCISED
    assert judge("access.ask-known-keys", ask(1, ["memory.save"]))[0] == NOT_EXERCISED
    many = [ask(i, {"permissions": ["memory.save"]}) for i in range(1, 6)]
    assert len(judge("access.ask-known-keys", *many)[1]) == 3


def test_asking_for_what_is_held_fails():
    held = ask(1, answer={"status": "already_granted"}, status=200)
    status, evidence = judge("access.ask-held-never", held)
    assert status == FAILED
    assert evidence == [
        f"POST {GR} #1: asked for ['memory.save'], which the connection already holds (200 already_granted)"
    ]
    status, evidence = judge("access.ask-held-never", ask(1))
    assert status == PASSED and evidence == [f"POST {GR} #1: asked for what it did not hold (201 pending)"]
    assert (
        judge("access.ask-held-never", ask(1, status=409, answer={"code": "GRANT_ALREADY_REQUESTED"}))[0]
        == NOT_EXERCISED
    )
    assert judge("access.ask-held-never", ask(1, status=None, answer={}))[0] == NOT_EXERCISED
    assert judge("access.ask-held-never", ask(1, answer=["x"]))[1] == [
        f"POST {GR} #1: asked for what it did not hold (201 None)"
    ]
    odd = x(1, "POST", GR, 200, None, {"status": "already_granted"})
    assert judge("access.ask-held-never", odd)[1][0].startswith(f"POST {GR} #1: asked for None, which")
    assert len(judge("access.ask-held-never", *(ask(i) for i in range(1, 6)))[1]) == 3


# -- what the first run left alive: each a record a user could send --------------------------------


def at(exchange: Exchange, start: float) -> Exchange:
    exchange.start, exchange.done = start, start + 0.1
    return exchange


def test_what_is_sent_with_the_refusal_did_not_answer_it():
    assert judge("access.grant-request-not-repair", refusal(1), at(pair(2), 1.0), ask(3))[0] == PASSED
    assert judge("access.grant-request-not-repair", refusal(1), at(ask(2), 1.0))[0] == FAILED
    tie = [refusal(1), at(pair(2), 3.0), at(ask(3), 3.0)]  # paired and asked at once: not paired first
    assert judge("access.grant-request-not-repair", *tie)[0] == PASSED
    with_ask = [
        refusal(1),
        ask(2),
        at(x(3, "POST", MEMORIES, 201, {"rows": []}, {}), 2.0),
    ]  # sent with the ask: no retry
    assert judge("access.grant-request-not-repair", *with_ask)[1][0].endswith("unchanged")


def test_every_distinct_refusal_is_judged_past_a_repeated_one():
    other = {"permissions": ["memory.read"], "reason": "r"}
    seq = [refusal(1), refusal(2), ask(3), refusal(4, other)]
    status, evidence = judge("access.grant-request-not-repair", *seq)
    assert status == FAILED and evidence == [
        f"POST {MEMORIES} #4 (INSUFFICIENT_GRANT): no grant request was sent for its permission_request"
    ]


def test_a_poll_is_a_get_of_the_grant_request_with_its_id():
    elsewhere = x(3, "GET", "/api/agent/unlock", 200, None, {"status": "approved"}, query=f"id={RID}")
    assert judge("access.poll-grant-request", ask(1), elsewhere)[0] == FAILED
    alongside = poll(2, "approved", start=1.0)  # sent with the ask
    status, evidence = judge("access.poll-grant-request", ask(1), alongside)
    assert status == FAILED and "never polled" in evidence[0]
    silent = x(3, "GET", GR, 200, None, {}, query=f"id={RID}")  # answered, with no status
    assert judge("access.poll-grant-request", ask(1), silent)[1][0].endswith("until the run ended")


def test_every_open_ask_is_judged_and_the_last_poll_named():
    two = [ask(1, answer={"status": "pending", "request_id": "r-a"}), ask(2), poll(3, start=2.2)]
    status, evidence = judge("access.poll-grant-request", *two)
    assert status == FAILED and len(evidence) == 2
    status, evidence = judge("access.poll-grant-request", ask(1), poll(3), poll(5), poll(7))
    assert status == FAILED and evidence[0].startswith(f"GET {GR} #7: still pending")
    assert links("access.poll-grant-request", ask(1), poll(3), poll(5), poll(7)) == [(7,)]


def test_policies_and_denials_are_judged_for_every_request():
    seq = [poll(1, "pending", rid="r-a"), poll(2, "approved")]
    assert judge("access.read-policies", *seq)[0] == FAILED
    with_it = [
        poll(2, "approved"),
        at(x(3, "GET", POLICIES, 200, None, {}), 2.0),
    ]  # sent with the poll: before its answer
    assert judge("access.read-policies", *with_it)[0] == FAILED
    lost = x(
        2, "GET", GR, 502, None, {"status": "approved"}, query=f"id={RID}"
    )  # no answer: its words count for nothing
    assert judge("access.read-policies", lost)[0] == NOT_EXERCISED
    seq = [poll(1, "pending", rid="r-a"), poll(2, "denied"), ask(3)]
    assert judge("access.denial-stands", *seq)[0] == FAILED
    assert judge("access.denial-stands", poll(2, "denied"), at(ask(3), 2.0))[0] == PASSED  # sent with the poll


def test_a_refusal_hands_over_only_its_own_request_and_only_before_the_ask():
    bare = x(0, "POST", MEMORIES, 403, {}, {"code": "INSUFFICIENT_GRANT"})
    no_reason = {"permissions": ["memory.save"]}
    assert judge("access.ask-with-reason", bare, ask(1, no_reason))[0] == FAILED
    same_time = at(refusal(0, no_reason), 1.0)
    assert judge("access.ask-with-reason", same_time, ask(1, no_reason))[0] == FAILED
    one = {"permissions": ["account.read"], "account_id": "a", "reason": "to sign in"}
    assert judge("access.ask-with-reason", ask(1, one))[0] == PASSED


def test_old_keys_in_an_ask_count_beside_a_clean_pairing():
    seq = [ask(1, {"permissions": ["memory.save"], "level": "write"}), pair(2, NAMED_PAIRING)]
    status, evidence = judge("access.ask-known-keys", *seq)
    assert status == FAILED and evidence == [f"POST {GR} #1: sends level with permissions ['memory.save']"]


NAMED_PAIRING = {"client_id": "a", "name": "A", "authorization_details": [{"permissions": ["memory.save"]}]}

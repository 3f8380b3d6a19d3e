"""`decoy-lab check`'s account rules on hand-made records (conformance/rules/accounts.py), beyond the
sign-up flow of test_account_rules.py: unlocks answered `preparing` or `pending`, queued address
edits, the address made once, secrets in a record's members. Each record breaks (or keeps) one sentence
of 001 (and 000 for the password):

"`state: "preparing"`: Decoy is asking the owner's phone to make the copy (`waiting_on: "owner_phone"`);
send the same request again after `retry_after_seconds`." "Poll `GET /api/agent/unlock/{requestId}` for
the sealed envelope and open it with your agent key." "The call answers `202` at once; poll `GET
/api/agent/decoys/{decoyId}/edits/{editId}` for `applied`." "Queued edits are never dropped."
"Client-chosen key so a timeout + retry cannot mint a second address." "do not create a second account
for the same service." "Keep credentials out of this memory store."
"""

from __future__ import annotations

import re
from typing import Any

from decoy_lab.conformance.rulebook import FAILED, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.inspector.flow_record import Row
from decoy_lab.recipes import account_records as records
from decoy_lab.recipes.trace import Trace
from decoy_lab.wire.crypto import AgentKey

from support.exchanges import x

UNLOCK = "/api/agent/unlock"
DECOYS = "/api/agent/decoys"
ACCOUNT = "5d09cdae-1b84-45f8-bbcd-a96a32475078"
OTHER = "410ed77e-0000-4000-8000-000000000002"
TARGET = {"kind": "credential", "account_id": ACCOUNT}
OWNER = AgentKey.generate()
PASSWORD = "Tk-Lisb0n-rain-2026"
API_KEY = "sk_live_" + "3f" * 16


def judge(rule: str, *exchanges: Exchange, scenario: str = "accounts") -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(Run(scenario, list(exchanges)))
    for e in result.evidence:  # a line links the exchange it names first (the report's reproducer)
        assert int(re.findall(r"#(\d+)", e)[0]) in e.exchanges, e
    return result.status, [str(e) for e in result.evidence]


def links(rule: str, *exchanges: Exchange) -> list[tuple[int, ...]]:
    """The exchanges each evidence line links, in order: their reproducers in the report."""
    return [e.exchanges for e in BY_ID[rule].evaluate(Run("accounts", list(exchanges))).evidence]


# -- accounts.unlock-retry-after -------------------------------------------------------------------


def ask(i: int, state: str = "preparing", wait: Any = 3, target: Any = TARGET, **kw: Any) -> Exchange:
    answer = {"state": state, "waiting_on": "owner_phone", "retry_after_seconds": wait}
    return x(i, "POST", UNLOCK, kw.pop("status", 200), {"target": target}, answer, **kw)


def test_a_preparing_unlock_sent_again_after_its_retry_time_passes():
    status, evidence = judge("accounts.unlock-retry-after", ask(1, start=1.0, done=1.5), ask(2, start=4.5))
    assert status == PASSED
    assert evidence == [
        f"POST {UNLOCK} #2: sent again 3.0 s after `preparing` (retry_after_seconds 3) in POST {UNLOCK} #1"
    ]
    assert links("accounts.unlock-retry-after", ask(1, start=1.0, done=1.5), ask(2, start=4.5)) == [(2, 1)]
    assert links("accounts.unlock-retry-after", ask(1, start=1.0, done=1.5), ask(2, start=2.0)) == [(2, 1)]
    # the agent's clock and the recording's differ a little: 80 % of the wait is enough
    assert judge("accounts.unlock-retry-after", ask(1, start=1.0, done=1.5), ask(2, start=4.0))[0] == PASSED


def test_a_preparing_unlock_sent_again_too_soon_fails():
    status, evidence = judge("accounts.unlock-retry-after", ask(1, start=1.0, done=1.5), ask(2, start=2.5, wait=2.5))
    assert status == FAILED
    assert evidence == [
        f"POST {UNLOCK} #2: the same unlock sent again 1.0 s after POST {UNLOCK} #1 answered `preparing` with "
        "retry_after_seconds 3"
    ]
    assert judge("accounts.unlock-retry-after", ask(1, start=1.0, done=1.5), ask(2, start=3.8))[0] == FAILED


def test_only_the_same_target_after_a_preparing_answer_is_judged():
    other = ask(2, start=1.6, target={"kind": "credential", "account_id": OTHER})
    assert judge("accounts.unlock-retry-after", ask(1, start=1.0, done=1.5), other)[0] == NOT_EXERCISED
    assert (
        judge("accounts.unlock-retry-after", ask(1, state="ready", start=1.0, done=1.5), ask(2, start=1.6))[0]
        == NOT_EXERCISED
    )
    assert judge("accounts.unlock-retry-after", ask(1, start=1.0, done=None), ask(2, start=1.6))[0] == NOT_EXERCISED
    assert (
        judge("accounts.unlock-retry-after", ask(1, status=502, start=1.0, done=1.5), ask(2, start=1.6))[0]
        == NOT_EXERCISED
    )
    assert judge("accounts.unlock-retry-after", ask(1, start=1.0, done=1.5))[0] == NOT_EXERCISED  # never sent again
    # no retry time said: any later send is after it
    assert judge("accounts.unlock-retry-after", ask(1, wait=None, start=1.0, done=1.5), ask(2, start=1.5))[0] == PASSED
    not_json = x(2, "POST", UNLOCK, 200, None, None, start=1.6)  # a body not JSON targets nothing
    assert judge("accounts.unlock-retry-after", ask(1, start=1.0, done=1.5), not_json)[0] == NOT_EXERCISED
    odd = x(1, "POST", UNLOCK, 200, {"target": TARGET}, ["preparing"], start=1.0, done=1.5)  # an answer not an object
    assert judge("accounts.unlock-retry-after", odd, ask(2, start=1.6))[0] == NOT_EXERCISED


def test_each_preparing_answer_is_judged_against_the_next_send_only():
    seq = [ask(1, start=1.0, done=1.5), ask(2, start=4.6, done=4.7), ask(3, start=8.0, done=8.1), ask(4, start=11.2)]
    status, evidence = judge("accounts.unlock-retry-after", *seq)
    assert status == PASSED and len(evidence) == 3 and "#2" in evidence[0] and "#3" in evidence[1]
    seq = [ask(1, state="ready", start=0.0, done=0.1), ask(2, start=1.0, done=1.5), ask(3, start=1.6)]
    assert judge("accounts.unlock-retry-after", *seq)[0] == FAILED  # the first answer ready: the next still judged
    many = [ask(i, start=float(i), done=i + 0.1) for i in range(1, 7)]
    assert len(judge("accounts.unlock-retry-after", *many)[1]) == 5
    assert (
        len(judge("accounts.unlock-retry-after", *(ask(i, start=i * 4.0, done=i * 4.0 + 0.1) for i in range(1, 7)))[1])
        == 3
    )


# -- accounts.unlock-pending -----------------------------------------------------------------------


def pending(i: int, rid: Any = "req-1", status: int = 201, target: Any = TARGET, **kw: Any) -> Exchange:
    return x(i, "POST", UNLOCK, status, {"target": target}, {"status": "pending", "id": rid}, **kw)


def poll(i: int, state: str = "pending", rid: str = "req-1", method: str = "GET", **kw: Any) -> Exchange:
    return x(i, method, f"{UNLOCK}/{rid}", 200, None, {"status": state}, **kw)


def test_a_pending_unlock_polled_by_its_id_passes():
    status, evidence = judge(
        "accounts.unlock-pending", pending(1), poll(2), poll(3, "approved"), scenario="slow-unlock"
    )
    assert status == PASSED
    assert evidence == [f"POST {UNLOCK} #1: pending, polled 2 times by its id and not asked again"]
    assert links("accounts.unlock-pending", pending(1), poll(2), poll(3, "approved")) == [(1, 3)]
    assert links("accounts.unlock-pending", pending(1), poll(2), pending(3, rid="req-2")) == [(3, 1), (3,)]
    once = judge("accounts.unlock-pending", pending(1), poll(2, "approved"))
    assert once[1] == [f"POST {UNLOCK} #1: pending, polled 1 time by its id and not asked again"]


def test_a_pending_unlock_never_polled_or_asked_again_fails():
    status, evidence = judge("accounts.unlock-pending", poll(0), pending(1))
    assert status == FAILED
    assert evidence == [
        f"POST {UNLOCK} #1: pending (req-1) and never polled: the sealed envelope comes only from "
        "GET /api/agent/unlock/{requestId}"
    ]
    status, evidence = judge("accounts.unlock-pending", pending(1), poll(2), pending(3, rid="req-2"))
    assert status == FAILED
    assert (
        evidence[0]
        == f"POST {UNLOCK} #3: the same unlock asked again while POST {UNLOCK} #1 (req-1) was pending: poll it instead"
    )


def test_asking_again_after_the_request_settled_is_no_second_ask():
    for end in (poll(3, "approved"), poll(3, "denied"), poll(3, method="DELETE")):  # a withdrawal settles it too
        status, _ = judge(
            "accounts.unlock-pending", pending(1), poll(2), end, pending(4, rid="req-2"), poll(5, rid="req-2")
        )
        assert status == PASSED, end.method

    def asked_again(*exchanges: Exchange) -> bool:
        """Whether the second ask (req-2, polled) is judged an ask again while req-1 was pending."""
        status, evidence = judge("accounts.unlock-pending", *exchanges, pending(3, rid="req-2"), poll(9, rid="req-2"))
        return status == FAILED and "asked again while" in evidence[0]

    assert asked_again(pending(1), poll(2))  # the poll said pending: nothing settled
    assert asked_again(pending(1), x(2, "GET", f"{UNLOCK}/req-1", None, None, None))  # no answer
    assert asked_again(pending(1), poll(2, "approved", done=None))  # no answer recorded yet
    assert asked_again(poll(0, "approved"), pending(1), poll(2))  # a poll before the ask settles nothing of it
    assert asked_again(pending(1), poll(2), x(2, "GET", f"{UNLOCK}/req-9", 200, None, {"status": "approved"}))
    assert not asked_again(pending(1), poll(2, "approved", start=1.0))  # its answer settles it, sent when it may
    assert not asked_again(pending(1), poll(2, "approved"))
    # an answer that does not say `pending` is read as the request no longer pending, whatever its body
    assert not asked_again(pending(1), x(2, "GET", f"{UNLOCK}/req-1", 200, None, ["pending"]))
    late = judge(
        "accounts.unlock-pending",
        pending(1),
        poll(2, "approved"),
        pending(3, target={"kind": "other"}),
        poll(4, rid="req-1"),
    )
    assert late[0] == PASSED  # another target is another ask


def test_only_a_201_pending_with_an_id_is_a_pending_unlock():
    assert judge("accounts.unlock-pending", pending(1, status=200), poll(2))[0] == NOT_EXERCISED
    assert judge("accounts.unlock-pending", pending(1, rid=7), poll(2))[0] == NOT_EXERCISED
    ready = x(1, "POST", UNLOCK, 201, {"target": TARGET}, {"status": "ready", "id": "req-1"})
    assert judge("accounts.unlock-pending", ready)[0] == NOT_EXERCISED
    listed = x(1, "POST", UNLOCK, 201, {"target": TARGET}, ["pending"])
    assert judge("accounts.unlock-pending", listed)[0] == NOT_EXERCISED
    first = pending(1, status=200)  # not pending: the next one still judged
    assert judge("accounts.unlock-pending", first, pending(2, rid="req-2"))[0] == FAILED
    many = [pending(i, rid=f"q{i}", target={"n": i}) for i in range(1, 6)] + [
        poll(10 + i, rid=f"q{i}") for i in range(1, 6)
    ]
    assert len(judge("accounts.unlock-pending", *many)[1]) == 3
    alongside = poll(2, start=1.0)  # a poll sent with the ask is not a poll of its answer
    assert judge("accounts.unlock-pending", pending(1), alongside)[0] == FAILED
    again = pending(2, rid="req-2", start=1.0)  # sent with the first: not asked again after it
    assert judge("accounts.unlock-pending", pending(1), again, poll(3), poll(4, rid="req-2"))[0] == PASSED


# -- accounts.edit-polled, accounts.edit-once ------------------------------------------------------

DECOY = "d-1"
EDITS = f"{DECOYS}/{DECOY}/edits"


def queue(i: int, edit: Any = "e1", decoy: str = DECOY, status: int = 202, **kw: Any) -> Exchange:
    return x(
        i, "POST", f"{DECOYS}/{decoy}/edits", status, {"name": "Acme"}, {"edit_id": edit, "status": "pending"}, **kw
    )


def edit_poll(
    i: int, state: str = "pending", edit: str = "e1", decoy: str = DECOY, method: str = "GET", **kw: Any
) -> Exchange:
    return x(i, method, f"{DECOYS}/{decoy}/edits/{edit}", 200, None, {"status": state}, **kw)


def test_a_queued_edit_polled_passes_and_one_never_polled_fails():
    status, evidence = judge(
        "accounts.edit-polled", queue(1), edit_poll(2), edit_poll(3, "applied"), scenario="late-edit"
    )
    assert status == PASSED and evidence == [f"POST {EDITS} #1: edit e1 polled 2 times, last 'applied'"]
    assert links("accounts.edit-polled", queue(1), edit_poll(2), edit_poll(3, "applied")) == [(1, 3)]
    assert links("accounts.edit-once", queue(1), edit_poll(2), queue(3, edit="e2")) == [(3, 1)]
    status, evidence = judge("accounts.edit-polled", edit_poll(0), queue(1))
    assert status == FAILED
    assert evidence == [f"POST {EDITS} #1: edit e1 queued and never polled: a 202 is `pending`, not applied"]
    not_json = x(2, "GET", f"{EDITS}/e1", 200, None, None)
    assert judge("accounts.edit-polled", queue(1), not_json)[1] == [
        f"POST {EDITS} #1: edit e1 polled 1 time, last None"
    ]


def test_only_an_edit_the_server_queued_is_owed_a_poll():
    assert judge("accounts.edit-polled", queue(1, status=200))[0] == NOT_EXERCISED
    assert judge("accounts.edit-polled", queue(1, edit=None))[0] == NOT_EXERCISED
    listed = x(1, "POST", EDITS, 202, {}, ["e1"])
    assert judge("accounts.edit-polled", listed)[0] == NOT_EXERCISED
    deeper = x(1, "POST", f"{EDITS}/e1/undo", 202, {}, {"edit_id": "e1"})
    assert judge("accounts.edit-polled", deeper)[0] == NOT_EXERCISED
    other = edit_poll(2, edit="e2")  # another edit's poll
    assert judge("accounts.edit-polled", queue(1), other)[0] == FAILED
    alongside = edit_poll(2, start=1.0)
    assert judge("accounts.edit-polled", queue(1), alongside)[0] == FAILED
    many = [queue(i, edit=f"e{i}") for i in range(1, 6)] + [edit_poll(10 + i, edit=f"e{i}") for i in range(1, 6)]
    assert len(judge("accounts.edit-polled", *many)[1]) == 3


def test_an_edit_queued_again_while_pending_fails():
    status, evidence = judge("accounts.edit-once", queue(1), edit_poll(2), queue(3, edit="e2"), scenario="late-edit")
    assert status == FAILED
    assert evidence == [
        f"POST {EDITS} #3: the address's edit queued again while POST {EDITS} #1 (e1) was pending: queued edits "
        "are never dropped"
    ]


def test_an_edit_queued_once_or_after_the_first_settled_passes():
    status, evidence = judge("accounts.edit-once", queue(1), edit_poll(2, "applied"))
    assert status == PASSED and evidence == [f"POST {EDITS} #1: edit e1 queued once"]
    after = judge(
        "accounts.edit-once", queue(1), edit_poll(2, "applied"), queue(3, edit="e2"), edit_poll(4, "applied", edit="e2")
    )
    assert after[0] == PASSED and len(after[1]) == 2
    other = judge("accounts.edit-once", queue(1), queue(2, edit="e2", decoy="d-2"))
    assert other[0] == PASSED  # another address's edit
    same_time = judge("accounts.edit-once", queue(1), queue(2, edit="e2", start=1.0))
    assert same_time[0] == PASSED  # sent together, not one after the other's answer
    many = [queue(i, edit=f"e{i}", decoy=f"d{i}") for i in range(1, 6)]
    assert len(judge("accounts.edit-once", *many)[1]) == 3


# -- accounts.one-address, accounts.idempotency-key ------------------------------------------------


def details(name: Any, verdict: str = "readable", key: str = "serviceName") -> Row:
    return Row("d1", "request.sealed_details", verdict, kind="sealed details", plaintext={key: name})


def create(
    i: int, account: str = ACCOUNT, name: Any = "Acme Tickets", path: str = DECOYS, status: int = 201, **answer: Any
) -> Exchange:
    body = {"idempotency_key": f"k{i}", "service_name": "plain name"}
    return x(i, "POST", path, status, body, {"account_id": account, **answer}, [details(name)])


def test_a_second_account_for_the_same_service_fails_whatever_its_spelling():
    status, evidence = judge("accounts.one-address", create(1), create(2, OTHER, name="  ACME   tickets "))
    assert status == FAILED
    assert evidence == [
        f"POST {DECOYS} #2: a second account (410ed77e…) for '  ACME   tickets ', already made as 5d09cdae… by "
        f"POST {DECOYS} #1: reuse its account_id"
    ]
    assert links("accounts.one-address", create(1), create(2, OTHER, name="Acme Tickets")) == [(2, 1)]


def test_one_account_per_service_passes():
    status, evidence = judge("accounts.one-address", create(1), create(2, OTHER, name="Other Service"))
    assert status == PASSED
    assert evidence == [
        f"POST {DECOYS} #1: one account (5d09cdae…) for 'Acme Tickets'",
        f"POST {DECOYS} #2: one account (410ed77e…) for 'Other Service'",
    ]


def test_what_names_the_account_and_its_service():
    made = x(2, "POST", "/api/agent/accounts", 201, {}, {"id": OTHER}, [details("Acme Tickets", key="name")])
    assert judge("accounts.one-address", create(1), made)[0] == FAILED  # an account made without an address
    for key in ("service_name", "title"):
        assert (
            judge(
                "accounts.one-address",
                create(1),
                create(2, OTHER, name="Acme Tickets")
                if key == "x"
                else x(2, "POST", DECOYS, 201, {}, {"account_id": OTHER}, [details("Acme Tickets", key=key)]),
            )[0]
            == FAILED
        ), key
    plain = x(
        2,
        "POST",
        DECOYS,
        201,
        {"service_name": "Acme Tickets"},
        {"account_id": OTHER},
        [details("x", verdict="unreadable")],
    )
    assert judge("accounts.one-address", create(1), plain)[0] == FAILED  # the plain name when the details do not open
    blank = x(2, "POST", DECOYS, 201, {"service_name": "Acme Tickets"}, {"account_id": OTHER}, [details("   ")])
    assert judge("accounts.one-address", create(1), blank)[0] == FAILED
    nameless = x(2, "POST", DECOYS, 201, {}, {"account_id": OTHER}, [details(None)])
    assert judge("accounts.one-address", create(1), nameless)[0] == PASSED  # no service: not judged
    id_only = x(2, "POST", DECOYS, 201, {}, {"id": OTHER}, [details("Acme Tickets")])  # a decoy's id is no account id
    assert judge("accounts.one-address", create(1), id_only)[0] == PASSED
    opaque = x(
        2,
        "POST",
        DECOYS,
        201,
        None,
        {"account_id": OTHER},
        [Row("d1", "request", "readable", kind="sealed details", plaintext="x")],
    )
    assert judge("accounts.one-address", create(1), opaque)[0] == PASSED


def test_only_creates_the_server_answered_are_counted():
    for second in (create(2, OTHER, status=400), create(2, OTHER, status=300), create(2, OTHER, status=None)):
        assert judge("accounts.one-address", create(1), second)[0] == PASSED, second.status
    read = x(2, "GET", DECOYS, 200, None, {"account_id": OTHER}, [details("Acme Tickets")])
    assert judge("accounts.one-address", create(1), read)[0] == PASSED
    listed = x(2, "POST", DECOYS, 201, {}, [OTHER], [details("Acme Tickets")])
    assert judge("accounts.one-address", create(1), listed)[0] == PASSED
    first = create(0, status=400)  # refused: the next create is still judged
    assert judge("accounts.one-address", first, create(1), create(2, OTHER))[0] == FAILED
    many = [create(i, f"acc-{i}", name=f"S{i}") for i in range(1, 6)]
    assert len(judge("accounts.one-address", *many)[1]) == 3


def test_an_idempotency_key_is_given_and_at_most_128_characters():
    status, evidence = judge("accounts.idempotency-key", create(1))
    assert status == PASSED and evidence == [f"POST {DECOYS} #1: idempotency_key of 2 characters"]
    for key in (None, "", "   ", 7):
        made = x(1, "POST", DECOYS, 201, {"idempotency_key": key}, {})
        status, evidence = judge("accounts.idempotency-key", made)
        assert status == FAILED and evidence == [
            f"POST {DECOYS} #1: no idempotency_key: a timeout and a retry can mint a second address"
        ], key
    assert judge("accounts.idempotency-key", x(1, "POST", DECOYS, 201, ["k"], {}))[0] == FAILED
    assert judge("accounts.idempotency-key", x(1, "POST", DECOYS, 201, {"idempotency_key": "k" * 128}, {}))[0] == PASSED
    status, evidence = judge("accounts.idempotency-key", x(1, "POST", DECOYS, 400, {"idempotency_key": "k" * 129}, {}))
    assert status == FAILED and evidence == [f"POST {DECOYS} #1: its idempotency_key is 129 characters; at most 128"]
    assert judge("accounts.idempotency-key", x(1, "GET", DECOYS, 200, None, {}))[0] == NOT_EXERCISED
    assert len(judge("accounts.idempotency-key", *(create(i) for i in range(1, 6)))[1]) == 3


# -- the password and API keys in an account record ------------------------------------------------

CRED = f"/api/agent/accounts/{ACCOUNT}/credential"


def credential(secret: str, verdict: str = "readable") -> Row:
    trace = Trace("the owner's app opens the credential")
    if verdict == "readable":
        records.open_credential(records.seal_credential(secret, OWNER.public_key_b64), OWNER, trace=trace)
    return Row(ACCOUNT, "request.encrypted_password", verdict, kind="credential", opened_by="owner key", trace=trace)


def record(i: int, status: int = 200, path: str = f"/api/agent/accounts/{ACCOUNT}", **plain: Any) -> Exchange:
    row = Row(
        ACCOUNT,
        "request.account_encrypted_data",
        "readable",
        kind="account",
        opened_by="owner key",
        plaintext={"name": "Acme", **plain},
    )
    return x(i, "PATCH", path, status, {}, {}, [row])


def cred(i: int, secret: str = PASSWORD, status: int = 200, verdict: str = "readable") -> Exchange:
    return x(
        i, "POST", CRED, status, {"encrypted_password": "…"}, {"has_password": True}, [credential(secret, verdict)]
    )


def test_the_password_in_any_text_member_of_the_record_fails():
    status, evidence = judge("accounts.no-credentials-in-memory", cred(1), record(2, tags=["x", f"pw {PASSWORD}", 3]))
    assert status == FAILED
    assert evidence == [
        f"PATCH /api/agent/accounts/{ACCOUNT} #2, account record: its tags[] holds the login password (19 characters) "
        f"sent in POST {CRED} #1"
    ]
    status, evidence = judge(
        "accounts.no-credentials-in-memory", record(2, notes="pin: 123456", url="login password: hunter22")
    )
    assert status == FAILED and len(evidence) == 1 and "its notes holds a password: 'pin: 12…(6 chars)'" in evidence[0]


def test_a_record_that_says_where_the_password_is_kept_holds_none():
    """The record may say where the secret is ("write only that the account has them"); a value
    after the same words still fails."""
    kept = record(2, notes="Login password: stored on the account. API key: kept as a secret field.")
    assert judge("accounts.no-credentials-in-memory", kept)[0] != FAILED
    held = record(2, notes="Login password: stored on the account. Password: Hunter2024")
    status, evidence = judge("accounts.no-credentials-in-memory", held)
    assert status == FAILED and "its notes holds a password: 'Password: Hu…(10 chars)'" in evidence[0]


def test_what_is_no_password_in_a_record():
    masked_members = record(2, password=PASSWORD, secret=PASSWORD, value=PASSWORD, totp=PASSWORD, seed="x", otp="y")
    status, evidence = judge("accounts.no-credentials-in-memory", cred(1), masked_members)
    assert status == PASSED  # the inspector's masked members hold no text of their own
    assert evidence == [
        f"POST {CRED} #1: the login password (19 characters) went to the credential route, and no memory text or "
        "account record holds it"
    ]
    short = cred(1, "abc12")  # five characters would match ordinary words
    assert judge("accounts.no-credentials-in-memory", short, record(2, notes="abc12"))[0] == NOT_EXERCISED
    six = cred(1, "abc123")
    assert judge("accounts.no-credentials-in-memory", six, record(2, notes="abc123"))[0] == FAILED
    refused = cred(1, status=400)  # the server kept nothing
    assert judge("accounts.no-credentials-in-memory", refused, record(2, notes=PASSWORD))[0] == NOT_EXERCISED
    unread = cred(1, verdict="unreadable")
    assert judge("accounts.no-credentials-in-memory", unread, record(2, notes=PASSWORD))[0] == NOT_EXERCISED
    refused_record = record(2, status=400, notes=PASSWORD)
    assert judge("accounts.no-credentials-in-memory", cred(1), refused_record)[0] == PASSED
    elsewhere = record(2, path="/api/agent/identity", notes=PASSWORD)
    assert judge("accounts.no-credentials-in-memory", cred(1), elsewhere)[0] == PASSED
    created = record(2, path=DECOYS, notes=PASSWORD)
    assert judge("accounts.no-credentials-in-memory", cred(1), created)[0] == FAILED
    many = [cred(i, f"password-{i}") for i in range(1, 6)]
    assert len(judge("accounts.no-credentials-in-memory", *many)[1]) == 3


def test_an_api_key_in_a_record_member_or_as_a_keyish_field_is_judged():
    status, evidence = judge("accounts.api-key-field", record(2, url=f"key {API_KEY}"))
    assert status == FAILED
    assert evidence == [
        f"PATCH /api/agent/accounts/{ACCOUNT} #2, account record: an API key in its url: 'sk_live_3f3f…' "
        "(a secret field goes next to the record)"
    ]
    fields = f"/api/agent/accounts/{ACCOUNT}/fields"

    def field(label: str, ftype: str, value: str = "•••", verdict: str = "readable", path: str = fields) -> Exchange:
        plain = {"label": label, "fieldType": ftype, "value": value}
        return x(3, "POST", path, 201, {}, {}, [Row("f1", "request", verdict, kind="field", plaintext=plain)])

    for label in ("API key", "token", "Secret", "Signing key", "api_key"):
        status, evidence = judge("accounts.api-key-field", field(label, "string"))
        assert status == FAILED and evidence == [
            f"POST {fields} #3, field f1 ({label!r}): fieldType 'string': an API key is a concealed-string field"
        ], label
    status, evidence = judge("accounts.api-key-field", field("Token", "concealed-string"))
    assert status == PASSED and evidence == [f"POST {fields} #3, field f1: the Token is a concealed secret field"]
    assert judge("accounts.api-key-field", field("Notes", "string", value=API_KEY))[0] == FAILED
    assert judge("accounts.api-key-field", field("Notes", "string"))[0] == NOT_EXERCISED
    assert judge("accounts.api-key-field", field("Monkey", "string"))[0] == NOT_EXERCISED
    assert judge("accounts.api-key-field", field("API key", "string", verdict="unreadable"))[0] == NOT_EXERCISED
    assert judge("accounts.api-key-field", field("API key", "string", path=f"{fields}/f1"))[0] == FAILED
    assert judge("accounts.api-key-field", field("API key", "string", path=f"{fields}/f1/x"))[0] == NOT_EXERCISED
    assert judge("accounts.api-key-field", cred(1, "not-an-api-key"))[0] == NOT_EXERCISED


# -- what the first run left alive: each a record a user could send --------------------------------


def fields_post(i: int, *plains: dict, verdict: str = "readable") -> Exchange:
    rows = [Row(f"f{n}", "request", verdict, kind="field", plaintext=p) for n, p in enumerate(plains, 1)]
    return x(i, "POST", f"/api/agent/accounts/{ACCOUNT}/fields", 201, {}, {}, rows)


def memory_write(i: int, text: str, verdict: str = "readable") -> Exchange:
    row = Row("m1", "request.rows[0]", verdict, plaintext={"kind": "memory", "text": text})
    return x(i, "POST", "/api/agent/context/memories", 201, {"rows": [{"id": "m1"}]}, {}, [row])


def test_an_api_key_in_a_memorys_text_fails_masked():
    status, evidence = judge("accounts.api-key-field", memory_write(1, f"Acme key: {API_KEY}"))
    assert status == FAILED
    assert evidence == ["POST /api/agent/context/memories #1, row m1: an API key in the memory's text: 'sk_live_3f3f…'"]
    assert (
        judge("accounts.api-key-field", memory_write(1, f"Acme key: {API_KEY}", verdict="unreadable"))[0]
        == NOT_EXERCISED
    )


def test_an_api_key_sent_as_the_password_is_named_in_words():
    status, evidence = judge("accounts.api-key-field", cred(1, API_KEY))
    assert status == FAILED
    assert evidence == [
        f"POST {CRED} #1: an API key (40 characters) sent as the account's password: the credential route is for a "
        "login password, not an API key"
    ]


def test_every_field_of_a_post_is_judged_and_an_unlabelled_key_is_shown_as_such():
    plain = {"label": "Notes", "fieldType": "string", "value": "hello"}
    keyish = {"fieldType": "string", "value": API_KEY}
    status, evidence = judge("accounts.api-key-field", fields_post(3, plain, keyish))
    assert status == FAILED
    assert evidence == [
        f"POST /api/agent/accounts/{ACCOUNT}/fields #3, field f2 (''): fieldType 'string': an API key is a "
        "concealed-string field"
    ]
    concealed = [{"label": f"token {n}", "fieldType": "concealed-string", "value": "•"} for n in range(5)]
    assert len(judge("accounts.api-key-field", fields_post(3, *concealed))[1]) == 3


def test_the_password_and_its_record_line_link_both_exchanges():
    status, evidence = judge("accounts.no-credentials-in-memory", cred(1), memory_write(2, f"pw {PASSWORD}"))
    assert status == FAILED and evidence[0].endswith(f"sent to the credential route in POST {CRED} #1")
    assert links("accounts.no-credentials-in-memory", cred(1), memory_write(2, f"pw {PASSWORD}")) == [(2, 1)]
    assert links("accounts.no-credentials-in-memory", cred(1), record(2, notes=PASSWORD)) == [(2, 1)]
    sealed = memory_write(2, f"pw {PASSWORD}", verdict="unreadable")  # the owner cannot open it: nothing to read
    assert judge("accounts.no-credentials-in-memory", cred(1), sealed)[0] == PASSED


def test_records_and_credentials_the_check_could_not_read_are_not_judged():
    traceless = Row(ACCOUNT, "request.encrypted_password", "readable", kind="credential", opened_by="owner key")
    no_trace = x(1, "POST", CRED, 200, {}, {}, [traceless])
    assert judge("accounts.no-credentials-in-memory", no_trace, record(2, notes=PASSWORD))[0] == NOT_EXERCISED
    first = x(0, "GET", "/api/agent/policies", 200, None, {})
    assert judge("accounts.no-credentials-in-memory", first, cred(1), record(2, notes=PASSWORD))[0] == FAILED
    unread = record(2, notes="password: hunter22")
    unread.rows[0] = Row(ACCOUNT, "request", "unreadable", kind="account", plaintext={"notes": "password: hunter22"})
    assert judge("accounts.no-credentials-in-memory", unread)[0] == NOT_EXERCISED


def test_a_create_without_any_service_name_is_not_counted():
    unnamed = [x(i, "POST", DECOYS, 201, {}, {"account_id": acc}) for i, acc in ((1, ACCOUNT), (2, OTHER))]
    assert judge("accounts.one-address", *unnamed)[0] == NOT_EXERCISED
    status, _ = judge("accounts.one-address", unnamed[0], create(2), create(3, OTHER))
    assert status == FAILED  # an unnamed create first: the rest still judged
    replay = create(2, OTHER, idempotent_replay=True)  # the server's answer to a retry: not a second account
    assert judge("accounts.one-address", create(1), replay)[0] == PASSED


def owner_row(kind: str, verdict: str = "readable", reason: str = "") -> Row:
    return Row(ACCOUNT, "request", verdict, reason=reason, kind=kind, opened_by="owner key")


def test_the_owners_eye_on_a_record_and_a_credential_in_words():
    made = x(1, "POST", DECOYS, 201, {}, {}, [owner_row("sealed details"), owner_row("account")])
    status, evidence = judge("accounts.owner-opens", made)
    assert status == PASSED and evidence == [f"POST {DECOYS} #1: the owner's app opens its account record (owner key)"]
    broken = x(1, "POST", DECOYS, 201, {}, {}, [owner_row("account", "unreadable", "the tag does not match")])
    status, evidence = judge("accounts.owner-opens", broken)
    assert status == FAILED and evidence == [
        f"POST {DECOYS} #1: the owner's app cannot open its account record: the tag does not match"
    ]
    status, evidence = judge("accounts.owner-opens", x(1, "POST", CRED, 200, {}, {}, [owner_row("credential")]))
    assert evidence == [f"POST {CRED} #1: the owner's app opens its credential (owner key)"]
    served = x(1, "GET", f"/api/agent/accounts/{ACCOUNT}", 200, None, {}, [owner_row("account", "unreadable", "x")])
    assert judge("accounts.owner-opens", served)[0] == NOT_EXERCISED  # what the server served, not what the agent sent
    refused = x(0, "POST", CRED, 400, {}, {"code": "X"}, [owner_row("credential", "unreadable", "x")])
    assert judge("accounts.owner-opens", refused, broken)[1][0].startswith(f"POST {DECOYS} #1")
    many = [x(i, "POST", CRED, 200, {}, {}, [owner_row("credential")]) for i in range(1, 6)]
    assert len(judge("accounts.owner-opens", *many)[1]) == 3


def test_an_unlock_target_is_the_same_whatever_its_key_order():
    turned = dict(reversed(list(TARGET.items())))
    status, _ = judge("accounts.unlock-retry-after", ask(1, start=1.0, done=1.5), ask(2, start=1.6, target=turned))
    assert status == FAILED
    lone = ask(1, start=1.0, done=1.5, target={"kind": "credential", "account_id": OTHER})  # never sent again
    seq = [lone, ask(2, start=2.0, done=2.5), ask(3, start=2.6)]
    assert judge("accounts.unlock-retry-after", *seq)[0] == FAILED  # the next preparing answer still judged
    untargeted = x(1, "POST", UNLOCK, 200, {}, {"state": "preparing", "retry_after_seconds": 3}, start=1.0, done=1.5)
    save = x(2, "POST", "/api/agent/context/memories", 201, {"rows": []}, {}, start=1.6)  # no unlock sent again
    assert judge("accounts.unlock-retry-after", untargeted, save)[0] == NOT_EXERCISED


def at(exchange: Exchange, start: float) -> Exchange:
    exchange.start, exchange.done = start, start + 0.1
    return exchange


def test_a_pending_unlock_withdrawn_needs_no_poll():
    withdraw = x(2, "DELETE", f"{UNLOCK}/req-1", 200, None, {"withdrawn": True})
    status, evidence = judge("accounts.unlock-pending", pending(1), withdraw)
    assert status == PASSED
    assert evidence == [f"POST {UNLOCK} #1: pending, withdrawn by DELETE {UNLOCK}/req-1 #2 and not asked again"]
    assert links("accounts.unlock-pending", pending(1), withdraw) == [(1, 2)]
    alongside = x(2, "DELETE", f"{UNLOCK}/req-1", 200, None, {}, start=1.0)  # sent with the ask: no withdrawal of it
    assert judge("accounts.unlock-pending", pending(1), alongside)[0] == FAILED
    other = x(2, "DELETE", f"{UNLOCK}/req-9", 200, None, {})  # another request withdrawn
    assert judge("accounts.unlock-pending", pending(1), other)[0] == FAILED
    early = x(0, "DELETE", f"{UNLOCK}/req-1", 200, None, {})  # before the ask: withdraws nothing of it
    assert judge("accounts.unlock-pending", early, pending(1))[0] == FAILED
    other = x(2, "GET", "/api/agent/policies", 200, None, {"status": "approved"})  # no poll of the request
    assert judge("accounts.unlock-pending", pending(1), other)[0] == FAILED


def test_an_ask_sent_as_the_request_settled_is_no_second_ask():
    settled = poll(2, "approved")  # its answer done at 2.1: the new ask starts as it arrives
    assert (
        judge("accounts.unlock-pending", pending(1), settled, at(pending(3, rid="req-2"), 2.1), poll(4, rid="req-2"))[0]
        == PASSED
    )
    applied = edit_poll(2, "applied")
    assert judge("accounts.edit-once", queue(1), applied, at(queue(3, edit="e2"), 2.1))[0] == PASSED
    assert judge("accounts.edit-polled", queue(1), edit_poll(2, method="DELETE"))[0] == FAILED  # no poll

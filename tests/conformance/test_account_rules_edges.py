"""The edges of the account rules extended after the outsider run, on hand-made records: which
unlocks, creates and field writes each rule holds together, and the exact words it says. Each
record keeps or breaks one sentence of 001:

"`200` with `available: false` and `state` `preparing` (Decoy is asking the owner's phone for the
copy: send the same request again after `retry_after_seconds`)" — judged per record asked: another
record's ask does not stand in for it. "Same idempotency_key again (a timeout, a retry) → 200, same
id … Never a second address." — judged against the next create of the same service, past reads and
other writes in between. "and optionally `grantee_wraps` — the same to each connection
field-grantees lists." — held against a list the server answered, on field writes it kept.
`metadata_seals`: "one entry for this connection (the same record sealed to this connection's own
public key)" — on the creates the agent made, not on what it read back.
"""

from __future__ import annotations

import re
from typing import Any

from decoy_lab.conformance.rulebook import FAILED, NOT_EXERCISED, PASSED, Evidence, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.inspector.flow_record import Row

from support.exchanges import x

ACCOUNT = "5d09cdae-1b84-45f8-bbcd-a96a32475078"
OTHER = "6e1aa0bf-2c95-46a9-8cde-b07b43586189"
FIELD = "7f3b1c2d-0000-4000-8000-00000000f1e1"
LISTED = "a1a1a1a1-0000-4000-8000-000000000001"
STRANGER = "b2b2b2b2-0000-4000-8000-000000000002"
DECOYS, UNLOCK = "/api/agent/decoys", "/api/agent/unlock"
FIELDS = f"/api/agent/accounts/{ACCOUNT}/fields"
GRANTEES = f"/api/agent/accounts/{ACCOUNT}/field-grantees"
OWNER_OPENS, RETRY_AFTER, IDEMPOTENCY = (
    "accounts.owner-opens",
    "accounts.unlock-retry-after",
    "accounts.idempotency-key",
)
STOPPED = "the check stopped"


def judge(rule: str, *exchanges: Exchange) -> tuple[str, list[str], list[tuple[int, ...]]]:
    """The verdict, each evidence line's words and the exchanges each line links."""
    result = BY_ID[rule].evaluate(Run("accounts", list(exchanges), exit_code=0))
    links = [e.exchanges if isinstance(e, Evidence) else () for e in result.evidence]
    for e, linked in zip(result.evidence, links, strict=True):  # a line links the exchange it names first
        named = re.findall(r"#(\d+)", e)
        assert not named or int(named[0]) in linked, e
    return result.status, [str(e) for e in result.evidence], links


# -- an unlock answered `preparing`, judged per record ---------------------------------------------


def ask(i: int, target: Any, state: str = "preparing", request: Any = None, **kw: Any) -> Exchange:
    answer = {"available": False, "kind": "account", "state": state, "retry_after_seconds": 5}
    return x(i, "POST", UNLOCK, 200, {"target": target} if request is None else request, answer, **kw)


def gave_up(i: int) -> str:
    return (f"POST {UNLOCK} #{i}: answered `preparing` (retry_after_seconds 5) and never sent again before the "
            "agent exited: `preparing` is not `failed`")  # fmt: skip


def test_another_accounts_unlock_does_not_stand_in_for_the_one_given_up():
    for one, two in (
        ({"kind": "account", "id": ACCOUNT}, {"kind": "account", "id": OTHER}),
        ({"kind": "account", "domain": "acme.example"}, {"kind": "account", "domain": "news.example"}),
    ):
        asks = [ask(1, one, start=1.0, done=1.1), ask(2, two, start=2.0, done=2.1), ask(3, two, start=8.0)]
        status, evidence, links = judge(RETRY_AFTER, *asks)
        assert status == FAILED, one
        assert evidence == [gave_up(1)] and links == [(1,)]  # #2 was sent again (#3): only #1 was given up


def test_a_preparing_after_a_failed_answer_is_the_first_preparing_and_is_judged():
    target = {"kind": "account", "id": ACCOUNT}
    status, evidence, links = judge(RETRY_AFTER, ask(1, target, state="failed"), ask(2, target))
    assert (status, evidence, links) == (FAILED, [gave_up(2)], [(2,)])


def test_a_preparing_unlock_without_a_readable_target_is_still_judged():
    # a body the recorder could not parse as JSON, and one that names no target: still never sent again
    for request in ("target=account", {"account_id": ACCOUNT}):
        status, evidence, links = judge(RETRY_AFTER, ask(1, None, request=request))
        assert (status, evidence, links) == (FAILED, [gave_up(1)], [(1,)]), request


# -- an address resent after an unknown outcome: the next create of its service -------------------


def details(name: str, verdict: str = "readable") -> Row:
    return Row("d1", "request.sealed_details", verdict, kind="sealed details", opened_by="owner key",
               plaintext={"serviceName": name, "agentCreated": True} if verdict == "readable" else None)  # fmt: skip


def create(i: int, key: str, status: int | None = 201, name: str = "Acme Cloud", verdict: str = "readable") -> Exchange:
    body = {"sealed_details": "…", "metadata_seals": [], "idempotency_key": key}
    answer = {"id": f"decoy-{i}", "account_id": ACCOUNT} if status is not None else None
    return x(i, "POST", DECOYS, status, body, answer, [details(name, verdict)], done=None if status is None else -1.0)


def resent(new: int, old: int) -> str:
    return (f"POST {DECOYS} #{new}: sent with another idempotency_key after POST {DECOYS} #{old}'s outcome was "
            "unknown: that create may have committed, and only its own key answers it instead of minting a second "
            "address")  # fmt: skip


def test_reads_and_other_writes_between_a_lost_create_and_its_resend_are_not_the_resend():
    between = [
        x(2, "GET", DECOYS, 200, None, {"decoys": []}),  # did it commit? a fair look before resending
        x(3, "POST", UNLOCK, 200, {"target": {"kind": "account", "id": ACCOUNT}}, {"state": "failed"}),
        x(4, "POST", "/api/agent/memories", 201, {"encrypted_data": "…"}, {"id": "m1"}),
    ]
    status, evidence, _ = judge(IDEMPOTENCY, create(1, "acme-1", None), *between, create(5, "acme-1"))
    assert status == PASSED
    assert evidence == [f"POST {DECOYS} #1: idempotency_key of 6 characters", f"POST {DECOYS} #5: idempotency_key "
                        "of 6 characters"]  # fmt: skip


def test_a_lost_create_after_an_answered_one_is_still_judged():
    first = create(1, "news-1", name="News Example")
    status, evidence, links = judge(IDEMPOTENCY, first, create(2, "acme-1", None), create(3, "acme-2"))
    assert status == FAILED and evidence == [resent(3, 2)] and links == [(3, 2)]


def test_the_create_held_against_a_lost_one_is_the_next_one_not_the_last():
    lost, retry, other = create(1, "acme-1", None), create(2, "acme-2"), create(3, "news-1", name="News Example")
    status, evidence, links = judge(IDEMPOTENCY, lost, retry, other)
    assert status == FAILED and evidence == [resent(2, 1)] and links == [(2, 1)]


def test_a_lost_create_whose_service_is_unreadable_is_held_against_the_next_create():
    lost = create(1, "acme-1", None, verdict="unreadable")  # its details open with no key: service unknown
    status, evidence, links = judge(IDEMPOTENCY, lost, create(2, "acme-2"))
    assert status == FAILED and evidence == [resent(2, 1)] and links == [(2, 1)]


def test_a_lost_create_whose_body_is_not_json_is_a_create_without_a_key():
    lost = x(1, "POST", DECOYS, None, "service_name=Acme", None, done=None)
    status, evidence, links = judge(IDEMPOTENCY, lost)
    assert status == FAILED and STOPPED not in evidence[0]
    assert evidence == [f"POST {DECOYS} #1: no idempotency_key: a timeout and a retry can mint a second address"]
    assert links == [(1,)]


# -- a field's key, wrapped only to the readers field-grantees listed -------------------------------


def field_row() -> Row:
    plain = {"id": FIELD, "account_id": ACCOUNT, "fieldType": "concealed-string", "label": "API key",
             "value": "•••••• (48 characters)"}  # fmt: skip
    return Row(FIELD, "request", "readable", kind="field", opened_by="owner key", plaintext=plain)


def grantees(i: int, *ids: str, status: int = 200) -> Exchange:
    listed = [{"token_id": t, "public_key": "…", "reason": "account"} for t in ids]
    answer = {"account_id": ACCOUNT, "owner_public_key": "…", "grantees": listed} if status < 300 else {
        "code": "SCOPE_MISSING", "message": "account.read"}  # fmt: skip
    return x(i, "GET", GRANTEES, status, None, answer)


def field(i: int, *wrapped_to: str, method: str = "POST", status: int = 201, request: Any = None) -> Exchange:
    body: dict[str, Any] = {"id": FIELD, "kid": "00" * 8, "ciphertext": "…", "owner_wrap": "…", "self_wrap": "…"}
    if wrapped_to:
        body["grantee_wraps"] = [{"token_id": t, "wrapped_key": "…"} for t in wrapped_to]
    path = FIELDS if method == "POST" else f"{FIELDS}/{FIELD}"
    return x(i, method, path, status, body if request is None else request, {"id": FIELD}, [field_row()])


OPENS = "the owner's app opens its secret field 7f3b1c2d… (owner key)"


def too_far(i: int, n: int, who: str, listing: int = 1, method: str = "POST") -> str:
    path = FIELDS if method == "POST" else f"{FIELDS}/{FIELD}"
    return (f"{method} {path} #{i}: the field's key wrapped to {n} connection{'s' if n > 1 else ''} GET {GRANTEES} "
            f"#{listing} did not list ({who}): wrap it only to the readers field-grantees names")  # fmt: skip


def test_the_names_of_the_connections_a_field_key_went_to_beyond_the_list():
    ids = [f"c{n}c{n}c{n}c{n}-0000-4000-8000-00000000000{n}" for n in range(5)]
    for n, who in (
        (2, "c0c0c0c0…, c1c1c1c1…"),
        (3, "c0c0c0c0…, c1c1c1c1…, c2c2c2c2…"),
        (4, "c0c0c0c0…, c1c1c1c1…, c2c2c2c2… and 1 more"),
        (5, "c0c0c0c0…, c1c1c1c1…, c2c2c2c2… and 2 more"),
    ):
        status, evidence, links = judge(OWNER_OPENS, grantees(1), field(2, *ids[:n]))
        assert status == FAILED and evidence[0] == too_far(2, n, who) and links[0] == (2, 1), n


def test_a_field_rewritten_with_put_is_held_against_the_list():
    status, evidence, links = judge(OWNER_OPENS, grantees(1, LISTED), field(2, LISTED, STRANGER, method="PUT"))
    assert status == FAILED and evidence == [too_far(2, 1, "b2b2b2b2…", method="PUT")] and links == [(2, 1)]
    assert judge(OWNER_OPENS, grantees(1, LISTED), field(2, LISTED, method="PUT"))[0] == PASSED


def test_a_read_between_the_list_and_the_field_write_does_not_end_the_judging():
    read = x(2, "GET", f"/api/agent/accounts/{ACCOUNT}", 200, None, {"id": ACCOUNT})
    status, evidence, links = judge(OWNER_OPENS, grantees(1, LISTED), read, field(3, LISTED, STRANGER))
    assert status == FAILED and evidence == [too_far(3, 1, "b2b2b2b2…")] and links == [(3, 1)]


def test_a_refused_listing_is_no_list_and_a_refused_field_write_wrapped_nothing():
    # field-grantees refused: the agent never learnt the readers, so its wraps are not held against them
    assert judge(OWNER_OPENS, grantees(1, status=403), field(2, STRANGER)) == (PASSED, [f"POST {FIELDS} #2: {OPENS}"],
                                                                               [(2,)])  # fmt: skip
    # the server refused the field write: no key was stored for anyone
    refused = field(2, STRANGER, status=400)
    assert judge(OWNER_OPENS, grantees(1), refused) == (NOT_EXERCISED, [], [])


def test_a_field_write_whose_body_is_not_json_wraps_to_no_one():
    status, evidence, _ = judge(OWNER_OPENS, grantees(1), field(2, request="ciphertext=…"))
    assert (status, evidence) == (PASSED, [f"POST {FIELDS} #2: {OPENS}"])


# -- an address's metadata_seals entry: on the creates the agent made ------------------------------

SEALED_TO_OWNER = "it opens with the owner's key: this connection's own copy is sealed to its own public key"


def seal(reason: str = SEALED_TO_OWNER, problem: str = "metadata_seal") -> Row:
    return Row("d1", "request.metadata_seals[0].sealed_envelope", "unreadable", reason, problem,
               kind="metadata seal", opened_by="owner key")  # fmt: skip


def made(i: int, status: int = 201, row: Row | None = None) -> Exchange:
    body = {"sealed_details": "…", "metadata_seals": [{"token_id": LISTED, "sealed_envelope": "…"}],
            "idempotency_key": f"k{i}"}  # fmt: skip
    return x(i, "POST", DECOYS, status, body, {"id": f"d{i}", "account_id": ACCOUNT}, [row or seal()])


def test_a_wrong_seal_after_a_refused_create_is_still_found():
    status, evidence, links = judge(OWNER_OPENS, made(1, status=400), made(2))
    assert status == FAILED and links == [(2,)]
    assert evidence == [f"POST {DECOYS} #2: its metadata_seals entry, this connection's own copy of the address's "
                        f"details, is not sealed to its own key: {SEALED_TO_OWNER}"]  # fmt: skip


def test_a_listing_read_back_and_a_seal_that_misfits_its_layout_are_not_owner_opens_findings():
    served = Row("d1", "response.decoys[0].metadata_seal", "unreadable", "the agent cannot open it: open failed",
                 "metadata_seal", kind="metadata seal", opened_by="agent key")  # fmt: skip
    listing = x(1, "GET", DECOYS, 200, None, {"decoys": [{"id": "d1", "metadata_seal": "…"}]}, [served])
    assert judge(OWNER_OPENS, listing) == (NOT_EXERCISED, [], [])
    misfit = seal("sealed_envelope is 12 bytes: too short for a SealedBlob", "layout")  # the layouts rule's finding
    assert judge(OWNER_OPENS, made(1, row=misfit)) == (NOT_EXERCISED, [], [])

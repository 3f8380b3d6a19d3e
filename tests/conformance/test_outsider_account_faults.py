"""The account faults an agent written from the spec alone got past the check (issue 47's outsider
run), on hand-made records: each now fails the rule that quotes its sentence, and the right flow
still passes. Each record breaks (or keeps) one sentence of 001:

"Exactly one of encrypted_data, sealed_details or service_name is required." (a refused write, exit 0)
"It goes with `metadata_seals`: one entry for this connection (the same record sealed to this
connection's own public key)"
"`owner_wrap` = SealedBlob ENVELOPE to `owner_public_key` (field-grantees) whose plaintext is the
base64 text of the field key (not JSON-quoted)" "and optionally `grantee_wraps` — the same to each
connection field-grantees lists." "`200` with `available: false` and `state` `preparing` (Decoy is
asking the owner's phone for the copy: send the same request again after `retry_after_seconds`) or
`failed` (the copy has not come: carry on without it)." "Repeating the same key (same token) returns
the ORIGINAL decoy with `idempotent_replay: true` instead of creating another." And 000's "The
helper's sealPassword function and /accounts/{id}/credential route are for a login password, not an
API key": a generated password that merely holds `-sk-…` is still a password.
"""

from __future__ import annotations

import base64
import re
from types import SimpleNamespace
from typing import Any, cast

from decoy_lab.conformance.rulebook import FAILED, NOT_EXERCISED, PASSED, Evidence, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.inspector.account_bodies import AccountOpener, PhoneEye
from decoy_lab.inspector.flow_record import Flow, Row
from decoy_lab.recipes import account_records as records
from decoy_lab.recipes.trace import Trace
from decoy_lab.wire.crypto import AgentKey

from support.exchanges import x

ACCOUNT = "5d09cdae-1b84-45f8-bbcd-a96a32475078"
FIELD = "7f3b1c2d-0000-4000-8000-00000000f1e1"
LISTED = "a1a1a1a1-0000-4000-8000-000000000001"
STRANGER = "b2b2b2b2-0000-4000-8000-000000000002"
DECOYS, UNLOCK = "/api/agent/decoys", "/api/agent/unlock"
FIELDS = f"/api/agent/accounts/{ACCOUNT}/fields"
GRANTEES = f"/api/agent/accounts/{ACCOUNT}/field-grantees"
CREDENTIAL = f"/api/agent/accounts/{ACCOUNT}/credential"
OWNER = AgentKey.generate()


def judge(rule: str, *exchanges: Exchange, exit_code: int | None = 0) -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(Run("accounts", list(exchanges), exit_code=exit_code))
    for e in result.evidence:  # a line links the exchange it names first (the report's reproducer)
        named = re.findall(r"#(\d+)", e)
        assert not named or int(named[0]) in links_of(e), e
    return result.status, [str(e) for e in result.evidence]


def links_of(line: str) -> tuple[int, ...]:
    return line.exchanges if isinstance(line, Evidence) else ()


def first_links(rule: str, *exchanges: Exchange) -> tuple[int, ...]:
    """The exchanges the first evidence line links: its reproducer in the report."""
    return links_of(BY_ID[rule].evaluate(Run("accounts", list(exchanges), exit_code=0)).evidence[0])


# -- a refused account write, and the agent exits 0 ------------------------------------------------


def test_a_refused_account_write_fails_outcome_finished_even_at_exit_0():
    both = {"sealed_details": "…", "service_name": "Acme Cloud", "idempotency_key": "k1"}
    refused = x(9, "POST", DECOYS, 400, both, {"code": "INVALID_SEALED_DETAILS", "message": "exactly one form"})
    status, evidence = judge("outcome.finished", refused)
    assert status == FAILED
    assert evidence == [f"POST {DECOYS} #9: refused 400 INVALID_SEALED_DETAILS: nothing was stored (exactly one form)"]
    for path in (CREDENTIAL, FIELDS, f"{FIELDS}/{FIELD}", f"{DECOYS}/d1/edits", f"/api/agent/accounts/{ACCOUNT}"):
        for method in ("POST", "PUT", "PATCH"):
            assert judge("outcome.finished", x(1, method, path, 400, {}, {"code": "X"}))[0] == FAILED, (method, path)


def test_account_reads_and_recoverable_refusals_are_not_refused_writes():
    ask = {"code": "SCOPE_MISSING", "permission_request": {"permissions": ["account.create"]}}
    for exchange in (
        x(1, "POST", DECOYS, 403, {}, ask),  # the grant-request loop's trigger
        x(1, "POST", UNLOCK, 422, {}, {"code": "NO_CREDENTIAL"}),  # a read, not a write
        x(1, "GET", "/api/agent/accounts/public-key", 404, None, {"code": "NOT_FOUND"}),
        x(1, "POST", "/api/agent/decoys/generate-email", 400, {}, {"code": "X"}),
        x(1, "PUT", f"{FIELDS}/{FIELD}", 409, {}, {"code": "REV_CONFLICT"}),
        x(1, "DELETE", f"{FIELDS}/{FIELD}", 404, None, {"code": "NOT_FOUND"}),
    ):
        assert judge("outcome.finished", exchange)[0] == PASSED, exchange.label()


# -- a secret field: the owner opens it, and its key goes to listed readers only --------------------


def field_row(verdict: str = "readable", reason: str = "", problem: str = "") -> Row:
    plain = {"id": FIELD, "account_id": ACCOUNT, "fieldType": "concealed-string", "label": "API key",
             "value": "•••••• (48 characters)"}  # fmt: skip
    return Row(FIELD, "request", verdict, reason, problem, kind="field", opened_by="owner key",
               plaintext=plain if verdict == "readable" else None)  # fmt: skip


def grantees(i: int, *ids: str) -> Exchange:
    listed = [{"token_id": t, "public_key": "…", "reason": "account"} for t in ids]
    return x(i, "GET", GRANTEES, 200, None, {"account_id": ACCOUNT, "owner_public_key": "…", "grantees": listed})


def field(i: int, *wrapped_to: str, row: Row | None = None, status: int = 201) -> Exchange:
    body: dict[str, Any] = {"id": FIELD, "kid": "00" * 8, "ciphertext": "…", "owner_wrap": "…", "self_wrap": "…"}
    if wrapped_to:
        body["grantee_wraps"] = [{"token_id": t, "wrapped_key": "…"} for t in wrapped_to]
    return x(i, "POST", FIELDS, status, body, {"id": FIELD, "status": "created"}, [row or field_row()])


def test_a_field_whose_owner_wrap_holds_the_raw_key_fails_owner_opens():
    raw = field_row("unreadable", "the owner's app cannot open it: owner_wrap does not open with the owner key: the "
                    "owner wrap holds 32 raw bytes; the owner's app expects the 44-character base64 TEXT of the key",
                    "field")  # fmt: skip
    status, evidence = judge("accounts.owner-opens", grantees(1), field(2, row=raw))
    assert status == FAILED
    assert evidence == [
        f"POST {FIELDS} #2: the owner's app cannot open its secret field 7f3b1c2d…: owner_wrap does not open with "
        "the owner key: the owner wrap holds 32 raw bytes; the owner's app expects the 44-character base64 TEXT of "
        "the key"
    ]
    status, evidence = judge("accounts.owner-opens", grantees(1), field(2))
    assert status == PASSED and evidence == [f"POST {FIELDS} #2: the owner's app opens its secret field 7f3b1c2d… "
                                             "(owner key)"]  # fmt: skip
    refused = field(2, row=raw, status=400)  # nothing was stored: nothing for the owner to open
    assert judge("accounts.owner-opens", refused)[0] == NOT_EXERCISED


def test_a_field_the_owner_opens_but_another_reader_cannot_is_not_the_owners_failure():
    for problem in ("self_wrap", "grantee_wraps"):
        row = field_row("unreadable", "self_wrap holds another key", problem)
        assert judge("accounts.owner-opens", field(2, row=row))[0] == PASSED, problem


def test_a_field_key_wrapped_to_a_connection_field_grantees_did_not_list_fails():
    status, evidence = judge("accounts.owner-opens", grantees(1, LISTED), field(2, LISTED, STRANGER))
    assert status == FAILED
    assert evidence == [
        f"POST {FIELDS} #2: the field's key wrapped to 1 connection GET {GRANTEES} #1 did not list (b2b2b2b2…): "
        "wrap it only to the readers field-grantees names"
    ]
    assert first_links("accounts.owner-opens", grantees(1, LISTED), field(2, LISTED, STRANGER)) == (2, 1)
    many = [f"c{n}c{n}c{n}c{n}-0000-4000-8000-00000000000{n}" for n in range(5)]
    status, evidence = judge("accounts.owner-opens", grantees(1), field(2, *many))
    assert status == FAILED and "5 connections" in evidence[0] and "and 2 more" in evidence[0]
    assert judge("accounts.owner-opens", grantees(1, LISTED), field(2, LISTED))[0] == PASSED
    assert judge("accounts.owner-opens", grantees(1), field(2))[0] == PASSED  # no reader, no wrap: right
    # never read field-grantees: nothing to hold the wraps against (the owner's eye still judges it)
    assert judge("accounts.owner-opens", field(2, STRANGER))[0] == PASSED
    # the newest list counts: a reader listed later is listed
    assert judge("accounts.owner-opens", grantees(1), grantees(2, STRANGER), field(3, STRANGER))[0] == PASSED


# -- an address's metadata_seals entry: this connection's own copy, sealed to its own key ----------

RECORD = {"serviceName": "Acme Cloud", "serviceURL": "https://acme.example", "agentCreated": True}


def opened_create(seal_to: AgentKey, agent_key: AgentKey | None = None) -> list[Row]:
    """The rows the inspector opens of a create whose metadata_seals entry is sealed to `seal_to`
    (the owner's key stands in for the phone: only `key` is asked of it here)."""
    entry = base64.b64encode(records.seal_details(RECORD, seal_to.public_key_b64, kind="metadata_seal")).decode()
    sent = {"metadata_seals": [{"token_id": LISTED, "sealed_envelope": entry}], "idempotency_key": "k1"}
    opener = AccountOpener(lambda: cast(PhoneEye, SimpleNamespace(key=OWNER)), agent_key)
    flow = SimpleNamespace(method="POST", path=DECOYS, status=201)
    return opener.open(cast(Flow, flow), sent, {"id": "d1", "account_id": ACCOUNT})


def test_a_metadata_seal_sealed_to_the_owner_is_unreadable_and_fails_owner_opens():
    agent = AgentKey.generate()
    for agent_key in (None, agent):  # with or without the agent's key (--agent-key)
        rows = opened_create(OWNER, agent_key)
        assert [(r.kind, r.verdict) for r in rows] == [("metadata seal", "unreadable")], agent_key
        create_x = x(3, "POST", DECOYS, 201, {}, {"account_id": ACCOUNT}, rows)
        status, evidence = judge("accounts.owner-opens", create_x)
        assert status == FAILED and evidence[0].startswith(
            f"POST {DECOYS} #3: its metadata_seals entry, this connection's own copy of the address's details, is "
            "not sealed to its own key: "
        ), evidence
    assert "opens with the owner's key" in opened_create(OWNER)[0].reason
    right = opened_create(agent, agent)
    assert [(r.kind, r.verdict) for r in right] == [("metadata seal", "readable")]
    assert [(r.kind, r.verdict) for r in opened_create(agent)] == [("metadata seal", "layout only")]  # no key: layout
    for rows in (right, opened_create(agent)):
        assert judge("accounts.owner-opens", x(3, "POST", DECOYS, 201, {}, {}, rows))[0] == NOT_EXERCISED


# -- an unlock answered `preparing`: sent again, never taken for `failed` ---------------------------


def ask(i: int, state: str = "preparing", datatypes: list[str] | None = None, **kw: Any) -> Exchange:
    target: dict[str, Any] = {"kind": "account", "id": ACCOUNT}
    if datatypes is not None:
        target["datatypes"] = datatypes
    answer = {"available": False, "kind": "account", "state": state, "retry_after_seconds": 5}
    return x(i, "POST", UNLOCK, 200, {"target": target}, answer, **kw)


def test_a_preparing_unlock_never_sent_again_before_exit_0_fails():
    after = x(2, "GET", f"/api/agent/accounts/{ACCOUNT}/credential/status", start=1.2)
    status, evidence = judge("accounts.unlock-retry-after", ask(1, datatypes=["basic-auth"]), after)
    assert status == FAILED
    assert evidence == [
        f"POST {UNLOCK} #1: answered `preparing` (retry_after_seconds 5) and never sent again before the agent "
        "exited: `preparing` is not `failed`"
    ]
    # still running (a live inspector's record) or exited with a failure: outcome.finished's, not judged here
    assert judge("accounts.unlock-retry-after", ask(1), after, exit_code=None)[0] == NOT_EXERCISED
    assert judge("accounts.unlock-retry-after", ask(1), after, exit_code=1)[0] == NOT_EXERCISED
    # `failed` means carry on without it
    assert judge("accounts.unlock-retry-after", ask(1, state="failed"), after)[0] == NOT_EXERCISED


def test_an_unlock_sent_again_then_given_up_or_asked_another_way_is_not_taken_for_failed():
    waited = [ask(1, start=1.0, done=1.1), ask(2, start=6.5, done=6.6)]  # sent again, then stopped waiting
    assert judge("accounts.unlock-retry-after", *waited) == (
        PASSED,
        [f"POST {UNLOCK} #2: sent again 5.4 s after `preparing` (retry_after_seconds 5) in POST {UNLOCK} #1"],
    )
    # a `basic-auth` ask answered `preparing`, then the whole account asked (001: "send the request with
    # no `target.datatypes`"): the record was asked again
    other_way = [ask(1, datatypes=["basic-auth"], start=1.0, done=1.1), ask(2, start=6.5)]
    assert judge("accounts.unlock-retry-after", *other_way)[0] == NOT_EXERCISED


# -- an address resent after an unknown outcome keeps its idempotency_key ---------------------------


def details(name: str = "Acme Cloud") -> Row:
    return Row("d1", "request.sealed_details", "readable", kind="sealed details", opened_by="owner key",
               plaintext={"serviceName": name, "agentCreated": True})  # fmt: skip


def create(i: int, key: str, status: int | None = 201, name: str = "Acme Cloud") -> Exchange:
    body = {"sealed_details": "…", "metadata_seals": [], "idempotency_key": key}
    answer = {"id": f"decoy-{i}", "account_id": ACCOUNT} if status is not None else None
    return x(i, "POST", DECOYS, status, body, answer, [details(name)], done=None if status is None else -1.0)


def test_an_address_resent_with_a_new_key_after_an_unknown_outcome_fails():
    status, evidence = judge("accounts.idempotency-key", create(1, "acme-1", None), create(2, "acme-2"))
    assert status == FAILED
    assert evidence == [
        f"POST {DECOYS} #2: sent with another idempotency_key after POST {DECOYS} #1's outcome was unknown: that "
        "create may have committed, and only its own key answers it instead of minting a second address"
    ]
    assert first_links("accounts.idempotency-key", create(1, "acme-1", None), create(2, "acme-2")) == (2, 1)
    five_oh_three = create(1, "acme-1", 503)
    assert judge("accounts.idempotency-key", five_oh_three, create(2, "acme-2"))[0] == FAILED


def test_the_same_key_on_a_resend_or_another_service_passes():
    assert judge("accounts.idempotency-key", create(1, "acme-1", None), create(2, "acme-1"))[0] == PASSED
    assert judge("accounts.idempotency-key", create(1, "acme-1"), create(2, "acme-2"))[0] == PASSED  # answered
    other = create(2, "news-1", name="News Example")
    assert judge("accounts.idempotency-key", create(1, "acme-1", None), other)[0] == PASSED


# -- a generated password is a password, even when it holds `-sk-…` ---------------------------------


def credential(i: int, secret: str) -> Exchange:
    trace = Trace("the owner's app opens the credential")
    records.open_credential(records.seal_credential(secret, OWNER.public_key_b64), OWNER, trace=trace)
    row = Row(ACCOUNT, "request.encrypted_password", "readable", kind="credential", opened_by="owner key",
              plaintext={"password": f"•••••• ({len(secret)} characters)"}, trace=trace)  # fmt: skip
    return x(i, "POST", CREDENTIAL, 200, {"encrypted_password": "…"}, {"has_password": True}, [row])


def test_a_generated_password_holding_sk_is_not_an_api_key():
    generated = "pw-Q7-sk-" + "a1B2c3D4e5F6g7H8i9J0k"  # token_urlsafe can draw "-sk-" and 20 more
    assert judge("accounts.api-key-field", credential(1, generated))[0] == NOT_EXERCISED
    status, evidence = judge("accounts.api-key-field", credential(1, "sk-" + "a1B2c3D4e5F6g7H8i9J0k"))
    assert status == FAILED and "an API key (24 characters) sent as the account's password" in evidence[0]
    assert judge("accounts.api-key-field", credential(1, "sk_live_" + "3f" * 16))[0] == FAILED

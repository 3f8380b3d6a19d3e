"""The account family's rules (conformance/rules/accounts.py) on hand-made runs: each fails on the
mistake its sentence names and passes the right flow, without a sandbox. (The example agent in the
`accounts` scenario, and each rule's mutant: test_judges.py and test_mutants.py.)

000: "Keep credentials out of this memory store." "The helper's sealPassword function and
/accounts/{id}/credential route are for a login password, not an API key or a general secret
field." 001 `decoy_create`: "Client-chosen key so a timeout + retry cannot mint a second address."
"… do not create a second account for the same service." `account_credential_set`: "a wrong
format is stored and the owner's phone can't open it."
"""

from __future__ import annotations

from typing import Any

from decoy_lab.conformance.rulebook import FAILED, NOT_EXERCISED, PASSED, Exchange, Run
from decoy_lab.conformance.rules import BY_ID
from decoy_lab.inspector.flow_record import Row
from decoy_lab.recipes import account_records as records
from decoy_lab.recipes.trace import Trace
from decoy_lab.wire.crypto import AgentKey

ACCOUNT = "5d09cdae-1b84-45f8-bbcd-a96a32475078"
OTHER = "410ed77e-0000-4000-8000-000000000002"
PASSWORD = "Tk-Lisb0n-rain-2026"
API_KEY = "sk_live_" + "3f" * 16
OWNER = AgentKey.generate()


def _x(i: int, method: str, path: str, request: Any = None, response: Any = None, rows=(), status=200) -> Exchange:
    return Exchange(i, method, path, "", status, "answered", float(i), i + 0.1, request, response, {}, list(rows))


def _credential(secret: str) -> Row:
    """A credential row as the inspector opens it: the owner's recipe ran, its plaintext masked."""
    trace = Trace("the owner's app opens the credential")
    records.open_credential(records.seal_credential(secret, OWNER.public_key_b64), OWNER, trace=trace)
    shown = {"password": f"•••••• ({len(secret)} characters)"}
    return Row(ACCOUNT, "request.encrypted_password", "readable", kind="credential", opened_by="owner key",
               plaintext=shown, trace=trace)  # fmt: skip


def _record(**extra: Any) -> Row:
    plain = {"name": "Acme Tickets", "url": "https://tickets.acme.example", "agentCreated": True, **extra}
    return Row(ACCOUNT, "request.account_encrypted_data", "readable", kind="account", opened_by="owner key",
               plaintext=plain)  # fmt: skip


def _details(name: str = "Acme Tickets") -> Row:
    return Row("d1", "request.sealed_details", "readable", kind="sealed details", opened_by="owner key",
               plaintext={"serviceName": name, "agentCreated": True})  # fmt: skip


def _memory(text: str) -> Row:
    return Row("m1", "request.rows[0]", "readable", kind="memory", opened_by="owner key",
               plaintext={"kind": "memory", "text": text, "about": f"account:{ACCOUNT}"})  # fmt: skip


def _field(field_type: str = "concealed-string", value: str = "•••••• (40 characters)") -> Row:
    plain = {"id": "f1", "account_id": ACCOUNT, "fieldType": field_type, "label": "API key", "value": value}
    return Row("f1", "request", "readable", kind="field", opened_by="owner key", plaintext=plain)


def _create(i: int, account: str = ACCOUNT, key: str | None = "sign-up-1", replay: bool = False, record=None):
    body: dict[str, Any] = {"sealed_details": "…", "account_encrypted_data": "…"}
    if key is not None:
        body["idempotency_key"] = key
    answer = {"id": f"decoy-{i}", "account_id": account, "idempotent_replay": replay}
    return _x(i, "POST", "/api/agent/decoys", body, answer, [record or _record(), _details()], status=201)


def _flow(*, memory: str = "Acme Tickets: signed up; the login and API key are on the account.", record=None,
          credential: str = PASSWORD, field: Row | None = None) -> Run:  # fmt: skip
    cred = f"/api/agent/accounts/{ACCOUNT}/credential"
    return Run("accounts", [
        _create(1, record=record),
        _x(2, "POST", cred, {"encrypted_password": "…"}, {"has_password": True}, [_credential(PASSWORD)]),
        *([_x(3, "POST", cred, {"encrypted_password": "…"}, {"has_password": True}, [_credential(credential)])]
          if credential != PASSWORD else []),
        _x(4, "POST", f"/api/agent/accounts/{ACCOUNT}/fields", {"id": "f1"}, {"status": "created"},
           [field or _field()], status=201),
        _x(5, "POST", "/api/agent/context/memories", {"rows": [{"id": "m1"}]}, {}, [_memory(memory)], status=201),
    ])  # fmt: skip


def _status(rule: str, run: Run) -> tuple[str, list[str]]:
    result = BY_ID[rule].evaluate(run)
    return result.status, [str(e) for e in result.evidence]


def test_the_right_flow_passes_every_account_rule():
    run = _flow()
    for rule in ("accounts.no-credentials-in-memory", "accounts.api-key-field", "accounts.idempotency-key",
                 "accounts.one-address", "accounts.owner-opens"):  # fmt: skip
        assert _status(rule, run)[0] == PASSED, (rule, _status(rule, run))


def test_the_password_in_a_memory_or_the_record_notes_fails_and_is_never_shown():
    status, evidence = _status("accounts.no-credentials-in-memory", _flow(memory=f"Credentials: me@x / {PASSWORD}"))
    assert status == FAILED and "#5" in evidence[0] and "#2" in evidence[0] and "19 characters" in evidence[0]
    notes = _record(notes=f"log in with {PASSWORD}")
    status, evidence = _status("accounts.no-credentials-in-memory", _flow(record=notes))
    assert status == FAILED and "its notes holds the login password" in evidence[0]
    status, evidence = _status("accounts.no-credentials-in-memory", _flow(record=_record(notes="password: hunter22")))
    assert status == FAILED and "a password" in evidence[0]
    assert not any(PASSWORD in e or "hunter22" in e for e in evidence)


def test_an_api_key_as_the_password_or_a_plain_field_fails():
    status, evidence = _status("accounts.api-key-field", _flow(credential=API_KEY))
    assert status == FAILED and "#3" in evidence[0] and API_KEY not in evidence[0]
    assert _status("accounts.no-credentials-in-memory", _flow(credential=API_KEY))[0] == PASSED  # not its rule
    status, evidence = _status("accounts.api-key-field", _flow(field=_field("string", API_KEY)))
    assert status == FAILED and "fieldType 'string'" in evidence[0]
    status, evidence = _status("accounts.api-key-field", _flow(record=_record(notes=f"key {API_KEY}")))
    assert status == FAILED and "account record" in evidence[0]


def test_an_address_needs_an_idempotency_key_and_is_made_once():
    assert _status("accounts.idempotency-key", Run("accounts", [_create(1, key=None)]))[0] == FAILED
    assert _status("accounts.idempotency-key", Run("accounts", [_create(1, key="k" * 129)]))[0] == FAILED
    replayed = Run("accounts", [_create(1), _create(2, replay=True)])
    assert _status("accounts.one-address", replayed)[0] == PASSED  # the same key answered the original
    status, evidence = _status("accounts.one-address", Run("accounts", [_create(1), _create(2, OTHER, "sign-up-2")]))
    assert status == FAILED and "#2" in evidence[0] and "#1" in evidence[0]


def test_a_credential_or_record_the_owner_cannot_open_fails():
    bad = Row(ACCOUNT, "request.encrypted_password", "unreadable", "the owner's app cannot open it: header check "
              "failed", "credential", kind="credential", opened_by="owner key")  # fmt: skip
    run = Run("accounts", [_x(2, "POST", f"/api/agent/accounts/{ACCOUNT}/credential", {}, {}, [bad])])
    status, evidence = _status("accounts.owner-opens", run)
    assert status == FAILED and evidence[0].endswith("cannot open its credential: header check failed")
    layout = Row(ACCOUNT, "request.encrypted_password", "layout only", kind="credential")  # no owner key: no verdict
    run = Run("accounts", [_x(2, "POST", f"/api/agent/accounts/{ACCOUNT}/credential", {}, {}, [layout])])
    assert _status("accounts.owner-opens", run)[0] == NOT_EXERCISED
    refused = _x(2, "POST", f"/api/agent/accounts/{ACCOUNT}/credential", {}, {"code": "NOT_FOUND"}, [bad], 404)
    assert _status("accounts.owner-opens", Run("accounts", [refused]))[0] == NOT_EXERCISED  # nothing was stored

"""The account family's bodies opened in flight, over real HTTP through the inspector in front of a
sandbox: an account record, a credential, a secret field, a Decoy address's details and seals, an
edit patch and an unlock answer, each opened as the owner's app would (or with the agent's key for
what is sealed to it) and given a verdict like a memory row.

001, `account_credential_set`: "The server can't read it to validate it: a wrong format is stored
and the owner's phone can't open it"; `account_field_create`: "`owner_wrap` = SealedBlob ENVELOPE
to `owner_public_key` … whose plaintext is the base64 text of the field key"; `unlock_poll`:
"includes the encrypted envelopes on first fetch". A secret is never shown raw unless revealed.
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from decoy_lab import AgentKey
from decoy_lab.inspector import Inspector, flow_record
from decoy_lab.recipes import sealing
from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.testing import pair_agent
from decoy_lab.widgets.flowdetail import detail_of
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

pytestmark = pytest.mark.timeout(120)
ACCOUNTS, DECOYS, UNLOCK = "/api/agent/accounts", "/api/agent/decoys", "/api/agent/unlock"
MAKER = [{"permissions": ["account.create"]}, {"permissions": ["memory.save"]}]
PASSWORD, API_KEY = "hunter2-correct-horse", "sk-live-0123456789"


class Agent:
    """One paired agent talking through the inspector; `send` returns the answer and its flow."""

    def __init__(self, sandbox, insp, key, client):
        self.sandbox, self.insp, self.key, self.client = sandbox, insp, key, client
        self.token = pair_agent(insp.url, key, MAKER, "Account agent")

    def send(self, method: str, path: str, **kw):
        headers = {"Authorization": f"Bearer {self.token['access_token']}"}
        r = self.client.request(method, f"{self.insp.url}{path}", headers=headers, **kw)
        self.insp.settle()
        return r, self.insp.flow(len(self.insp))

    def owner_pk(self) -> str:
        return self.send("GET", f"{ACCOUNTS}/public-key")[0].json()["public_key"]

    def create(self, record: dict | None = None):
        record = record or {"name": "Acme", "username": "me@acme.test"}
        blob = sealing.seal_envelope(sealing.json_bytes(record), self.owner_pk(), owner=True)
        r, flow = self.send("POST", ACCOUNTS, json={"encrypted_data": wire.b64encode(blob)})
        assert r.status_code == 201, r.text
        return r.json()["id"], flow

    def set_password(self, account_id: str, password: str = PASSWORD, *, to: str | None = None):
        sealed = sealing.seal_envelope(password.encode(), to or self.owner_pk(), owner=False)
        r, flow = self.send(
            "POST", f"{ACCOUNTS}/{account_id}/credential", json={"encrypted_password": wire.b64encode(sealed)}
        )
        assert r.status_code == 200, r.text
        return flow

    def field_body(self, account_id: str, value: str = API_KEY, *, bound_to: str | None = None):
        key, fid = random_key(), str(uuid.uuid4())
        grantees = self.send("GET", f"{ACCOUNTS}/{account_id}/field-grantees")[0].json()
        plain = {"id": fid, "account_id": bound_to or account_id, "fieldType": "concealed-string", "label": "API key"}
        body = {
            "id": fid,
            "kid": wire.kid(key),
            "ciphertext": wire.b64encode(sealing.seal_json(key, {**plain, "value": value})),
            "owner_wrap": wire.b64encode(sealing.wrap_to_owner(key, grantees["owner_public_key"])),
            "self_wrap": wire.b64encode(sealing.wrap_to_agent(key, self.key.public_key_b64)),
            "grantee_wraps": [],
        }
        return body, key

    def add_field(self, account_id: str, **kw):
        body, key = self.field_body(account_id, **kw)
        r, flow = self.send("POST", f"{ACCOUNTS}/{account_id}/fields", json=body)
        assert r.status_code == 201, r.text
        return body, key, flow

    def unlock(self, account_id: str):
        """Read the account back: the phone seals a copy, then the poll serves the envelope once."""
        ask = {"target": {"kind": "account", "id": account_id}}
        r, _ = self.send("POST", UNLOCK, json=ask)
        if r.status_code == 200:  # preparing: the owner's phone makes the copy
            httpx.post(f"{self.sandbox.url}/_sandbox/keep", json={})
            r, _ = self.send("POST", UNLOCK, json=ask)
        assert r.status_code == 201 and r.json()["status"] == "ready", r.text
        got, flow = self.send("GET", f"{UNLOCK}/{r.json()['id']}")
        assert got.json()["items"], got.text
        return flow


@pytest.fixture
def lab(owner, agent_key, client):
    with Sandbox.start(owner_key=owner, seed="none") as sb, Inspector.start(sandbox=sb, agent_key=agent_key) as insp:
        yield Agent(sb, insp, agent_key, client)


def test_an_account_its_credential_and_its_field_open_readable(lab):
    account_id, made = lab.create()
    (record,) = made.rows
    assert (record.id, record.kind, record.verdict, record.text) == (
        account_id,
        "account",
        flow_record.READABLE,
        "Acme",
    )
    assert record.opened_by == "owner key" and record.field == "request.encrypted_data"
    assert made.verdict == flow_record.READABLE

    saved = lab.set_password(account_id)
    (cred,) = saved.rows
    assert (cred.kind, cred.verdict, cred.opened_by) == ("credential", flow_record.READABLE, "owner key")
    assert cred.text == f"password •••••• ({len(PASSWORD)} characters)"
    assert cred.recipe_trace().ok and saved.verdict == flow_record.READABLE

    body, key, added = lab.add_field(account_id)
    (field,) = added.rows
    assert (field.id, field.kind, field.kid, field.verdict) == (
        body["id"],
        "field",
        wire.kid(key),
        flow_record.READABLE,
    )
    assert field.opened_by == "owner key, agent key"  # owner_wrap opens it; self_wrap gives the same key
    assert field.text == f"API key: •••••• ({len(API_KEY)} characters)"
    assert [s.name for s in field.recipe_trace()][-1] == "bind check: id and account_id"

    _, served = lab.send("GET", f"{ACCOUNTS}/{account_id}/fields")
    assert [(r.id, r.verdict, r.opened_by) for r in served.rows] == [(body["id"], flow_record.READABLE, "agent key")]

    # a change that keeps its key: opened with the key learned above, no wrap sent
    changed = {**body, "value": "sk-live-new-9876543210"}
    new_ct = wire.b64encode(sealing.seal_json(key, {"id": body["id"], "account_id": account_id,
                                                   "fieldType": "concealed-string", "label": "API key",
                                                   "value": changed["value"]}))  # fmt: skip
    r, put = lab.send(
        "PUT", f"{ACCOUNTS}/{account_id}/fields/{body['id']}", json={"expected_rev": 1, "ciphertext": new_ct}
    )
    assert r.status_code == 200, r.text
    assert [(x.verdict, x.opened_by) for x in put.rows] == [(flow_record.READABLE, "kept key")]

    frame = lab.insp.rows(added.id)
    assert list(frame["verdict"]) == [flow_record.READABLE] and list(frame["kind"]) == ["field"]


def test_a_credential_sealed_to_the_wrong_key_is_flagged_with_the_owners_reason(lab):
    account_id, _ = lab.create()
    flow = lab.set_password(account_id, to=AgentKey.generate().public_key_b64)
    (cred,) = flow.rows
    assert cred.verdict == flow_record.UNREADABLE and cred.problem == "credential"
    assert cred.reason.startswith("the owner's app cannot open it: RSA-OAEP-SHA256 unwrap failed ("), cred.reason
    assert "does not open with the owner key" in cred.reason  # the owner's phone's own words
    assert flow.verdict == "1 unreadable"
    trace = cred.recipe_trace()
    assert trace.failed is not None and trace.failed.name == "RSA-OAEP-SHA256 unwrap"
    (shown,) = detail_of(flow)["rows"]
    assert shown["verdict"] == flow_record.UNREADABLE and shown["recipe"]["steps"][shown["recipe"]["failed"]][
        "name"
    ] == ("RSA-OAEP-SHA256 unwrap")


def test_a_field_that_names_another_account_fails_its_bind_check(lab):
    account_id, _ = lab.create()
    other_id, _ = lab.create({"name": "Other"})
    _, _, flow = lab.add_field(account_id, bound_to=other_id)
    (field,) = flow.rows
    assert field.verdict == flow_record.UNREADABLE and field.problem == "field"
    assert "bind check: id and account_id failed" in field.reason and "names another row" in field.reason


def test_an_opened_secret_never_appears_raw(lab):
    account_id, _ = lab.create()
    lab.set_password(account_id)
    lab.add_field(account_id)
    answer = lab.unlock(account_id)
    (opened,) = answer.rows
    assert (opened.kind, opened.verdict, opened.opened_by) == ("unlock answer", flow_record.READABLE, "agent key")
    assert "Acme" in opened.text and "API key" in opened.text and "••••••" in opened.text
    insp = lab.insp
    seen = [
        json.dumps([f.to_dict() for f in insp.all_flows()]),
        insp.flows.to_string(),
        *(insp.rows(f.id).to_string() for f in insp.all_flows()),
        json.dumps(insp.to_har()),
        *(json.dumps(detail_of(f), default=str) for f in insp.all_flows()),
        repr(insp),
        *(repr(f) for f in insp.all_flows()),
        *(repr(r) + repr(r.plaintext) + repr(r.trace) for f in insp.all_flows() for r in f.rows),
        *(r.recipe_trace().to_text() for f in insp.all_flows() for r in f.rows if r.recipe_trace() is not None),
    ]
    for secret in (PASSWORD, API_KEY):
        assert not [s for s in seen if secret in s], f"{secret!r} shown raw"


def test_revealed_the_opened_secret_is_shown(owner, agent_key, client):
    with (
        Sandbox.start(owner_key=owner, seed="none") as sb,
        Inspector.start(sandbox=sb, agent_key=agent_key, reveal=True) as insp,
    ):
        agent = Agent(sb, insp, agent_key, client)
        account_id, _ = agent.create()
        (cred,) = agent.set_password(account_id).rows
        assert cred.text == f"password {PASSWORD}" and cred.plaintext == {"password": PASSWORD}


def test_a_decoy_its_details_its_seal_and_an_edit_open(lab):
    owner_pk = lab.owner_pk()
    details = {"serviceName": "Shop", "serviceURL": "https://shop.example", "agentCreated": True}
    seal = sealing.seal_envelope(sealing.json_bytes(details), lab.key.public_key_b64, owner=False)
    record = sealing.seal_envelope(sealing.json_bytes({"name": "Shop"}), owner_pk, owner=True)
    body = {
        "sealed_details": wire.b64encode(sealing.seal_envelope(sealing.json_bytes(details), owner_pk, owner=False)),
        "metadata_seals": [{"token_id": lab.token["token_id"], "sealed_envelope": wire.b64encode(seal)}],
        "account_encrypted_data": wire.b64encode(record),
    }
    r, made = lab.send("POST", DECOYS, json=body)
    assert r.status_code == 201, r.text
    decoy_id = r.json()["id"]
    by_kind = {x.kind: x for x in made.rows}
    assert set(by_kind) == {"account", "sealed details", "metadata seal"}
    assert all(x.verdict == flow_record.READABLE for x in made.rows), [(x.kind, x.reason) for x in made.rows]
    assert by_kind["sealed details"].text == "Shop (https://shop.example)"
    assert by_kind["metadata seal"].opened_by == "agent key" and by_kind["account"].id == r.json()["account_id"]

    _, read = lab.send("GET", f"{DECOYS}/{decoy_id}")
    assert [(x.kind, x.verdict) for x in read.rows] == [("metadata seal", flow_record.READABLE)]

    patch = {"v": 1, "set": {"serviceName": "Shop & Co"}, "unset": ["avatarUrl"]}
    sealed = sealing.seal_envelope(sealing.json_bytes(patch), owner_pk, owner=False)
    r, edit = lab.send("POST", f"{DECOYS}/{decoy_id}/edits", json={"sealed_patch": wire.b64encode(sealed)})
    assert r.status_code == 202, r.text
    (row,) = edit.rows
    assert (row.id, row.kind, row.verdict) == (r.json()["edit_id"], "edit patch", flow_record.READABLE)
    assert row.text == "serviceName → 'Shop & Co'; unset avatarUrl"


def test_without_keys_each_body_is_parsed_by_layout_and_a_recording_reopens_with_them(owner, agent_key, client):
    with Sandbox.start(owner_key=owner, seed="none") as sb, Inspector.start(sb.url) as insp:
        agent = Agent(sb, insp, agent_key, client)
        account_id, made = agent.create()
        saved = agent.set_password(account_id)
        _, _, added = agent.add_field(account_id)
        for flow in (made, saved, added):
            (row,) = flow.rows
            assert row.verdict == flow_record.LAYOUT and row.reason.startswith("no key opens it"), row.reason
        assert "RSA-2048" in saved.rows[0].certainty
        assert added.rows[0].certainty.startswith("ciphertext looks like a VAULT blob")
        doc = insp.to_har()
    again = Inspector.open(doc, owner_key=owner, agent_key=agent_key)
    verdicts = {f.path.rsplit("/", 1)[-1]: f.verdict for f in again.all_flows() if f.rows}
    assert verdicts == {
        "accounts": flow_record.READABLE,
        "credential": flow_record.READABLE,
        "fields": flow_record.READABLE,
    }


def test_a_vault_record_opens_with_the_owners_vault_key(lab):
    from decoy_lab.sandbox.phone import acctopen

    blob = wire.b64encode(sealing.seal_json(acctopen.vault_key(lab.sandbox.state), {"name": "Vaulted"}))
    r, made = lab.send("POST", ACCOUNTS, json={"encrypted_data": blob})
    assert r.status_code == 201, r.text
    assert [(x.verdict, x.opened_by, x.text) for x in made.rows] == [(flow_record.READABLE, "vault key", "Vaulted")]
    offline = Inspector.open(lab.insp.to_har(), owner_key=lab.sandbox.owner.key)  # no vault key offline
    (row,) = [x for f in offline.all_flows() for x in f.rows if f.id == made.id]
    assert row.verdict == flow_record.LAYOUT and "vault key" in row.reason


def test_the_checkers_owner_check_opens_the_account_family(owner, agent_key, client):
    from decoy_lab.conformance.recording import start_inspector

    with Sandbox.start(owner_key=owner, seed="none") as sb:
        insp = start_inspector(sb.url, sb, agent_key=agent_key.to_pem())
        try:
            agent = Agent(sb, insp, agent_key, client)
            account_id, made = agent.create()
            assert made.verdict == flow_record.READABLE
            (cred,) = agent.set_password(account_id, to=AgentKey.generate().public_key_b64).rows
            assert cred.verdict == flow_record.UNREADABLE and "RSA-OAEP-SHA256 unwrap failed" in cred.reason
        finally:
            insp.close()

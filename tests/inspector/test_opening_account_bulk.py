"""The account family's newer bodies opened in flight, through the inspector in front of a sandbox:
accounts in bulk, a protected account's new address, the pending edits a vault-key surface lists,
and a saved login served by `sealed-secrets`.

001, `account_create_batch`: "every item must carry `encrypted_data` (a base64 **VAULT** SealedBlob
sealed client-side)"; `account_protect`: "`decoy_encrypted_data` … Optional client-sealed VAULT
SealedBlob"; `decoy_edits_pending_list`: "open `sealed_patch` with the owner's private key";
`sealed_secrets_list`: "`kind: "account"` → `{ host, username, password }`". A secret is never shown
raw unless revealed.
"""

from __future__ import annotations

import httpx
import pytest

from decoy_lab import AgentKey
from decoy_lab.inspector import Inspector, flow_record
from decoy_lab.recipes import sealing
from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.phone import acctopen
from decoy_lab.sandbox.testing import pair_agent
from decoy_lab.wire import layouts as wire

pytestmark = pytest.mark.timeout(120)
ACCOUNTS = "/api/agent/accounts"
PASSWORD = "hunter2-correct-horse"


class Through:
    """One paired agent talking through the inspector; `send` returns the answer and its flow."""

    def __init__(self, sb, insp, key, client, permissions, name="Bulk agent"):
        self.sb, self.insp, self.key, self.client = sb, insp, key, client
        self.token = pair_agent(insp.url, key, permissions, name)

    def send(self, method: str, path: str, **kw):
        headers = {"Authorization": f"Bearer {self.token['access_token']}"}
        r = self.client.request(method, f"{self.insp.url}{path}", headers=headers, **kw)
        self.insp.settle()
        return r, self.insp.flow(len(self.insp))


@pytest.fixture
def lab(owner, agent_key, client):
    with Sandbox.start(owner_key=owner, seed="none") as sb, Inspector.start(sandbox=sb, agent_key=agent_key) as insp:
        yield Through(sb, insp, agent_key, client, [{"permissions": ["account.create"]}])


def _vault(lab, obj) -> str:
    return wire.b64encode(sealing.seal_json(acctopen.vault_key(lab.sb.state), obj))


def test_a_batch_and_a_protect_open_with_the_owners_vault_key(lab):
    rows = [{"encrypted_data": _vault(lab, {"name": "Mail"})}, {"encrypted_data": _vault(lab, {"name": "Bank"})}]
    r, batch = lab.send("POST", f"{ACCOUNTS}/batch", json={"accounts": rows})
    assert r.status_code == 200 and r.json()["created_count"] == 2, r.text
    made = [x["id"] for x in r.json()["results"]]
    assert [(x.id, x.kind, x.verdict, x.text, x.opened_by) for x in batch.rows] == [
        (made[0], "account", flow_record.READABLE, "Mail", "vault key"),
        (made[1], "account", flow_record.READABLE, "Bank", "vault key"),
    ]
    details = _vault(lab, {"serviceName": "Mail", "serviceURL": "https://mail.example", "agentCreated": True})
    r, protect = lab.send("POST", f"{ACCOUNTS}/{made[0]}/protect", json={"decoy_encrypted_data": details})
    assert r.status_code == 200, r.text
    (row,) = protect.rows
    assert (row.id, row.kind, row.verdict, row.text) == (
        r.json()["decoy_id"],
        "decoy details",
        flow_record.READABLE,
        "Mail (https://mail.example)",
    )


def test_a_saved_login_opens_with_the_agents_key_and_stays_masked(lab):
    record = {"name": "Acme", "username": "me@acme.test", "url": "https://acme.example/login"}
    owner_pk = lab.send("GET", f"{ACCOUNTS}/public-key")[0].json()["public_key"]
    blob = wire.b64encode(sealing.seal_envelope(sealing.json_bytes(record), owner_pk, owner=True))
    account_id = lab.send("POST", ACCOUNTS, json={"encrypted_data": blob})[0].json()["id"]
    password = wire.b64encode(sealing.seal_envelope(PASSWORD.encode(), owner_pk, owner=False))
    assert lab.send("POST", f"{ACCOUNTS}/{account_id}/credential", json={"encrypted_password": password})[0].is_success
    first, _ = lab.send("GET", "/api/agent/sealed-secrets")
    assert first.json()["preparing"] == [account_id], first.text
    httpx.post(f"{lab.sb.url}/_sandbox/keep", json={})
    _, served = lab.send("GET", "/api/agent/sealed-secrets")
    (row,) = served.rows
    assert (row.id, row.kind, row.verdict, row.opened_by) == (
        account_id,
        "sealed login",
        flow_record.READABLE,
        "agent key",
    )
    assert row.text == f"login for acme.example: username me@acme.test; password •••••• ({len(PASSWORD)} characters)"
    assert PASSWORD not in repr(row.plaintext) and PASSWORD not in (row.text or "")


def test_the_pending_edits_open_with_the_owners_key(owner, agent_key, client):
    with Sandbox.start(owner_key=owner, seed="none") as sb, Inspector.start(sandbox=sb, agent_key=agent_key) as insp:
        maker = Through(sb, insp, AgentKey.generate(), client, [{"permissions": ["account.create"]}], "Maker")
        made = maker.send("POST", "/api/agent/decoys", json={"service_name": "Shop"})[0].json()
        patch = {"v": 1, "set": {"serviceName": "Shop & Co"}}
        sealed = wire.b64encode(sealing.seal_envelope(sealing.json_bytes(patch), owner.public_key_b64, owner=False))
        queued = maker.send("POST", f"/api/agent/decoys/{made['id']}/edits", json={"sealed_patch": sealed})[0].json()
        extension = Through(sb, insp, agent_key, client, [{"permissions": ["everything"]}], "Extension")
        r, listed = extension.send("GET", "/api/agent/decoy-edits")
        assert r.status_code == 200, r.text
        (row,) = listed.rows
        assert (row.id, row.kind, row.verdict, row.text) == (
            queued["edit_id"],
            "edit patch",
            flow_record.READABLE,
            "serviceName → 'Shop & Co'",
        )

"""The bodies `Connection` sends for the account family, opened by the independent Node
implementation (tests/support/interop, written from the spec on WebCrypto) with the sandbox owner's
key and this connection's key — as the memory rows are (tests/memory/test_memory_interop.py).

001, `decoy_create`: `sealed_details` "sealed to the owner's public key", `metadata_seals` "the same
record sealed to THIS connection's own public key", and the owner's key: "Seal the record to this
key (SealedBlob **ENVELOPE** mode …) and send it as `account_encrypted_data`"; `account_credential_set`:
a headerless envelope "whose plaintext is the password's UTF-8 bytes"; `account_field_create`: steps 1–4.
"""

from __future__ import annotations

import json

import pytest

from decoy_lab.sandbox import Sandbox
from decoy_lab.wire import layouts as wire

from support.connections import paired
from support.node import requires_node, run_batch

pytestmark = requires_node


@pytest.fixture(scope="module")
def sb():
    with Sandbox.start(seed="none") as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


def test_what_the_connection_sends_opens_in_node(sb):
    conn = paired(sb, ["account.create"], name="Interop")
    sent: dict[str, dict] = {}
    real = conn.session.api.request

    def request(method, path, **kw):
        if method == "POST":
            sent.setdefault(path.rsplit("/", 1)[-1], kw.get("json"))
        return real(method, path, **kw)

    conn.session.api.request = request
    made = conn.create_account("Acme", url="https://acme.example", username="me@acme.test")
    conn.set_password(made.account_id, "hünter2")
    field = conn.add_field(made.account_id, "API key", "sk-live-123")
    owner_pem, agent_pem = sb.owner.key.to_pem(), conn.agent_key.to_pem()
    decoy, cred, fld = sent["decoys"], sent["credential"], sent["fields"]
    details, seal, record, password, owner_key, self_key = run_batch(
        [
            {"op": "openEnvelope", "envelope": decoy["sealed_details"], "privateKeyPem": owner_pem, "owner": False},
            {
                "op": "openEnvelope",
                "envelope": decoy["metadata_seals"][0]["sealed_envelope"],
                "privateKeyPem": agent_pem,
                "owner": False,
            },
            {
                "op": "openEnvelope",
                "envelope": decoy["account_encrypted_data"],
                "privateKeyPem": owner_pem,
                "owner": True,
            },
            {"op": "openEnvelope", "envelope": cred["encrypted_password"], "privateKeyPem": owner_pem, "owner": False},
            {"op": "unwrapAsOwner", "envelope": fld["owner_wrap"], "privateKeyPem": owner_pem},
            {"op": "unwrapAsAgent", "envelope": fld["self_wrap"], "privateKeyPem": agent_pem},
        ]
    )
    assert all(a["ok"] for a in (details, seal, record, password, owner_key, self_key))
    opened = json.loads(wire.b64decode(details["payload"]))
    assert opened == {"serviceName": "Acme", "serviceURL": "https://acme.example", "agentCreated": True}
    assert json.loads(wire.b64decode(seal["payload"])) == opened
    assert json.loads(wire.b64decode(record["payload"]))["username"] == "me@acme.test"
    assert wire.b64decode(password["payload"]).decode("utf-8") == "hünter2"
    assert owner_key["key"] == self_key["key"] and wire.kid(wire.b64decode(owner_key["key"])) == fld["kid"]
    (plain,) = run_batch([{"op": "openVault", "key": owner_key["key"], "blob": fld["ciphertext"]}])
    assert json.loads(wire.b64decode(plain["plaintext"])) == {
        "id": field.id,
        "account_id": made.account_id,
        "fieldType": "concealed-string",
        "label": "API key",
        "value": "sk-live-123",
    }
    conn.close()

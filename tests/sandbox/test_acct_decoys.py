"""Decoy addresses over HTTP: created with their account in one call, read, updated, edited by the phone.

001, `decoy_create`: "This call creates the account and its Decoy email address in one call …
Needs `account.create`. Without it the call answers `403 SCOPE_MISSING` naming `decoy.write`";
"`idempotency_key` … Repeating the same key (same token) returns the ORIGINAL decoy with
`idempotent_replay: true` instead of creating another"; `sealed_details` "Requires
`metadata_seals` (400 `METADATA_SEAL_REQUIRED`)". `decoy_update`: "A plaintext `avatar` or
`service_name` (without `encrypted_data`) is refused with `400` `code: ENCRYPTED_DATA_REQUIRED`".
`decoy_edit_request`: "seal a small patch to the owner's public key and queue it here: the owner's
devices … apply it to the sealed details and re-seal them".
"""

from __future__ import annotations

from support.acctfamily_kit import ACCOUNTS, open_sealed, patch, sealed_to

DECOYS = "/api/agent/decoys"
RECORD = {"serviceName": "Acme", "serviceURL": "https://acme.example", "avatarUrl": "/decoy-variant-ninja.png"}


def _sealed_body(peer, lab, **extra):
    record = {**RECORD, "agentCreated": True}
    return {
        "sealed_details": sealed_to(lab.owner.public_key_b64, record),
        "metadata_seals": [{"token_id": peer.token_id, "sealed_envelope": sealed_to(peer.key.public_key_b64, record)}],
        **extra,
    }


def test_a_sealed_create_makes_the_account_and_its_address_once_per_key(lab):
    agent = lab.pair("signup", "account.create")
    first = agent.post(DECOYS, _sealed_body(agent, lab, idempotency_key="acme-1", label="acme"))
    assert first.status_code == 201, first.text
    made = first.json()
    assert made["email"].endswith("@decoys.me") and made["metadata_seals_stored"] == 1
    assert "service_name" not in made, "with sealed_details it carries neither"
    assert open_sealed(agent, made["metadata_seal"])["serviceName"] == "Acme"
    again = agent.post(DECOYS, _sealed_body(agent, lab, idempotency_key="acme-1"))
    assert again.status_code == 200 and again.json()["idempotent_replay"] is True
    assert again.json()["id"] == made["id"] and again.json()["email"] == made["email"]
    listed = agent.get(ACCOUNTS).json()["accounts"]
    assert [a["id"] for a in listed] == [made["account_id"]], "one account, never a second"
    assert listed[0]["decoy_id"] == made["id"] and listed[0]["decoy_email"] == made["email"]


def test_without_account_create_it_is_scope_missing_naming_decoy_write(lab):
    reader = lab.pair("reader", "account.read")
    r = reader.post(DECOYS, {"service_name": "Acme"})
    assert r.status_code == 403 and r.json()["code"] == "SCOPE_MISSING", r.text
    assert r.json()["required_scope"] == "decoy.write"
    assert r.json()["permission_request"] == {"permissions": ["account.create"]}


def test_sealed_details_need_this_connections_seal(lab):
    agent = lab.pair("signup", "account.create")
    body = _sealed_body(agent, lab)
    r = agent.post(DECOYS, {**body, "metadata_seals": []})
    assert r.status_code == 400 and r.json()["code"] == "METADATA_SEAL_REQUIRED", r.text
    other = lab.pair("other", "memory.save")
    wrong = [{"token_id": other.token_id, "sealed_envelope": body["metadata_seals"][0]["sealed_envelope"]}]
    r = agent.post(DECOYS, {**body, "metadata_seals": wrong})
    assert r.status_code == 400 and r.json()["code"] == "METADATA_SEAL_NOT_FOR_CALLER"
    r = agent.post(DECOYS, {**body, "service_name": "Acme"})
    assert r.status_code == 400 and r.json()["code"] == "INVALID_SEALED_DETAILS"
    assert agent.get(ACCOUNTS).json()["accounts"] == [], "nothing was created"


def test_a_plain_create_names_the_account_and_the_phone_seals_it_for_readers(lab):
    agent = lab.pair("signup", "account.create")
    r = agent.post(DECOYS, {"service_name": "Nike", "service_url": "https://nike.example"})
    assert r.status_code == 201 and r.json()["service_name"] == "Nike", r.text
    made = r.json()
    assert open_sealed(agent, made["metadata_seal"])["serviceName"] == "Nike"
    mail = lab.pair("mail", {"permissions": ["acctmail.read"], "account_id": made["account_id"]})
    before = mail.get(f"{DECOYS}/{made['id']}").json()
    assert before["metadata_seal"] is None and before["metadata_seal_state"] == "preparing"
    assert lab.client.post("/_sandbox/keep", json={}).json()["decoy_seals"] >= 1
    after = mail.get(f"{DECOYS}/{made['id']}").json()
    assert open_sealed(mail, after["metadata_seal"])["serviceName"] == "Nike"


def test_patch_refuses_plain_names_and_a_stale_rev(lab):
    agent = lab.pair("signup", "account.create")
    made = agent.post(DECOYS, _sealed_body(agent, lab)).json()
    path = f"{DECOYS}/{made['id']}"
    r = patch(agent, path, {"service_name": "Other"})
    assert r.status_code == 400 and r.json()["code"] == "ENCRYPTED_DATA_REQUIRED", r.text
    assert patch(agent, path, {"label": "x", "expected_rev": 1}).json()["rev"] == 1, "label does not bump rev"
    stale = patch(agent, path, {"label": "y", "expected_rev": 7})
    assert stale.status_code == 409 and stale.json()["error"]["current_rev"] == 1
    stranger = lab.pair("stranger", "acctmail.read")
    r = patch(stranger, path, {"label": "z"})
    assert r.status_code == 403 and r.json()["required_permission"] == "acctmail.edit", r.text


def test_a_queued_edit_is_applied_by_the_owners_phone(lab):
    agent = lab.pair("signup", "account.create")
    made = agent.post(DECOYS, _sealed_body(agent, lab)).json()
    patch_plain = {"v": 1, "set": {"serviceName": "Acme Pro"}, "unset": []}
    r = agent.post(f"{DECOYS}/{made['id']}/edits", {"sealed_patch": sealed_to(lab.owner.public_key_b64, patch_plain)})
    assert r.status_code == 202 and r.json()["status"] == "pending", r.text
    edit = r.json()["edit_id"]
    assert agent.get(f"{DECOYS}/{made['id']}/edits/{edit}").json()["status"] == "pending"
    bad = agent.post(
        f"{DECOYS}/{made['id']}/edits",
        {"sealed_patch": sealed_to(lab.owner.public_key_b64, {"v": 1, "set": {"x": "y"}})},
    )
    assert lab.client.post("/_sandbox/keep", json={}).json()["edits"] == 2
    done = agent.get(f"{DECOYS}/{made['id']}/edits/{edit}").json()
    assert done["status"] == "applied" and done["applied_rev"] == 2
    rejected = agent.get(f"{DECOYS}/{made['id']}/edits/{bad.json()['edit_id']}").json()
    assert rejected == rejected | {"status": "rejected", "reject_reason": "no_supported_keys"}
    lab.client.post("/_sandbox/keep", json={})  # the phone seals the renamed details again
    seen = agent.get(f"{DECOYS}/{made['id']}").json()
    assert seen["rev"] == 2 and open_sealed(agent, seen["metadata_seal"])["serviceName"] == "Acme Pro"

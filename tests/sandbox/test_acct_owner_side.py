"""The owner's side of the account family on `/_sandbox/`: the queued decoy edits one at a time,
and a Personal Alias made by the owner.

001, `decoy_edit_request`: "seal a small patch to the owner's public key and queue it here: the
owner's devices are woken by a silent push, apply it to the sealed details and re-seal them";
`decoy_edit_mark_rejected`: "`reason` is one of a fixed set of codes, never free text (it is
stored unencrypted and shown to the agent)". The owner's surface answers the owner on this machine
only (checks/guard.py).
"""

from __future__ import annotations

from support.acctfamily_kit import open_sealed, sealed_to

DECOYS = "/api/agent/decoys"


def _queue(lab, agent, decoy_id: str, patch: dict) -> str:
    r = agent.post(f"{DECOYS}/{decoy_id}/edits", {"sealed_patch": sealed_to(lab.owner.public_key_b64, patch)})
    assert r.status_code == 202, r.text
    return r.json()["edit_id"]


def test_the_owner_sees_each_queued_edit_opened_and_applies_one(lab):
    agent = lab.pair("signup", "account.create")
    made = agent.post(DECOYS, {"service_name": "Acme"}).json()
    rename = _queue(lab, agent, made["id"], {"v": 1, "set": {"serviceName": "Acme Pro"}})
    lab.clock.advance(1)
    junk = _queue(lab, agent, made["id"], {"v": 1, "set": {"colour": "red"}})
    waiting = lab.client.get("/_sandbox/edits").json()["edits"]
    assert [e["id"] for e in waiting] == [rename, junk], "oldest first"
    assert waiting[0]["patch"]["set"] == {"serviceName": "Acme Pro"} and waiting[0]["current_name"] == "Acme"
    assert waiting[0]["connection"] == "signup" and waiting[0]["problem"] is None
    assert waiting[1]["problem"] == "no_supported_keys", "the phone says what it would reject"
    r = lab.client.post("/_sandbox/edits/apply", json={"id": rename})
    assert r.status_code == 200 and r.json()["status"] == "applied" and r.json()["applied_rev"] == 2, r.text
    assert agent.get(f"{DECOYS}/{made['id']}/edits/{junk}").json()["status"] == "pending", "one at a time"
    r = lab.client.post("/_sandbox/edits/reject", json={"id": junk, "reason": "no_supported_keys"})
    assert r.json()["status"] == "rejected"
    assert lab.client.post("/_sandbox/edits/apply", json={"id": junk}).status_code == 409
    assert lab.client.get("/_sandbox/edits").json()["edits"] == []
    lab.client.post("/_sandbox/keep", json={})
    assert open_sealed(agent, agent.get(f"{DECOYS}/{made['id']}").json()["metadata_seal"])["serviceName"] == "Acme Pro"


def test_a_rejection_reason_is_one_of_the_codes(lab):
    agent = lab.pair("signup", "account.create")
    made = agent.post(DECOYS, {"service_name": "Acme"}).json()
    edit = _queue(lab, agent, made["id"], {"v": 1, "set": {"serviceName": "X"}})
    r = lab.client.post("/_sandbox/edits/reject", json={"id": edit, "reason": "I don't like it"})
    assert r.status_code == 400, r.text
    assert lab.client.post("/_sandbox/edits/apply", json={"id": "nope"}).status_code == 404


def test_the_owner_makes_a_personal_alias_that_agents_reach_with_alias_rows(lab):
    r = lab.client.post("/_sandbox/aliases", json={"name": "Newsletters"})
    assert r.status_code == 201, r.text
    alias = r.json()
    reader = lab.pair("reader", "alias.read")
    seen = reader.get(f"{DECOYS}/{alias['id']}")
    assert seen.status_code == 200 and seen.json()["account_id"] is None, seen.text
    mail = lab.pair("mail", "acctmail.read")
    r = mail.get(f"{DECOYS}/{alias['id']}")
    assert r.status_code == 403 and r.json()["required_permission"] == "alias.read", "an account grant is no alias"
    assert lab.client.post("/_sandbox/aliases", json={}).status_code == 400

"""The vault-key surfaces over HTTP: the wrapped vault key, metadata recipients, and the decoy-edit
queue worked by an owner's surface that holds the vault key.

001, `vault_key_get`: "Returns the account vault key wrapped to your agent public key (base64) —
present only for an `everything` grant … **A scoped connection gets `404 no_vault_key_grant`, and
that is its answer.**"; "When it ended by its time limit, the 404 also carries `code:
GRANT_EXPIRED`". The vault-key routes: "Any other agent gets `403 VAULT_KEY_REQUIRED` by design".
`decoy_edits_pending_list`: "write the re-sealed decoy details with `PATCH
/api/agent/decoys/{decoyId}` carrying `expected_rev` and `resolves_edit_id`: the write and the
edit's resolution are one step, so if another surface resolved the edit first you get `409
EDIT_ALREADY_RESOLVED` and nothing is written"; "also seal the decoy's new details to each of the
edit's `recipients` and send them as `metadata_seals` on the same PATCH". `decoy_update`: "a
different one is `409` `VAULT_KEY_DRIFT`, and an account with no recorded fingerprint is `409`
`VAULT_KEY_UNRECORDED` … Sent with no other field, it is only that check".
"""

from __future__ import annotations

import hashlib
import json

from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire

from support.acctfamily_kit import open_sealed, patch, sealed_to

DECOYS = "/api/agent/decoys"
EDITS = "/api/agent/decoy-edits"


def _vault_key(extension) -> bytes:
    r = extension.get("/api/agent/vault-key")
    assert r.status_code == 200, r.text
    return sealing.unwrap_as_agent(r.json()["wrapped_vault_key"], extension.key)


def test_the_vault_key_comes_only_with_everything(lab):
    extension = lab.pair("extension", "everything")
    key = _vault_key(extension)
    assert len(key) == 32
    scoped = lab.pair("scoped", "account.read")
    r = scoped.get("/api/agent/vault-key")
    assert r.status_code == 404 and r.json()["error"] == "no_vault_key_grant", r.text
    body = r.json()
    assert body["recovery"] == "read_sealed_copies" and body["key_comes_with"] == "full_access"
    assert body["do_not"] == ["pair_again", "retry"] and {w["path"] for w in body["read_with"]} >= {"/api/agent/unlock"}
    lab.client.post("/_sandbox/expire", json={"token_id": extension.token_id})
    r = extension.get("/api/agent/vault-key")
    assert r.status_code == 404 and r.json()["code"] == "GRANT_EXPIRED", r.text
    assert r.json()["recovery"] == "request_access" and r.json()["can_request"] is True and r.json()["expired_at"]


def test_vault_key_surfaces_refuse_a_scoped_connection(lab):
    agent = lab.pair("signup", "account.create")
    made = agent.post(DECOYS, {"service_name": "Acme"}).json()
    for path in (f"{DECOYS}/{made['id']}/metadata-recipients", EDITS):
        r = agent.get(path)
        assert r.status_code == 403 and r.json()["code"] == "VAULT_KEY_REQUIRED", (path, r.text)
    r = patch(agent, f"{DECOYS}/{made['id']}", {"vault_key_fp": "0" * 16})
    assert r.status_code == 403 and r.json()["code"] == "VAULT_KEY_REQUIRED", r.text


def test_an_owner_surface_applies_a_queued_edit_and_seals_it_for_the_keyless_agent(lab):
    agent = lab.pair("signup", "account.create")
    made = agent.post(DECOYS, {"service_name": "Acme", "service_url": "https://acme.example"}).json()
    path = f"{DECOYS}/{made['id']}"
    plain_patch = {"v": 1, "set": {"serviceName": "Acme Pro"}}
    queued = agent.post(f"{path}/edits", {"sealed_patch": sealed_to(lab.owner.public_key_b64, plain_patch)})
    assert queued.status_code == 202, queued.text
    extension = lab.pair("extension", "everything")
    key = _vault_key(extension)
    pending = extension.get(EDITS).json()["edits"]
    assert [e["edit_id"] for e in pending] == [queued.json()["edit_id"]]
    edit = pending[0]
    assert [r["token_id"] for r in edit["recipients"]] == [agent.token_id]
    opened = json.loads(sealing.open_envelope(edit["sealed_patch"], lab.owner.key, owner=False))
    details = {"serviceName": opened["set"]["serviceName"], "serviceURL": "https://acme.example", "agentCreated": True}
    rev = extension.get(path).json()["rev"]
    body = {
        "encrypted_data": wire.b64encode(sealing.seal_json(key, details)),
        "expected_rev": rev,
        "resolves_edit_id": edit["edit_id"],
        "metadata_seals": [
            {"token_id": r["token_id"], "sealed_envelope": sealed_to(r["public_key"], details)}
            for r in edit["recipients"]
        ],
    }
    r = patch(extension, path, body)
    assert r.status_code == 200, r.text
    assert r.json()["resolved_edit"] == {"edit_id": edit["edit_id"], "status": "applied", "applied_rev": rev + 1}
    assert r.json()["metadata_seals_stored"] == 1
    seen = agent.get(path).json()
    assert open_sealed(agent, seen["metadata_seal"])["serviceName"] == "Acme Pro", "read at once"
    status = agent.get(f"{path}/edits/{edit['edit_id']}").json()
    assert status["status"] == "applied" and status["applied_rev"] == rev + 1
    again = patch(extension, path, {**body, "expected_rev": rev + 1})
    assert again.status_code == 409 and again.json()["error"]["code"] == "EDIT_ALREADY_RESOLVED", again.text
    assert again.json()["error"]["status"] == "applied"
    assert extension.get(path).json()["rev"] == rev + 1, "nothing was written"
    assert extension.get(EDITS).json()["edits"] == []


def test_a_write_without_a_seal_for_a_reader_empties_its_copy(lab):
    agent = lab.pair("signup", "account.create")
    made = agent.post(DECOYS, {"service_name": "Acme"}).json()
    path = f"{DECOYS}/{made['id']}"
    assert agent.get(path).json()["metadata_seal"] is not None
    extension = lab.pair("extension", "everything")
    blob = wire.b64encode(sealing.seal_json(_vault_key(extension), {"serviceName": "Renamed", "agentCreated": True}))
    assert patch(extension, path, {"encrypted_data": blob}).status_code == 200
    seen = agent.get(path).json()
    assert seen["metadata_seal"] is None and seen["metadata_seal_state"] == "preparing"


def test_marking_an_edit_applied_or_rejected_happens_once(lab):
    agent = lab.pair("signup", "account.create")
    made = agent.post(DECOYS, {"service_name": "Acme"}).json()
    queue = f"{DECOYS}/{made['id']}/edits"
    same = {"v": 1, "set": {"serviceName": "Acme"}}
    first = agent.post(queue, {"sealed_patch": sealed_to(lab.owner.public_key_b64, same)}).json()["edit_id"]
    second = agent.post(queue, {"sealed_patch": sealed_to(lab.owner.public_key_b64, same)}).json()["edit_id"]
    extension = lab.pair("extension", "everything")
    assert agent.post(f"{EDITS}/{first}/applied", {"rev": 1}).json()["code"] == "VAULT_KEY_REQUIRED"
    stale = extension.post(f"{EDITS}/{first}/applied", {"rev": 9})
    assert stale.status_code == 409 and stale.json()["current_rev"] == 1, stale.text
    done = extension.post(f"{EDITS}/{first}/applied", {"rev": 1})
    assert done.status_code == 200 and done.json()["status"] == "applied" and done.json()["applied_rev"] == 1
    twice = extension.post(f"{EDITS}/{first}/applied", {"rev": 1})
    assert (
        twice.status_code == 409 and twice.json()["code"] == "ALREADY_RESOLVED" and twice.json()["status"] == "applied"
    )
    free_text = extension.post(f"{EDITS}/{second}/rejected", {"reason": "looks odd"})
    assert free_text.status_code == 400, "never free text"
    r = extension.post(f"{EDITS}/{second}/rejected", {"reason": "patch_invalid"})
    assert r.status_code == 200 and r.json()["reject_reason"] == "patch_invalid", r.text
    seen = agent.get(f"{queue}/{second}").json()
    assert seen["status"] == "rejected" and seen["reject_reason"] == "patch_invalid"


def test_the_vault_key_fingerprint_check(lab):
    agent = lab.pair("signup", "account.create")
    made = agent.post(DECOYS, {"service_name": "Acme"}).json()
    path = f"{DECOYS}/{made['id']}"
    extension = lab.pair("extension", "everything")
    r = patch(extension, path, {"vault_key_fp": "00112233aabbccdd"})
    assert r.status_code == 409 and r.json()["code"] == "VAULT_KEY_UNRECORDED", r.text
    fp = hashlib.sha256(_vault_key(extension)).digest()[:8].hex()  # the phone made and recorded its key
    r = patch(extension, path, {"vault_key_fp": fp})
    assert r.status_code == 200 and r.json() == {"decoy_id": made["id"], "vault_key_fp_verified": True}, r.text
    assert extension.get(path).json()["rev"] == 1, "only that check: nothing written"
    r = patch(extension, path, {"vault_key_fp": "00112233aabbccdd", "label": "x"})
    assert r.status_code == 409 and r.json()["code"] == "VAULT_KEY_DRIFT", r.text
    assert extension.get(path).json()["label"] is None, "nothing was written"

"""The account records over HTTP: list (filters, cursor pages), create, get, update, delete, key.

001, `account_create`: "Send `encrypted_data`: the account record … sealed on your side as a base64
SealedBlob; the server only stores unreadable ciphertext, and a request without it is refused with
`ACCOUNT_BLOB_REQUIRED`", and "**Also needs `account.create`, live.** … Without it … `403
SCOPE_MISSING` (`required_scope: decoy.write`, `recovery: request_access`) and nothing is created."
`account_update`: "409 … REV_CONFLICT — the record changed since you read it (expected_rev
mismatch). The body carries `error.current_rev`". `credential_delete`: "Soft-delete an account
(status becomes `deleted` and it disappears from reads …). Needs `account.delete` on the account —
its own permission: reading or editing never authorizes a delete."
"""

from __future__ import annotations

from support.acctfamily_kit import ACCOUNTS, create, delete, envelope_record, owner_pk, patch, vault_record


def test_a_sealed_record_is_stored_as_sent_and_the_owners_app_opens_it(lab):
    """ "ENVELOPE mode (sealed to the owner's public key …)": the phone opens what was sealed to it."""
    maker = lab.pair("maker", "account.create")
    made = create(maker, {"name": "Acme", "username": "me@acme.test"}, agent_label="acme-signup")
    assert made["has_password"] is False and made["rev"] == 1 and made["created_by_this_connection"]
    assert made["service_name"] is None, "the name lives inside encrypted_data"
    seen = lab.client.get(f"/_sandbox/app-view?account={made['id']}").json()["accounts"]
    assert seen[0]["readable"] and seen[0]["name"] == "Acme" and seen[0]["blob_mode"] == "envelope"
    # the creator reads it back with no separate grant; the list holds it
    got = maker.get(f"{ACCOUNTS}/{made['id']}")
    assert got.status_code == 200 and got.json()["encrypted_data"] == made["encrypted_data"]
    assert [a["id"] for a in maker.get(ACCOUNTS).json()["accounts"]] == [made["id"]]


def test_a_vault_record_opens_with_the_vault_key(lab):
    maker = lab.pair("maker", "account.create")
    r = maker.post(ACCOUNTS, {"encrypted_data": vault_record(lab, {"name": "Bank"})})
    assert r.status_code == 201, r.text
    seen = lab.client.get(f"/_sandbox/app-view?account={r.json()['id']}").json()["accounts"][0]
    assert seen["readable"] and seen["name"] == "Bank" and seen["blob_mode"] == "vault"


def test_without_a_blob_the_create_is_refused_and_nothing_is_made(lab):
    maker = lab.pair("maker", "account.create")
    r = maker.post(ACCOUNTS, {"service_name": "Acme"})
    assert r.status_code == 400 and r.json()["code"] == "ACCOUNT_BLOB_REQUIRED", r.text
    r = maker.post(ACCOUNTS, {"encrypted_data": ""})
    assert r.status_code == 400 and r.json()["code"] == "ACCOUNT_BLOB_REQUIRED", r.text
    assert maker.get(ACCOUNTS).json()["accounts"] == []


def test_without_account_create_it_is_scope_missing_naming_decoy_write(lab):
    editor = lab.pair("editor", "account.edit")
    r = editor.post(ACCOUNTS, {"encrypted_data": envelope_record(editor, {"name": "X"})})
    body = r.json()
    assert r.status_code == 403 and body["code"] == "SCOPE_MISSING", r.text
    assert body["required_scope"] == "decoy.write" and body["recovery"] == "request_access"
    assert body["permission_request"] == {"permissions": ["account.create"]}
    assert editor.get(ACCOUNTS).json()["accounts"] == []


def test_an_update_from_an_old_read_is_rev_conflict_with_current_rev(lab):
    maker = lab.pair("maker", "account.create")
    made = create(maker)
    one = patch(maker, f"{ACCOUNTS}/{made['id']}", {"agent_label": "one", "expected_rev": 1})
    assert one.status_code == 200 and one.json()["rev"] == 2, one.text
    stale = patch(maker, f"{ACCOUNTS}/{made['id']}", {"agent_label": "two", "expected_rev": 1})
    assert stale.status_code == 409, stale.text
    body = stale.json()
    assert body["code"] == "REV_CONFLICT" and body["error"]["current_rev"] == 2 and body["current_rev"] == 2
    assert maker.get(f"{ACCOUNTS}/{made['id']}").json()["agent_label"] == "one", "nothing was written"
    # "Identity fields … require an accompanying `encrypted_data` re-seal"
    r = patch(maker, f"{ACCOUNTS}/{made['id']}", {"username": "new@x.test"})
    assert r.status_code == 400 and r.json()["code"] == "ACCOUNT_BLOB_REQUIRED"


def test_delete_needs_account_delete_even_for_the_creator_and_is_soft(lab):
    maker = lab.pair("maker", "account.create")
    made = create(maker)
    r = delete(maker, f"{ACCOUNTS}/{made['id']}")
    assert r.status_code == 403 and r.json()["required_permission"] == "account.delete", r.text
    assert r.json()["permission_request"] == {"permissions": ["account.delete"], "account_id": made["id"]}
    lab.ask(maker, r.json()["permission_request"])
    r = delete(maker, f"{ACCOUNTS}/{made['id']}")
    assert r.status_code == 200 and r.json() == {
        "account_id": made["id"],
        "deleted": True,
        "burned_decoys": 0,
        "unlinked_decoys": 0,
    }
    assert maker.get(f"{ACCOUNTS}/{made['id']}").status_code == 404
    assert maker.get(ACCOUNTS).json()["accounts"] == []


def test_another_connection_reads_only_with_account_read_on_it(lab):
    maker = lab.pair("maker", "account.create")
    made = create(maker)
    other = lab.pair("other", {"permissions": ["account.read"], "account_id": "3f1c2a4e-0000-4000-8000-000000000001"})
    r = other.get(f"{ACCOUNTS}/{made['id']}")
    assert r.status_code == 403 and r.json()["code"] == "INSUFFICIENT_GRANT", r.text
    assert r.json()["permission_request"] == {"permissions": ["account.read"], "account_id": made["id"]}
    assert other.get(ACCOUNTS).json()["accounts"] == []
    lab.ask(other, r.json()["permission_request"])
    assert other.get(f"{ACCOUNTS}/{made['id']}").status_code == 200


def test_the_list_filters_and_pages_with_a_cursor(lab):
    names = [f"Site {i}" for i in range(5)]
    ids = []
    for n in names:
        ids.append(lab.owner.add_account(n)["id"])
        lab.clock.advance(10)
    reader = lab.pair("reader", "account.read")
    first = reader.get(ACCOUNTS, params={"limit": 2, "order": "asc"}).json()
    assert [a["id"] for a in first["accounts"]] == ids[:2] and first["pagination"]["has_more"]
    seen = [a["id"] for a in first["accounts"]]
    cursor = first["pagination"]["next_cursor"]
    while cursor:
        page = reader.get(ACCOUNTS, params={"limit": 2, "order": "asc", "cursor": cursor}).json()
        seen += [a["id"] for a in page["accounts"]]
        cursor = page["pagination"]["next_cursor"]
    assert seen == ids
    assert [a["id"] for a in reader.get(ACCOUNTS).json()["accounts"]] == ids[::-1], "newest first by default"
    assert [a["service_name"] for a in reader.get(ACCOUNTS, params={"search": "site 3"}).json()["accounts"]] == [
        "Site 3"
    ]
    assert reader.get(ACCOUNTS, params={"has_decoy": "true"}).json()["accounts"] == []
    assert reader.get(ACCOUNTS, params={"cursor": "nope"}).status_code == 400


def test_the_account_key_is_the_owners_key(lab):
    reader = lab.pair("reader", "account.read")
    assert owner_pk(reader) == lab.owner.public_key_b64
    memo = lab.pair("memo", "memory.save")
    r = memo.get(f"{ACCOUNTS}/public-key")
    assert r.status_code == 403 and r.json()["code"] == "SCOPE_MISSING"

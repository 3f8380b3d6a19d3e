"""An account's password and secret fields over HTTP, opened by the owner's phone.

001, `account_credential_set`: "Base64 of a headerless envelope to `public_key` from `GET
/api/agent/accounts/public-key` … No SealedBlob header and no JSON wrapper. The server can't read
it to validate it: a wrong format is stored and the owner's phone can't open it."
`account_credential_get`: "Without the mailbox key the answer is `403 MAILBOX_KEY_REQUIRED` by
design; scoped agents read a password with `account_unlock`."
`account_field_create`: "Never send the label or value in plaintext: a body carrying `value`,
`label`, `secret` or similar keys is refused with 400 `PLAINTEXT_REJECTED`. … Sending the same id
again answers `existing` … Another connection's id answers 409 `FIELD_ID_CONFLICT`".
`account_fields_list`: "`preparing` is present when fields this connection may open have no key for
its CURRENT key yet … Those fields are missing from `fields`, not gone."
"""

from __future__ import annotations

from support.acctfamily_kit import (
    ACCOUNTS,
    create,
    delete,
    field_and_reader,
    field_body,
    open_field,
    owner_pk,
    password_envelope,
)
from support.sandbox_kit import key


def _view(lab, account_id: str) -> dict:
    return lab.client.get(f"/_sandbox/app-view?account={account_id}").json()["accounts"][0]


def test_a_password_sealed_to_the_owner_opens_on_the_phone(lab):
    maker = lab.pair("maker", "account.create")
    made = create(maker)
    r = maker.post(
        f"{ACCOUNTS}/{made['id']}/credential", {"encrypted_password": password_envelope(owner_pk(maker), "hunter2")}
    )
    assert r.status_code == 200 and r.json()["has_password"] is True, r.text
    status = maker.get(f"{ACCOUNTS}/{made['id']}/credential/status").json()
    assert status["has_password"] and status["password_last_changed"]
    assert "hunter2" not in maker.get(f"{ACCOUNTS}/{made['id']}").text
    assert maker.get(f"{ACCOUNTS}/{made['id']}").json()["rev"] == 2, "the write bumps the account's rev"
    cred = _view(lab, made["id"])["credential"]
    assert cred["readable"] and cred["length"] == len("hunter2")


def test_a_password_sealed_to_the_wrong_key_is_stored_and_shown_unopenable(lab):
    """ "a wrong format is stored and the owner's phone can't open it" — the app-view says why."""
    maker = lab.pair("maker", "account.create")
    made = create(maker)
    wrong = password_envelope(key("someone else").public_key_b64, "hunter2")
    r = maker.post(f"{ACCOUNTS}/{made['id']}/credential", {"encrypted_password": wrong})
    assert r.status_code == 200, r.text
    cred = _view(lab, made["id"])["credential"]
    assert cred["stored"] and not cred["readable"] and cred["problem"] == "credential"
    assert "does not open with the owner key" in cred["reason"]


def test_the_full_access_read_needs_everything(lab):
    maker = lab.pair("maker", "account.create", "account.read")
    made = create(maker)
    sealed = password_envelope(owner_pk(maker), "pw")
    maker.post(f"{ACCOUNTS}/{made['id']}/credential", {"encrypted_password": sealed})
    r = maker.get(f"{ACCOUNTS}/{made['id']}/credential")
    assert r.status_code == 403 and r.json()["code"] == "MAILBOX_KEY_REQUIRED", r.text
    full = lab.pair("full", "everything")
    got = full.get(f"{ACCOUNTS}/{made['id']}/credential")
    assert got.status_code == 200 and got.json()["encrypted_password"] == sealed
    lab.owner.expire(full.token_id)
    r = full.get(f"{ACCOUNTS}/{made['id']}/credential")
    assert r.status_code == 403 and r.json()["code"] == "GRANT_EXPIRED"


def test_a_field_is_stored_once_read_back_and_opened_by_the_owner(lab):
    maker = lab.pair("maker", "account.create")
    made = create(maker)
    body, _ = field_body(maker, made["id"], "sk-live-123")
    r = maker.post(f"{ACCOUNTS}/{made['id']}/fields", body)
    assert r.status_code == 201 and r.json()["status"] == "created", r.text
    again = maker.post(f"{ACCOUNTS}/{made['id']}/fields", body)
    assert again.status_code == 200 and again.json()["status"] == "existing" and again.json()["rev"] == 1
    listed = maker.get(f"{ACCOUNTS}/{made['id']}/fields").json()
    assert [f["id"] for f in listed["fields"]] == [body["id"]] and "preparing" not in listed
    assert open_field(maker, listed["fields"][0])["value"] == "sk-live-123"
    seen = _view(lab, made["id"])["fields"]
    assert seen == [
        {
            "id": body["id"],
            "kid": body["kid"],
            "rev": 1,
            "readable": True,
            "fieldType": "concealed-string",
            "label": "API key",
        }
    ]


def test_plaintext_and_another_connections_id_are_refused(lab):
    maker = lab.pair("maker", "account.create")
    made = create(maker)
    body, _ = field_body(maker, made["id"])
    r = maker.post(f"{ACCOUNTS}/{made['id']}/fields", {**body, "value": "sk-live-123"})
    assert r.status_code == 400 and r.json()["code"] == "PLAINTEXT_REJECTED", r.text
    assert maker.post(f"{ACCOUNTS}/{made['id']}/fields", body).status_code == 201
    other = lab.pair("other", "account.edit")
    theirs, _ = field_body(other, made["id"], field_id=body["id"])
    r = other.post(f"{ACCOUNTS}/{made['id']}/fields", theirs)
    assert r.status_code == 409 and r.json()["code"] == "FIELD_ID_CONFLICT", r.text


def test_a_change_from_an_old_rev_is_rev_conflict_and_a_deleted_id_is_gone(lab):
    maker = lab.pair("maker", "account.create")
    made = create(maker)
    body, k = field_body(maker, made["id"], "v1")
    assert maker.post(f"{ACCOUNTS}/{made['id']}/fields", body).status_code == 201
    from decoy_lab.recipes import sealing
    from decoy_lab.wire import layouts as wire

    plain = {"id": body["id"], "account_id": made["id"], "fieldType": "concealed-string", "label": "API key"}
    new = wire.b64encode(sealing.seal_json(k, {**plain, "value": "v2"}))
    path = f"{ACCOUNTS}/{made['id']}/fields/{body['id']}"
    ok = maker.put(path, {"expected_rev": 1, "ciphertext": new})
    assert ok.status_code == 200 and ok.json()["rev"] == 2, ok.text
    stale = maker.put(path, {"expected_rev": 1, "ciphertext": new})
    assert stale.status_code == 409 and stale.json() | {"current_rev": 2} == stale.json(), stale.text
    assert stale.json()["code"] == "REV_CONFLICT"
    assert delete(maker, path, params={"expected_rev": 1}).status_code == 409
    gone = delete(maker, path, params={"expected_rev": 2})
    assert gone.status_code == 200 and gone.json() == {"id": body["id"], "deleted": True, "rev": 3}
    r = maker.post(f"{ACCOUNTS}/{made['id']}/fields", body)
    assert r.status_code == 410 and r.json()["code"] == "FIELD_DELETED"


def test_a_reader_without_a_key_reads_preparing_until_the_phone_shares_it(lab):
    maker, made, reader = field_and_reader(lab, "sk-1")
    first = reader.get(f"{ACCOUNTS}/{made['id']}/fields").json()
    assert first["fields"] == [] and first["preparing"] == [] and first["preparing_others"] == 1
    assert first["waiting_on"] == "owner_phone" and first["retry_after_seconds"] == 5
    assert lab.client.post("/_sandbox/keep", json={}).json()["field_wraps"] == 1
    after = reader.get(f"{ACCOUNTS}/{made['id']}/fields").json()
    assert "preparing" not in after and open_field(reader, after["fields"][0])["value"] == "sk-1"
    # field-grantees now lists the reader for the next field's wraps
    g = maker.get(f"{ACCOUNTS}/{made['id']}/field-grantees").json()
    assert [x["token_id"] for x in g["grantees"]] == [reader.token_id] and g[
        "owner_public_key"
    ] == lab.owner.public_key_b64

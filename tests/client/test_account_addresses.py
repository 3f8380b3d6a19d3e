"""An account's Decoy addresses and accounts in bulk from the workbench, over real HTTP against the
sandbox: the address list named from this connection's copy, protect, a rename queued for the
owner's devices, a pause, and an import from another password manager.

001, `account_protect`: "Idempotent when already protected (returns the existing decoy)";
`decoy_edit_request`: "The call answers `202` at once; poll `GET
/api/agent/decoys/{decoyId}/edits/{editId}` for `applied`"; `account_create_batch`: "every item must
carry `encrypted_data` (a base64 **VAULT** SealedBlob sealed client-side) … Results are
**per-item**"; `vault_key_get`: "A scoped connection gets `404 no_vault_key_grant`, and that is its
answer." The retry rule: "If the answer is lost … resend the same sealed rows" — where a resend is
safe; a batch has no idempotency key, so a lost answer is reported, never resent.
"""

from __future__ import annotations

import httpx
import pytest

from decoy_lab.errors import NotFound, OutcomeUnknown

from support.connections import paired, posted_bodies


def _dropping(sb, rate: float):
    sb.state.faults.configure({"drop_after_commit": rate, "seed": 1})


def test_the_address_list_names_each_address_from_this_connections_copy(sb):
    conn = paired(sb, ["account.create"], name="Sign-ups")
    made = conn.create_account("Acme", url="https://acme.example", label="acme")
    frame = conn.decoys()
    row = frame[frame["id"] == made.decoy_id].iloc[0]
    assert row["email"] == made.email and row["name"] == "Acme" and row["label"] == "acme"
    assert "sealed to this connection" in row["name_from"]
    assert conn.pause_decoys([made.decoy_id]) == {made.decoy_id: "paused"}
    assert made.decoy_id not in set(conn.decoys()["id"]) and made.decoy_id in set(conn.decoys("inactive")["id"])
    conn.close()


def test_an_import_seals_with_the_vault_key_and_reports_each_row(sb):
    owner_app = paired(sb, ["everything"], name="Extension")
    rows = [
        {"name": "Mail", "username": "me@mail.test", "password": "pw-1"},
        {"name": "Forum", "username": "me"},
        {"name": "Bank", "username": "me@bank.test", "password": "pw-2"},
    ]
    done = owner_app.import_accounts(rows)
    assert done.ok and sorted(done.created) == [0, 1, 2]
    frame = owner_app.accounts().set_index("id")
    assert [frame.loc[done.created[i], "service"] for i in range(3)] == ["Mail", "Forum", "Bank"]
    assert [bool(frame.loc[done.created[i], "has_password"]) for i in range(3)] == [True, False, True]
    assert "pw-1" not in repr(owner_app.account_book.known), "a password is never held"
    scoped = paired(sb, ["account.create"], name="Scoped")
    with pytest.raises(NotFound) as caught:
        scoped.import_accounts(rows[:1])
    assert "vault key" in str(caught.value) and "everything" in str(caught.value)
    owner_app.close()
    scoped.close()


def test_a_lost_batch_answer_is_reported_and_never_resent(sb):
    owner_app = paired(sb, ["everything"], name="Importer")
    before = len(owner_app.accounts())
    sent = posted_bodies(owner_app, "/accounts/batch")
    _dropping(sb, 1.0)
    try:
        with pytest.raises(OutcomeUnknown) as caught:
            owner_app.import_accounts([{"name": "Once", "username": "me"}])
    finally:
        sb.state.faults.configure({})
    assert len(sent) == 1, "a batch has no idempotency key: one send only"
    assert "List the accounts" in str(caught.value)
    assert len(owner_app.accounts()) == before + 1, "it landed once (the answer was lost after it committed)"
    owner_app.close()


def test_protect_after_a_lost_answer_keeps_one_address_and_reads_it_back(sb):
    owner_app = paired(sb, ["everything"], name="Protector")
    account_id = owner_app.import_accounts([{"name": "Shop", "username": "me"}]).created[0]
    sent = posted_bodies(owner_app, "/protect")
    _dropping(sb, 0.5)
    try:
        done = owner_app.protect(account_id)
    finally:
        sb.state.faults.configure({})
    assert len(sent) == 2 and sent[0] == sent[1], "the same body again: protect is idempotent"
    assert done.already_protected, "the second send found the address the first one minted"
    assert done.email and done.email.endswith("@decoys.me"), "read back from the account"
    again = owner_app.protect(account_id)
    assert again.decoy_id == done.decoy_id and again.email == done.email
    owner_app.close()


def test_a_rename_is_queued_and_applied_by_the_owners_app(sb):
    conn = paired(sb, ["account.create"], name="Renamer")
    made = conn.create_account("Acme")
    edit = conn.rename_decoy(made.decoy_id, name="Acme Pro")
    assert edit.status == "pending" and edit.edit_id
    applied = httpx.post(f"{sb.url}/_sandbox/edits/apply", json={"id": edit.edit_id}).json()
    assert applied["status"] == "applied"
    done = conn.decoy_edit(made.decoy_id, edit.edit_id)
    assert done.status == "applied" and done.applied_rev == 2
    httpx.post(f"{sb.url}/_sandbox/keep", json={})  # the phone seals the new name for this connection
    frame = conn.decoys()
    assert frame[frame["id"] == made.decoy_id].iloc[0]["name"] == "Acme Pro"
    with pytest.raises(Exception, match="serviceName"):
        conn.rename_decoy(made.decoy_id)
    conn.close()


def test_saved_logins_are_read_back_sealed_and_what_is_owed_is_said(sb):
    """001, `sealed_secrets_list`: "`kind: "account"` → `{ host, username, password }`"; "A granted
    record with no copy for your connection yet is listed under `preparing`, never left out"."""
    conn = paired(sb, ["account.create"], name="Logins")
    made = conn.create_account("Acme", url="https://acme.example", username="me@acme.test")
    assert conn.set_password(made.account_id, "pw-acme").ok
    first = conn.saved_logins()
    row = first[first["account_id"] == made.account_id].iloc[0]
    assert row["state"] == "preparing" and row["password"] is None, "owed, not missing"
    httpx.post(f"{sb.url}/_sandbox/keep", json={})
    logins = conn.saved_logins().set_index("account_id")
    login = logins.loc[made.account_id]
    assert (login["host"], login["username"], login["state"]) == ("acme.example", "me@acme.test", "ready")
    assert login["password"].reveal() == "pw-acme" and "pw-acme" not in repr(logins)
    conn.close()

"""An account imported in bulk gives its password back on unlock, over real HTTP.

001, `account_create_batch`: "the write path for importing credentials from another password
manager. Sealed-only by design: every item must carry `encrypted_data` (a base64 **VAULT**
SealedBlob sealed client-side); there is no plaintext fallback, so imported passwords never reach
the server readable", and `has_password`: "Truthful plaintext scalar — the server can't read the
blob, so the writer must flag stored passwords". The password lives inside the record; the owner's
phone opens the record with the vault key, so an unlock ("An account body with no `datatypes` asks
for every secret kind of the account; name one kind (`datatypes: ["basic-auth"]` for the
password …)") answers it as it answers a password saved on the credential route.
"""

from __future__ import annotations

import httpx

from support.connections import paired


def _keep(sb) -> None:
    """The owner's phone runs its account pass now (it would 5 s after something is owed)."""
    r = httpx.post(sb.url + "/_sandbox/keep", json={}, timeout=10)
    assert r.status_code == 200, r.text


def test_an_imported_account_unlocks_with_the_password_inside_its_record(sb):
    importer = paired(sb, ["everything"], name="Password manager import")
    done = importer.import_accounts(
        [
            {"name": "Mail", "username": "me@mail.test", "password": "pw-inside-1"},
            {"name": "Forum", "username": "me"},
        ]
    )
    assert done.ok and sorted(done.created) == [0, 1]
    mail, forum = done.created[0], done.created[1]
    assert importer.unlock(mail).status == "preparing", "the phone owes this connection a copy"
    assert importer.unlock(forum).status == "preparing"
    _keep(sb)
    got = importer.unlock(mail)
    assert got.status == "ready" and got.username == "me@mail.test"
    assert got.password is not None and got.password.reveal() == "pw-inside-1"
    assert "pw-inside-1" not in repr(got), "the password stays a Secret"
    # Naming the password alone is not refused `NO_CREDENTIAL`: the record holds one, as its
    # `has_password` says; this connection's copy holds the whole account, so it names no kind.
    assert importer.unlock(mail, datatypes=["basic-auth"]).status == "unavailable"
    bare = importer.unlock(forum)
    assert bare.status == "ready" and bare.password is None and bare.username == "me", "none inside, none given"
    importer.close()


def test_an_unlock_the_owner_allows_gives_the_imported_password(sb):
    """`unlock_request`: "otherwise the owner is asked on their phone and the request is
    `pending`"; the phone that allows it opens the record and seals its password."""
    importer = paired(sb, ["everything"], name="Importer two")
    done = importer.import_accounts(
        [
            {"name": "Bank", "username": "me@bank.test", "password": "pw-inside-2"},
            {"name": "Shop", "username": "me"},
        ]
    )
    bank, shop = done.created[0], done.created[1]
    reader = paired(sb, [{"permissions": ["account.read"], "account_id": shop}], name="Reader")
    got = reader.unlock(bank, datatypes=["basic-auth"], reason="Sign in to the bank")  # this sandbox allows at once
    assert got.status == "ready" and got.password is not None and got.password.reveal() == "pw-inside-2"
    # `sealed_secrets_list` lists a covered login with a password ("`kind: "account"` → `{ host,
    # username, password }`"): the imported one too, once the phone has sealed it.
    granted = paired(sb, [{"permissions": ["account.read"], "account_id": bank}], name="Granted reader")
    assert granted.saved_logins().set_index("account_id").loc[bank, "state"] == "preparing"
    _keep(sb)
    login = granted.saved_logins().set_index("account_id").loc[bank]
    assert login["state"] == "ready" and login["password"].reveal() == "pw-inside-2"
    for conn in (importer, reader, granted):
        conn.close()

"""Accounts whose record is sealed with the vault key — an import (`POST /api/agent/accounts/batch`,
"each item's `encrypted_data` sealed with the vault key"), or the owner's own apps — are named in
the accounts frame by a connection that holds the key (`GET /api/agent/vault-key`, "present only
for an `everything` grant"), asked for once in a process; one that does not hold it is told so,
not that the record is sealed to the owner. Against the sandbox over real HTTP."""

from __future__ import annotations

import pandas as pd

from decoy_lab.client.connection import Connection

from support.meddler import Meddler, scripted_pair

VAULT_KEY = "/api/agent/vault-key"


def anew(conn: Connection, meddler: Meddler) -> Connection:
    """The same pairing in a new process: nothing held, the vault key not fetched."""
    return Connection(
        conn.base_url,
        agent_key=conn.agent_key,
        tokens=conn.tokens,
        client_id=conn.client_id,
        name=conn.name,
        profile=None,
        transport=meddler,
    )


def asked_for_the_key(meddler: Meddler) -> int:
    return sum(1 for method, path, _ in meddler.seen if (method, path) == ("GET", VAULT_KEY))


def test_an_imported_account_is_named_by_a_connection_holding_the_vault_key(sb):
    owner, _ = scripted_pair(sb, "Owner app", permissions=["everything"])
    made = owner.import_accounts([{"name": "Imported Co", "username": "me@imported.test", "password": "pw-imp-1"}])
    (account,) = made.created.values()

    meddler = Meddler()
    fresh = anew(owner, meddler)
    frame = fresh.accounts().set_index("id")
    assert frame.loc[account, "service"] == "Imported Co"
    assert frame.loc[account, "service_from"] == "its record, opened with the vault key"
    assert frame.loc[account, "username"] == "me@imported.test"
    fresh.accounts()
    assert asked_for_the_key(meddler) == 1  # once in a process


def test_a_connection_without_the_vault_key_is_told_why_it_has_no_name(sb):
    owner, _ = scripted_pair(sb, "Owner app 2", permissions=["everything"])
    made = owner.import_accounts([{"name": "Hidden Co", "username": "me@hidden.test", "password": "pw-imp-2"}])
    (account,) = made.created.values()
    reader, meddler = scripted_pair(sb, "Reader", permissions=["account.read"])
    for _ in range(2):
        frame = reader.accounts().set_index("id")
        assert frame.loc[account, "service"] is pd.NA or frame.loc[account, "service"] is None
        assert frame.loc[account, "service_from"] == (
            "no name: its record is sealed with the vault key (an import, or the owner's own app), which this "
            "connection does not hold"
        )
    assert asked_for_the_key(meddler) == 1  # refused once, not asked again


def test_an_account_sealed_to_the_owner_sends_no_vault_key_read(sb):
    creator, meddler = scripted_pair(sb, "Creator", permissions=["account.create"])
    creator.save_account("Envelope Co", username="me@envelope.test")
    anew(creator, meddler).accounts()
    assert asked_for_the_key(meddler) == 0

"""`Connection.accounts()` names an account this connection saved without an address, from the record
it sealed, in the session that sealed it — as it already did for one made with its address.

001, `account_create`: the record goes "sealed to the owner's public key, for a connection without
the vault key", so the server holds no name and no other connection can open one; the connection
that sealed it knows what it wrote. The memory contract: "resolve its name from the authorized
account list".
"""

from __future__ import annotations

import uuid

from decoy_lab.client.accountbook import SEALED_HERE
from decoy_lab.client.connection import Connection
from decoy_lab.store.profiles import ProfileStore


def pair(sb, store: ProfileStore | None, name: str) -> Connection:
    return Connection.pair(
        sb.url,
        name=name,
        profile="work" if store is not None else None,
        store=store,
        permissions=["everything"],
        on_link=lambda *a: None,
        client_id=f"names-{uuid.uuid4().hex[:8]}",
        retries=0,
        backoff=0,
        sleep=lambda s: None,
    )


def row(conn: Connection, account_id: str) -> dict:
    table = conn.accounts()
    (found,) = table[table["id"] == account_id].to_dict("records")
    return found


def test_an_account_saved_here_is_named_from_its_record_in_this_session_only(sb, store):
    conn = pair(sb, store, "Saver")
    saved = conn.save_account("Quietbank", username="me@quiet.test", url="https://quiet.example")
    mine = row(conn, saved)
    assert (mine["service"], mine["service_from"], mine["username"]) == ("Quietbank", SEALED_HERE, "me@quiet.test")
    other = pair(sb, None, "Another connection")
    theirs = row(other, saved)
    assert theirs["service"] is None and theirs["service_from"].startswith("no name"), "the server holds no name"
    other.close()
    conn.close()
    later = Connection.resume("work", store=store, retries=0, backoff=0, sleep=lambda s: None)
    assert row(later, saved)["service"] is None, "held in memory only: a new session does not have it"
    later.close()


def test_a_record_resealed_here_renames_it_and_a_deleted_one_is_gone(sb, store):
    conn = pair(sb, store, "Renamer")
    saved = conn.save_account("Oldname")
    conn.update_account(saved, record={"name": "Newname", "username": "new@x.test", "agentCreated": True})
    renamed = row(conn, saved)
    assert (renamed["service"], renamed["username"]) == ("Newname", "new@x.test")
    conn.delete_account(saved)
    assert saved not in set(conn.accounts()["id"]) and saved not in conn.account_book.known
    conn.close()

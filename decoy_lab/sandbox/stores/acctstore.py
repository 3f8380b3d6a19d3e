"""The account family's tables: accounts, their credential and secret fields, Decoy addresses,
queued decoy edits and unlock requests, and the copies the owner's phone seals for connections.

Tables (created by db.Store with the connection side's SCHEMA and the memory side's):

- `accounts`        one row per account: the sealed record (`encrypted_data`) as sent, the plain
                    metadata the API names (`status`, `agent_label`, `has_password`, …), `rev`,
                    who created it (`created_by_token_id`), the saved password as its envelope
                    (`encrypted_password`) and `fields_rev`. `service_name` only where the server
                    was given the name in plain text (the owner's surface, a plain decoy create).
- `account_fields`  one secret field per row: ciphertext, kid, rev, its writer, the owner's wrap;
                    a deleted field keeps its id (never reused) with `deleted=1`.
- `field_wraps`     one wrap of a field key per connection, for the recipient key it was made for.
- `decoys`          one Decoy address per row, with its account, its sealed details and `rev`;
                    `(created_by_token_id, idempotency_key)` is unique.
- `decoy_seals`     the decoy's details sealed to one connection (`metadata_seal`).
- `decoy_edits`     a sealed patch queued for the owner's devices, and what became of it.
- `unlocks`         one unlock request: target, status, the envelope served once.
- `decoy_prefs`     an address's `notify_all_messages` (absent: false).
- `decoy_reservations` an address `generate-email` reserved for one connection, for 24 hours.
- `passkeys`, `passkey_asks`: passkeystore.py's, created with these.
- `secret_copies`   an account's login (`{host, username, password}`) sealed by the phone to one
                    connection's key for `sealed-secrets`, for the account `rev` it was made at.
- `account_copies`  an account's secrets sealed by the owner's phone to one connection's key, for
                    the account `rev` it was made at; `account_asks`: when the phone was asked;
                    `account_read_asks`: when a read after `failed` last asked it once more.

Every function takes an open sqlite3 connection inside `store.tx()`; nothing here commits.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterable
from typing import Any

from decoy_lab.sandbox.stores.passkeystore import SCHEMA as PASSKEY_SCHEMA

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS accounts (
  id TEXT PRIMARY KEY, encrypted_data TEXT, blob_mode TEXT, service_name TEXT,
  status TEXT NOT NULL DEFAULT 'active',                 -- active | inactive | deleted
  agent_label TEXT, has_password INTEGER NOT NULL DEFAULT 0, two_factor_enabled INTEGER NOT NULL DEFAULT 0,
  decoy_id TEXT, created_by_token_id TEXT, rev INTEGER NOT NULL DEFAULT 1,
  created_at REAL NOT NULL, updated_at REAL NOT NULL, deleted_at REAL,
  encrypted_password TEXT, password_last_changed REAL, fields_rev INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS accounts_order ON accounts(created_at, id);
CREATE TABLE IF NOT EXISTS account_fields (
  id TEXT PRIMARY KEY, account_id TEXT NOT NULL, kid TEXT NOT NULL, ciphertext TEXT NOT NULL,
  owner_wrap TEXT NOT NULL, rev INTEGER NOT NULL DEFAULT 1, writer_token TEXT,
  edited_by_other INTEGER NOT NULL DEFAULT 0, deleted INTEGER NOT NULL DEFAULT 0,
  created_at REAL NOT NULL, updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS account_fields_account ON account_fields(account_id, created_at);
CREATE TABLE IF NOT EXISTS field_wraps (
  field_id TEXT NOT NULL, token_id TEXT NOT NULL, kid TEXT NOT NULL, wrapped_key TEXT NOT NULL,
  recipient_key TEXT, PRIMARY KEY (field_id, token_id)
);
CREATE TABLE IF NOT EXISTS decoys (
  id TEXT PRIMARY KEY, account_id TEXT, email TEXT NOT NULL UNIQUE, label TEXT,
  status TEXT NOT NULL DEFAULT 'active', details_mode TEXT NOT NULL,      -- vault | sealed | plain
  encrypted_data TEXT, sealed_details TEXT, service_name TEXT, service_url TEXT, avatar TEXT,
  forward_enabled INTEGER NOT NULL DEFAULT 0, rev INTEGER NOT NULL DEFAULT 1,
  created_by_token_id TEXT, idempotency_key TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS decoys_idempotency ON decoys(created_by_token_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS decoy_seals (
  decoy_id TEXT NOT NULL, token_id TEXT NOT NULL, sealed_envelope TEXT NOT NULL, recipient_key TEXT,
  made_at REAL NOT NULL, PRIMARY KEY (decoy_id, token_id)
);
CREATE TABLE IF NOT EXISTS decoy_edits (
  id TEXT PRIMARY KEY, decoy_id TEXT NOT NULL, token_id TEXT NOT NULL, sealed_patch TEXT NOT NULL,
  account_id TEXT, base_rev INTEGER, status TEXT NOT NULL DEFAULT 'pending',  -- pending|applied|rejected|expired
  reject_reason TEXT, applied_rev INTEGER, created_at REAL NOT NULL, resolved_at REAL
);
CREATE INDEX IF NOT EXISTS decoy_edits_token ON decoy_edits(token_id, created_at);
CREATE TABLE IF NOT EXISTS decoy_prefs (
  decoy_id TEXT PRIMARY KEY, notify_all_messages INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS decoy_reservations (
  email TEXT PRIMARY KEY, token_id TEXT NOT NULL, reserved_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS unlocks (
  id TEXT PRIMARY KEY, token_id TEXT NOT NULL, kind TEXT NOT NULL, target_id TEXT NOT NULL,
  datatypes TEXT NOT NULL DEFAULT '[]', reason TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL,                                     -- pending | ready | denied | expired
  auto_approved INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, expires_at REAL,
  decided_at REAL, sealed_envelope TEXT, consumed INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS unlocks_token ON unlocks(token_id, created_at);
CREATE TABLE IF NOT EXISTS account_copies (
  account_id TEXT NOT NULL, token_id TEXT NOT NULL, recipient_key TEXT NOT NULL, account_rev INTEGER NOT NULL,
  sealed_envelope TEXT NOT NULL, made_at REAL NOT NULL, PRIMARY KEY (account_id, token_id)
);
CREATE TABLE IF NOT EXISTS secret_copies (
  account_id TEXT NOT NULL, token_id TEXT NOT NULL, recipient_key TEXT NOT NULL, account_rev INTEGER NOT NULL,
  sealed_envelope TEXT NOT NULL, made_at REAL NOT NULL, PRIMARY KEY (account_id, token_id)
);
CREATE TABLE IF NOT EXISTS account_asks (
  account_id TEXT NOT NULL, token_id TEXT NOT NULL, asked_at REAL NOT NULL, PRIMARY KEY (account_id, token_id)
);
CREATE TABLE IF NOT EXISTS account_read_asks (
  kind TEXT NOT NULL, target_id TEXT NOT NULL, token_id TEXT NOT NULL, asked_at REAL NOT NULL,
  PRIMARY KEY (kind, target_id, token_id)
);
"""
    + PASSKEY_SCHEMA
)

ACCOUNT_COLUMNS = (
    "id",
    "encrypted_data",
    "blob_mode",
    "service_name",
    "status",
    "agent_label",
    "has_password",
    "two_factor_enabled",
    "decoy_id",
    "created_by_token_id",
    "rev",
    "created_at",
    "updated_at",
)


def _insert(con: sqlite3.Connection, table: str, values: dict[str, Any]) -> None:
    cols = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    con.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(values.values()))


def _update(con: sqlite3.Connection, table: str, key: str, key_value: Any, values: dict[str, Any]) -> None:
    if values:
        sets = ", ".join(f"{k}=?" for k in values)
        con.execute(f"UPDATE {table} SET {sets} WHERE {key}=?", (*values.values(), key_value))


# ── accounts ───────────────────────────────────────────────────────────────────────────────


def insert_account(con: sqlite3.Connection, **values: Any) -> None:
    _insert(con, "accounts", values)


def update_account(con: sqlite3.Connection, account_id: str, **values: Any) -> None:
    _update(con, "accounts", "id", account_id, values)


def get_account(con: sqlite3.Connection, account_id: str, *, deleted: bool = False) -> sqlite3.Row | None:
    """The account, or None (a deleted one only with `deleted=True`)."""
    row = con.execute("SELECT * FROM accounts WHERE id=?", (account_id,)).fetchone()
    if row is None or (row["status"] == "deleted" and not deleted):
        return None
    return row


def live_accounts(con: sqlite3.Connection) -> list[sqlite3.Row]:
    """Every account not deleted, oldest first."""
    return list(con.execute("SELECT * FROM accounts WHERE status!='deleted' ORDER BY created_at, id"))


# ── fields ─────────────────────────────────────────────────────────────────────────────────


def insert_field(con: sqlite3.Connection, **values: Any) -> None:
    _insert(con, "account_fields", values)


def update_field(con: sqlite3.Connection, field_id: str, **values: Any) -> None:
    _update(con, "account_fields", "id", field_id, values)


def get_field(con: sqlite3.Connection, field_id: str) -> sqlite3.Row | None:
    return con.execute("SELECT * FROM account_fields WHERE id=?", (field_id,)).fetchone()


def fields_of(con: sqlite3.Connection, account_id: str) -> list[sqlite3.Row]:
    """The account's fields that are not deleted, oldest first."""
    return list(
        con.execute(
            "SELECT * FROM account_fields WHERE account_id=? AND deleted=0 ORDER BY created_at, id", (account_id,)
        )
    )


def fields_with_wrap(con: sqlite3.Connection, account_id: str, token_id: str) -> list[sqlite3.Row]:
    """`fields_of`, each row with `token_id`'s wrap of its key beside it (`wrap_kid`,
    `wrapped_key`, `wrap_recipient`; NULL without one): a fields read in one query, not one per field."""
    return list(
        con.execute(
            "SELECT f.*, w.kid AS wrap_kid, w.wrapped_key AS wrapped_key, w.recipient_key AS wrap_recipient"
            " FROM account_fields f LEFT JOIN field_wraps w ON w.field_id=f.id AND w.token_id=?"
            " WHERE f.account_id=? AND f.deleted=0 ORDER BY f.created_at, f.id",
            (token_id, account_id),
        )
    )


def bump_fields_rev(con: sqlite3.Connection, account_id: str) -> None:
    """ "`fields_rev` changes whenever any field on the account changes"."""
    con.execute("UPDATE accounts SET fields_rev=fields_rev+1 WHERE id=?", (account_id,))


def put_field_wrap(
    con: sqlite3.Connection, field_id: str, token_id: str, kid: str, wrapped_key: str, recipient_key: str | None
) -> None:
    con.execute(
        "INSERT OR REPLACE INTO field_wraps (field_id, token_id, kid, wrapped_key, recipient_key) VALUES (?,?,?,?,?)",
        (field_id, token_id, kid, wrapped_key, recipient_key),
    )


def field_wraps(con: sqlite3.Connection, field_id: str) -> dict[str, sqlite3.Row]:
    """token id → its wrap of the field key."""
    return {r["token_id"]: r for r in con.execute("SELECT * FROM field_wraps WHERE field_id=?", (field_id,))}


def delete_field_wraps(con: sqlite3.Connection, field_id: str) -> None:
    con.execute("DELETE FROM field_wraps WHERE field_id=?", (field_id,))


# ── decoys ─────────────────────────────────────────────────────────────────────────────────


def insert_decoy(con: sqlite3.Connection, **values: Any) -> None:
    _insert(con, "decoys", values)


def update_decoy(con: sqlite3.Connection, decoy_id: str, **values: Any) -> None:
    _update(con, "decoys", "id", decoy_id, values)


def get_decoy(con: sqlite3.Connection, decoy_id: str) -> sqlite3.Row | None:
    return con.execute("SELECT * FROM decoys WHERE id=? AND status!='burned'", (decoy_id,)).fetchone()


WORDS = ("another", "quiet", "amber", "harbor", "maple", "orbit", "cedar", "lumen", "pebble", "tundra")


def new_address(con: sqlite3.Connection) -> str:
    """A fresh address no one holds, had or reserved: "the server generates a privacy-safe
    address (e.g. `another.alias.demo@decoys.me`)"."""
    while True:
        email = f"{secrets.choice(WORDS)}.{secrets.choice(WORDS)}.{secrets.token_hex(3)}@decoys.me"
        if not address_taken(con, email):
            return email


def live_decoys(con: sqlite3.Connection) -> list[sqlite3.Row]:
    """Every address not burned, oldest first."""
    return list(con.execute("SELECT * FROM decoys WHERE status!='burned' ORDER BY created_at, id"))


def burn_decoy(con: sqlite3.Connection, decoy_id: str, now: float) -> None:
    """Burn an address: gone from reads, its copies and its pending edits with it."""
    update_decoy(con, decoy_id, status="burned", updated_at=now)
    con.execute("DELETE FROM decoy_seals WHERE decoy_id=?", (decoy_id,))
    con.execute(
        "UPDATE decoy_edits SET status='rejected', reject_reason='decoy_not_found', resolved_at=?"
        " WHERE decoy_id=? AND status='pending'",
        (now, decoy_id),
    )


def notify_all(con: sqlite3.Connection, decoy_id: str) -> bool:
    row = con.execute("SELECT notify_all_messages FROM decoy_prefs WHERE decoy_id=?", (decoy_id,)).fetchone()
    return bool(row and row[0])


def set_notify_all(con: sqlite3.Connection, decoy_id: str, value: bool) -> None:
    con.execute(
        "INSERT OR REPLACE INTO decoy_prefs (decoy_id, notify_all_messages) VALUES (?,?)", (decoy_id, int(value))
    )


def reserve(con: sqlite3.Connection, email: str, token_id: str, now: float) -> None:
    con.execute("INSERT INTO decoy_reservations (email, token_id, reserved_at) VALUES (?,?,?)", (email, token_id, now))


def reservation(con: sqlite3.Connection, email: str) -> sqlite3.Row | None:
    return con.execute("SELECT * FROM decoy_reservations WHERE email=?", (email,)).fetchone()


def release(con: sqlite3.Connection, email: str) -> None:
    con.execute("DELETE FROM decoy_reservations WHERE email=?", (email,))


def address_taken(con: sqlite3.Connection, email: str) -> bool:
    """Is the address in use, burned, or reserved? (a burned address is never handed out again)"""
    return (
        con.execute("SELECT 1 FROM decoys WHERE email=?", (email,)).fetchone() is not None
        or reservation(con, email) is not None
    )


def decoy_by_key(con: sqlite3.Connection, token_id: str, idempotency_key: str) -> sqlite3.Row | None:
    return con.execute(
        "SELECT * FROM decoys WHERE created_by_token_id=? AND idempotency_key=?", (token_id, idempotency_key)
    ).fetchone()


def decoys_created_since(con: sqlite3.Connection, token_id: str, since: float) -> list[float]:
    """When this connection created each address since `since` (the create limit counts them)."""
    return [
        r[0]
        for r in con.execute(
            "SELECT created_at FROM decoys WHERE created_by_token_id=? AND created_at>? ORDER BY created_at",
            (token_id, since),
        )
    ]


def put_decoy_seal(
    con: sqlite3.Connection, decoy_id: str, token_id: str, sealed: str, recipient_key: str | None, now: float
) -> None:
    con.execute(
        "INSERT OR REPLACE INTO decoy_seals (decoy_id, token_id, sealed_envelope, recipient_key, made_at)"
        " VALUES (?,?,?,?,?)",
        (decoy_id, token_id, sealed, recipient_key, now),
    )


def decoy_seal(con: sqlite3.Connection, decoy_id: str, token_id: str) -> sqlite3.Row | None:
    return con.execute("SELECT * FROM decoy_seals WHERE decoy_id=? AND token_id=?", (decoy_id, token_id)).fetchone()


def drop_decoy_seals(con: sqlite3.Connection, decoy_id: str, keep: Iterable[str] = ()) -> None:
    keep = list(keep)
    marks = ",".join("?" for _ in keep) or "''"
    con.execute(f"DELETE FROM decoy_seals WHERE decoy_id=? AND token_id NOT IN ({marks})", (decoy_id, *keep))


# ── queued decoy edits ─────────────────────────────────────────────────────────────────────


def insert_edit(con: sqlite3.Connection, **values: Any) -> None:
    _insert(con, "decoy_edits", values)


def update_edit(con: sqlite3.Connection, edit_id: str, **values: Any) -> None:
    _update(con, "decoy_edits", "id", edit_id, values)


def get_edit(con: sqlite3.Connection, edit_id: str) -> sqlite3.Row | None:
    return con.execute("SELECT * FROM decoy_edits WHERE id=?", (edit_id,)).fetchone()


def pending_edits(con: sqlite3.Connection, token_id: str | None = None) -> list[sqlite3.Row]:
    """Pending edits, oldest first (one connection's with `token_id`)."""
    if token_id is None:
        return list(con.execute("SELECT * FROM decoy_edits WHERE status='pending' ORDER BY created_at, id"))
    return list(
        con.execute(
            "SELECT * FROM decoy_edits WHERE status='pending' AND token_id=? ORDER BY created_at, id", (token_id,)
        )
    )


def edits_since(con: sqlite3.Connection, token_id: str, since: float) -> list[float]:
    return [
        r[0]
        for r in con.execute(
            "SELECT created_at FROM decoy_edits WHERE token_id=? AND created_at>? ORDER BY created_at",
            (token_id, since),
        )
    ]


# ── unlocks and the phone's copies ─────────────────────────────────────────────────────────


def insert_unlock(con: sqlite3.Connection, **values: Any) -> None:
    _insert(con, "unlocks", values)


def update_unlock(con: sqlite3.Connection, unlock_id: str, **values: Any) -> None:
    _update(con, "unlocks", "id", unlock_id, values)


def get_unlock(con: sqlite3.Connection, unlock_id: str) -> sqlite3.Row | None:
    return con.execute("SELECT * FROM unlocks WHERE id=?", (unlock_id,)).fetchone()


def pending_unlocks(con: sqlite3.Connection) -> list[sqlite3.Row]:
    return list(con.execute("SELECT * FROM unlocks WHERE status='pending' ORDER BY created_at, id"))


def unlocks_since(con: sqlite3.Connection, token_id: str, since: float) -> list[float]:
    return [
        r[0]
        for r in con.execute(
            "SELECT created_at FROM unlocks WHERE token_id=? AND created_at>? ORDER BY created_at", (token_id, since)
        )
    ]


def put_copy(
    con: sqlite3.Connection, account_id: str, token_id: str, recipient_key: str, rev: int, sealed: str, now: float
) -> None:
    con.execute(
        "INSERT OR REPLACE INTO account_copies (account_id, token_id, recipient_key, account_rev, sealed_envelope,"
        " made_at) VALUES (?,?,?,?,?,?)",
        (account_id, token_id, recipient_key, rev, sealed, now),
    )
    con.execute("DELETE FROM account_asks WHERE account_id=? AND token_id=?", (account_id, token_id))


def put_secret_copy(
    con: sqlite3.Connection, account_id: str, token_id: str, recipient_key: str, rev: int, sealed: str, now: float
) -> None:
    con.execute(
        "INSERT OR REPLACE INTO secret_copies (account_id, token_id, recipient_key, account_rev, sealed_envelope,"
        " made_at) VALUES (?,?,?,?,?,?)",
        (account_id, token_id, recipient_key, rev, sealed, now),
    )


def get_secret_copy(con: sqlite3.Connection, account_id: str, token_id: str) -> sqlite3.Row | None:
    return con.execute(
        "SELECT * FROM secret_copies WHERE account_id=? AND token_id=?", (account_id, token_id)
    ).fetchone()


def get_copy(con: sqlite3.Connection, account_id: str, token_id: str) -> sqlite3.Row | None:
    return con.execute(
        "SELECT * FROM account_copies WHERE account_id=? AND token_id=?", (account_id, token_id)
    ).fetchone()


def ask_copy(con: sqlite3.Connection, account_id: str, token_id: str, now: float) -> float:
    """Record that the phone was asked for this copy (the first ask stands); when it was asked."""
    con.execute(
        "INSERT OR IGNORE INTO account_asks (account_id, token_id, asked_at) VALUES (?,?,?)",
        (account_id, token_id, now),
    )
    return float(
        con.execute(
            "SELECT asked_at FROM account_asks WHERE account_id=? AND token_id=?", (account_id, token_id)
        ).fetchone()[0]
    )


def asks(con: sqlite3.Connection) -> list[sqlite3.Row]:
    return list(con.execute("SELECT * FROM account_asks ORDER BY asked_at"))


def last_read_ask(con: sqlite3.Connection, kind: str, target_id: str, token_id: str) -> float | None:
    """When a read after `failed` last asked the phone again (`kind`: copy or fields), if ever."""
    r = con.execute(
        "SELECT asked_at FROM account_read_asks WHERE kind=? AND target_id=? AND token_id=?",
        (kind, target_id, token_id),
    ).fetchone()
    return float(r[0]) if r else None


def record_read_ask(con: sqlite3.Connection, kind: str, target_id: str, token_id: str, now: float) -> None:
    con.execute(
        "INSERT OR REPLACE INTO account_read_asks (kind, target_id, token_id, asked_at) VALUES (?,?,?,?)",
        (kind, target_id, token_id, now),
    )

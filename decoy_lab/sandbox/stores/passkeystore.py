"""The owner's passkeys, as the sandbox's simulated phone keeps them (its private keys never leave a
real phone), and the sign-ins unlock requests ask it to sign.

- `passkeys`      one passkey: its credential id, the account and site (`rp_id`) it signs in to, the
                  P-256 private key (PKCS#8 PEM), the user handle, the signature counter.
- `passkey_asks`  the sign-in an unlock request names: the passkey and the clientDataJSON to sign.

Created with the account family's tables (acctstore.SCHEMA); every function takes an open sqlite3
connection inside `store.tx()`; nothing here commits.
"""

from __future__ import annotations

import sqlite3
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS passkeys (
  credential_id TEXT PRIMARY KEY, account_id TEXT NOT NULL, rp_id TEXT NOT NULL, private_key TEXT NOT NULL,
  user_handle TEXT, sign_count INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS passkeys_rp ON passkeys(rp_id);
CREATE TABLE IF NOT EXISTS passkey_asks (
  unlock_id TEXT PRIMARY KEY, credential_id TEXT NOT NULL, client_data_json_b64 TEXT NOT NULL
);
"""


def insert_passkey(con: sqlite3.Connection, **values: Any) -> None:
    cols = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    con.execute(f"INSERT INTO passkeys ({cols}) VALUES ({marks})", tuple(values.values()))


def passkeys_for(con: sqlite3.Connection, rp_id: str) -> list[sqlite3.Row]:
    """The passkeys for a site whose account is not deleted, oldest first."""
    return list(
        con.execute(
            "SELECT p.* FROM passkeys p JOIN accounts a ON a.id=p.account_id"
            " WHERE p.rp_id=? AND a.status!='deleted' ORDER BY p.created_at, p.credential_id",
            (rp_id,),
        )
    )


def get_passkey(con: sqlite3.Connection, credential_id: str) -> sqlite3.Row | None:
    return con.execute("SELECT * FROM passkeys WHERE credential_id=?", (credential_id,)).fetchone()


def count_signature(con: sqlite3.Connection, credential_id: str) -> int:
    """The passkey's signature counter, moved on by one; its new value."""
    con.execute("UPDATE passkeys SET sign_count=sign_count+1 WHERE credential_id=?", (credential_id,))
    return int(con.execute("SELECT sign_count FROM passkeys WHERE credential_id=?", (credential_id,)).fetchone()[0])


def put_passkey_ask(con: sqlite3.Connection, unlock_id: str, credential_id: str, client_data_json_b64: str) -> None:
    con.execute(
        "INSERT INTO passkey_asks (unlock_id, credential_id, client_data_json_b64) VALUES (?,?,?)",
        (unlock_id, credential_id, client_data_json_b64),
    )


def passkey_ask(con: sqlite3.Connection, unlock_id: str) -> sqlite3.Row | None:
    return con.execute("SELECT * FROM passkey_asks WHERE unlock_id=?", (unlock_id,)).fetchone()

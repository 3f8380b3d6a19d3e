"""Legacy space storage: `spaces`, `space_wraps`, `space_rows` (their tables: `SCHEMA`).

Every function takes an open sqlite3 connection inside `store.tx()`; nothing here commits.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

SCHEMA = """
CREATE TABLE IF NOT EXISTS spaces (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    account_id TEXT,
    skid TEXT NOT NULL,
    owner_wrap TEXT NOT NULL,
    created_by TEXT,
    created_at REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS spaces_kind_account ON spaces(kind, IFNULL(account_id, ''));
CREATE TABLE IF NOT EXISTS space_wraps (
    space_id TEXT NOT NULL,
    token_id TEXT NOT NULL,
    key_fp TEXT NOT NULL,
    wrapped_key TEXT NOT NULL,
    PRIMARY KEY (space_id, token_id)
);
CREATE TABLE IF NOT EXISTS space_rows (
    id TEXT PRIMARY KEY,
    space_id TEXT NOT NULL,
    skid TEXT NOT NULL,
    ciphertext TEXT NOT NULL,
    rev INTEGER NOT NULL,
    author_kind TEXT NOT NULL,
    author_token TEXT,
    owner_edited INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
"""


@dataclass
class Space:
    id: str
    kind: str
    account_id: str | None
    skid: str
    owner_wrap: str
    created_by: str | None
    created_at: float


@dataclass
class SpaceRow:
    id: str
    space_id: str
    skid: str
    ciphertext: str
    rev: int
    author_kind: str
    author_token: str | None
    owner_edited: int
    created_at: float
    updated_at: float


_SPACE_COLS = "id, kind, account_id, skid, owner_wrap, created_by, created_at"


_SROW_COLS = "id, space_id, skid, ciphertext, rev, author_kind, author_token, owner_edited, created_at, updated_at"


def all_spaces(con: sqlite3.Connection) -> list[Space]:
    return [Space(*r) for r in con.execute(f"SELECT {_SPACE_COLS} FROM spaces ORDER BY created_at, id")]


def get_space(con: sqlite3.Connection, space_id: str) -> Space | None:
    r = con.execute(f"SELECT {_SPACE_COLS} FROM spaces WHERE id = ?", (space_id,)).fetchone()
    return Space(*r) if r else None


def find_space(con: sqlite3.Connection, kind: str, account_id: str | None) -> Space | None:
    r = con.execute(
        f"SELECT {_SPACE_COLS} FROM spaces WHERE kind = ? AND IFNULL(account_id, '') = ?", (kind, account_id or "")
    ).fetchone()
    return Space(*r) if r else None


def insert_space(con: sqlite3.Connection, s: Space) -> None:
    con.execute(
        f"INSERT INTO spaces ({_SPACE_COLS}) VALUES (?,?,?,?,?,?,?)",
        (s.id, s.kind, s.account_id, s.skid, s.owner_wrap, s.created_by, s.created_at),
    )


def space_wrap(con: sqlite3.Connection, space_id: str, token_id: str) -> tuple[str, str] | None:
    """(key_fp, wrapped_key) of the token's wrap of the space key, if any."""
    r = con.execute(
        "SELECT key_fp, wrapped_key FROM space_wraps WHERE space_id = ? AND token_id = ?", (space_id, token_id)
    ).fetchone()
    return (r[0], r[1]) if r else None


def put_space_wrap(con: sqlite3.Connection, space_id: str, token_id: str, fp: str, wrapped_key: str) -> None:
    con.execute(
        "INSERT OR REPLACE INTO space_wraps (space_id, token_id, key_fp, wrapped_key) VALUES (?,?,?,?)",
        (space_id, token_id, fp, wrapped_key),
    )


def space_rows(con: sqlite3.Connection, space_id: str) -> list[SpaceRow]:
    return [
        SpaceRow(*r)
        for r in con.execute(
            f"SELECT {_SROW_COLS} FROM space_rows WHERE space_id = ? ORDER BY created_at, id", (space_id,)
        )
    ]


def get_space_row(con: sqlite3.Connection, row_id: str) -> SpaceRow | None:
    r = con.execute(f"SELECT {_SROW_COLS} FROM space_rows WHERE id = ?", (row_id,)).fetchone()
    return SpaceRow(*r) if r else None


def insert_space_row(con: sqlite3.Connection, r: SpaceRow) -> None:
    con.execute(
        f"INSERT INTO space_rows ({_SROW_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (
            r.id,
            r.space_id,
            r.skid,
            r.ciphertext,
            r.rev,
            r.author_kind,
            r.author_token,
            r.owner_edited,
            r.created_at,
            r.updated_at,
        ),
    )


def update_space_row(con: sqlite3.Connection, row_id: str, ciphertext: str, rev: int, now: float) -> None:
    con.execute(
        "UPDATE space_rows SET ciphertext = ?, rev = ?, updated_at = ? WHERE id = ?", (ciphertext, rev, now, row_id)
    )


def delete_space_row(con: sqlite3.Connection, row_id: str) -> None:
    con.execute("DELETE FROM space_rows WHERE id = ?", (row_id,))

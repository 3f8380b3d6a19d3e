"""The memory side of the sandbox database: its tables and the queries over them.

Tables (created by db.Store with `db.SCHEMA + memstore.SCHEMA + spacestore.SCHEMA`):

- `memories`      one row per memory / topic / link: the ciphertext, the owner wrap, the key id
                  and revision, and who wrote it (a connection, or the owner).
- `memory_wraps`  one wrap of a memory key per recipient token, with the `via` reasons it was
                  admitted for and the fingerprint of the recipient key it was made for (a wrap
                  for a key the connection has since replaced is never served).
- `memory_generation` one counter that SQLite triggers move on every change to `memories` or
                  `memory_wraps`, however it is made: what a cached read answer is checked against;
                  `memory_touched` the memory id each such change touched, and when.
- `memory_asks`   per token: when a read last asked the owner's phone again after `failed`.
- `memory_share`  per token: when the owner's phone last reported it finished sharing.
- `memory_unopenable` the rows the owner's phone could not open on its last pass, and why.
- `memory_labels`  the labels the owner's phone last accepted for a row (author or owner approved):
                  a later edit by another connection that changes them does not decide sharing.
- `change_log`    the sync feed (ids only) with the prune floor in `sync_meta`.

Every function takes an open sqlite3 connection inside `store.tx()`; nothing here commits.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field

SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY,
    kid TEXT NOT NULL,
    rev INTEGER NOT NULL,
    ciphertext TEXT NOT NULL,
    owner_wrap TEXT NOT NULL,
    author_kind TEXT NOT NULL,
    author_token TEXT,
    author_connection TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    key_at REAL NOT NULL,
    editor_kind TEXT,
    editor_connection TEXT
);
CREATE TABLE IF NOT EXISTS memory_wraps (
    memory_id TEXT NOT NULL,
    token_id TEXT NOT NULL,
    key_fp TEXT NOT NULL,
    kid TEXT NOT NULL,
    wrapped_key TEXT NOT NULL,
    via TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (memory_id, token_id)
);
CREATE INDEX IF NOT EXISTS memory_wraps_token ON memory_wraps(token_id);
CREATE INDEX IF NOT EXISTS memories_order ON memories(created_at, id);  -- reads list oldest first
CREATE TABLE IF NOT EXISTS memory_generation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n INTEGER NOT NULL
);
INSERT OR IGNORE INTO memory_generation (id, n) VALUES (1, 0);
CREATE TRIGGER IF NOT EXISTS memories_ins AFTER INSERT ON memories BEGIN UPDATE memory_generation SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS memories_upd AFTER UPDATE ON memories BEGIN UPDATE memory_generation SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS memories_del AFTER DELETE ON memories BEGIN UPDATE memory_generation SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS wraps_ins AFTER INSERT ON memory_wraps BEGIN UPDATE memory_generation SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS wraps_upd AFTER UPDATE ON memory_wraps BEGIN UPDATE memory_generation SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS wraps_del AFTER DELETE ON memory_wraps BEGIN UPDATE memory_generation SET n = n + 1; END;
-- the memory id each change touched, at about the generation it made (readcache.RowCache)
CREATE TABLE IF NOT EXISTS memory_touched (id TEXT PRIMARY KEY, gen INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS touch_ins AFTER INSERT ON memories BEGIN INSERT OR REPLACE INTO memory_touched SELECT NEW.id, n FROM memory_generation; END;
CREATE TRIGGER IF NOT EXISTS touch_upd AFTER UPDATE ON memories BEGIN INSERT OR REPLACE INTO memory_touched SELECT OLD.id, n FROM memory_generation; INSERT OR REPLACE INTO memory_touched SELECT NEW.id, n FROM memory_generation; END;
CREATE TRIGGER IF NOT EXISTS touch_del AFTER DELETE ON memories BEGIN INSERT OR REPLACE INTO memory_touched SELECT OLD.id, n FROM memory_generation; END;
CREATE TRIGGER IF NOT EXISTS touch_wins AFTER INSERT ON memory_wraps BEGIN INSERT OR REPLACE INTO memory_touched SELECT NEW.memory_id, n FROM memory_generation; END;
CREATE TRIGGER IF NOT EXISTS touch_wupd AFTER UPDATE ON memory_wraps BEGIN INSERT OR REPLACE INTO memory_touched SELECT OLD.memory_id, n FROM memory_generation; INSERT OR REPLACE INTO memory_touched SELECT NEW.memory_id, n FROM memory_generation; END;
CREATE TRIGGER IF NOT EXISTS touch_wdel AFTER DELETE ON memory_wraps BEGIN INSERT OR REPLACE INTO memory_touched SELECT OLD.memory_id, n FROM memory_generation; END;
CREATE TABLE IF NOT EXISTS memory_asks (
    token_id TEXT PRIMARY KEY,
    asked_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_share (
    token_id TEXT PRIMARY KEY,
    completed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_labels (
    memory_id TEXT PRIMARY KEY,
    rev INTEGER NOT NULL,
    labels TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_unopenable (
    memory_id TEXT PRIMARY KEY,
    problem TEXT NOT NULL,
    reason TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS change_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    bucket TEXT NOT NULL,
    item_id TEXT NOT NULL,
    op TEXT NOT NULL,
    space_id TEXT,
    holders TEXT,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sync_meta (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    floor INTEGER NOT NULL
);
"""


@functools.lru_cache(maxsize=1024)  # one hash per recipient key, not one per row served
def key_fp(public_key_b64: str | None) -> str:
    """Which recipient key a wrap was made for: SHA-256 prefix of the base64 SPKI text."""
    return hashlib.sha256((public_key_b64 or "").encode("ascii")).hexdigest()[:16]


# ── memories ───────────────────────────────────────────────────────────────────────────────


@dataclass
class MemoryRow:
    """One stored memory row exactly as the server holds it (it never holds plaintext)."""

    id: str
    kid: str
    rev: int
    ciphertext: str
    owner_wrap: str
    author_kind: str
    author_token: str | None
    author_connection: str | None
    created_at: float
    updated_at: float
    key_at: float
    editor_kind: str | None = None  # who made the current revision: "owner" / "agent"
    editor_connection: str | None = None

    @property
    def edited_by_author(self) -> bool:
        """Was the current revision written by the row's author (or the owner)?"""
        if self.editor_kind is None or self.editor_kind == "owner":
            return True
        return self.author_kind == "agent" and self.editor_connection == self.author_connection


@dataclass
class Wrap:
    """One wrap of a memory key to one recipient token."""

    memory_id: str
    token_id: str
    key_fp: str
    kid: str
    wrapped_key: str
    via: list[str] = field(default_factory=list)
    created_at: float = 0.0


_MEM_COLS = (
    "id, kid, rev, ciphertext, owner_wrap, author_kind, author_token, author_connection, created_at, "
    "updated_at, key_at, editor_kind, editor_connection"
)


def get_memory(con: sqlite3.Connection, memory_id: str) -> MemoryRow | None:
    r = con.execute(f"SELECT {_MEM_COLS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return MemoryRow(*r) if r else None


def all_memories(con: sqlite3.Connection) -> list[MemoryRow]:
    """Every memory row, oldest first (ties by id so the order repeats)."""
    return [MemoryRow(*r) for r in con.execute(f"SELECT {_MEM_COLS} FROM memories ORDER BY created_at, id")]


def touched_since(con: sqlite3.Connection, gen: int) -> list[str]:
    """Memory ids a change touched (a row or a wrap of it) since generation `gen`, and maybe a
    few just before: each records the generation about when it was made (before or after its
    own step), never less than the generation it started from."""
    return [r[0] for r in con.execute("SELECT id FROM memory_touched WHERE gen >= ?", (gen,))]


def generation(con: sqlite3.Connection) -> int:
    """Moves on every insert, update or delete of a memory or a wrap (SQLite triggers)."""
    return con.execute("SELECT n FROM memory_generation WHERE id = 1").fetchone()[0]


def insert_memory(con: sqlite3.Connection, row: MemoryRow) -> None:
    con.execute(
        f"INSERT INTO memories ({_MEM_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            row.id,
            row.kid,
            row.rev,
            row.ciphertext,
            row.owner_wrap,
            row.author_kind,
            row.author_token,
            row.author_connection,
            row.created_at,
            row.updated_at,
            row.key_at,
            row.editor_kind or row.author_kind,
            row.editor_connection or row.author_connection,
        ),
    )


def update_memory(
    con: sqlite3.Connection,
    memory_id: str,
    *,
    ciphertext: str,
    rev: int,
    now: float,
    kid: str | None = None,
    owner_wrap: str | None = None,
    editor_kind: str = "agent",
    editor_connection: str | None = None,
) -> None:
    """A new revision by `editor_*`; with `kid` and `owner_wrap` a new key (key_at moves too)."""
    con.execute(
        "UPDATE memories SET ciphertext=?, rev=?, updated_at=?, editor_kind=?, editor_connection=? WHERE id=?",
        (ciphertext, rev, now, editor_kind, editor_connection, memory_id),
    )
    if kid is not None:
        con.execute("UPDATE memories SET kid=?, owner_wrap=?, key_at=? WHERE id=?", (kid, owner_wrap, now, memory_id))


def delete_memory(con: sqlite3.Connection, memory_id: str) -> None:
    con.execute("DELETE FROM memory_wraps WHERE memory_id = ?", (memory_id,))
    con.execute("DELETE FROM memory_labels WHERE memory_id = ?", (memory_id,))
    con.execute("DELETE FROM memories WHERE id = ?", (memory_id,))


@functools.lru_cache(maxsize=4096)
def _via(text: str) -> tuple[str, ...]:
    """Stored reason lists repeat ('["self"]', '["all"]' …): parse each distinct text once."""
    return tuple(json.loads(text))


def _wrap(r: tuple) -> Wrap:
    return Wrap(r[0], r[1], r[2], r[3], r[4], list(_via(r[5])), r[6])


_WRAP_COLS = "memory_id, token_id, key_fp, kid, wrapped_key, via, created_at"


def wraps_of(con: sqlite3.Connection, memory_id: str) -> list[Wrap]:
    return [
        _wrap(r)
        for r in con.execute(
            f"SELECT {_WRAP_COLS} FROM memory_wraps WHERE memory_id = ? ORDER BY created_at, token_id", (memory_id,)
        )
    ]


def wraps_for_token(con: sqlite3.Connection, token_id: str) -> dict[str, Wrap]:
    """memory id → this token's wrap (one query for a whole read)."""
    return {
        r[0]: _wrap(r) for r in con.execute(f"SELECT {_WRAP_COLS} FROM memory_wraps WHERE token_id = ?", (token_id,))
    }


def all_wraps(con: sqlite3.Connection) -> dict[str, list[Wrap]]:
    out: dict[str, list[Wrap]] = {}
    for r in con.execute(f"SELECT {_WRAP_COLS} FROM memory_wraps ORDER BY created_at, token_id"):
        out.setdefault(r[0], []).append(_wrap(r))
    return out


def get_wrap(con: sqlite3.Connection, memory_id: str, token_id: str) -> Wrap | None:
    r = con.execute(
        f"SELECT {_WRAP_COLS} FROM memory_wraps WHERE memory_id = ? AND token_id = ?", (memory_id, token_id)
    ).fetchone()
    return _wrap(r) if r else None


def put_wrap(con: sqlite3.Connection, w: Wrap) -> None:
    """Insert or replace the wrap of `w.memory_id` for `w.token_id`."""
    con.execute(
        f"INSERT OR REPLACE INTO memory_wraps ({_WRAP_COLS}) VALUES (?,?,?,?,?,?,?)",
        (w.memory_id, w.token_id, w.key_fp, w.kid, w.wrapped_key, json.dumps(list(w.via)), w.created_at),
    )


def set_wrap_via(con: sqlite3.Connection, memory_id: str, token_id: str, via: Iterable[str]) -> None:
    con.execute(
        "UPDATE memory_wraps SET via = ? WHERE memory_id = ? AND token_id = ?",
        (json.dumps(list(via)), memory_id, token_id),
    )


def delete_wraps(con: sqlite3.Connection, memory_id: str) -> None:
    con.execute("DELETE FROM memory_wraps WHERE memory_id = ?", (memory_id,))


# ── owner-phone bookkeeping ────────────────────────────────────────────────────────────────


def last_read_ask(con: sqlite3.Connection, token_id: str) -> float | None:
    r = con.execute("SELECT asked_at FROM memory_asks WHERE token_id = ?", (token_id,)).fetchone()
    return r[0] if r else None


def record_read_ask(con: sqlite3.Connection, token_id: str, now: float) -> None:
    con.execute("INSERT OR REPLACE INTO memory_asks (token_id, asked_at) VALUES (?, ?)", (token_id, now))


def shared_complete_at(con: sqlite3.Connection, token_id: str) -> float | None:
    r = con.execute("SELECT completed_at FROM memory_share WHERE token_id = ?", (token_id,)).fetchone()
    return r[0] if r else None


def set_shared_complete(con: sqlite3.Connection, token_id: str, now: float) -> None:
    con.execute("INSERT OR REPLACE INTO memory_share (token_id, completed_at) VALUES (?, ?)", (token_id, now))


def set_unopenable(con: sqlite3.Connection, items: Iterable[tuple[str, str, str]], now: float) -> None:
    """Replace the list of rows the phone could not open with (id, problem, reason) items."""
    con.execute("DELETE FROM memory_unopenable")
    con.executemany(
        "INSERT OR REPLACE INTO memory_unopenable (memory_id, problem, reason, at) VALUES (?,?,?,?)",
        [(i, p, r, now) for i, p, r in items],
    )


def approved_labels(con: sqlite3.Connection, memory_id: str) -> tuple[int, dict] | None:
    """(rev, labels) the owner's phone last accepted for this row."""
    r = con.execute("SELECT rev, labels FROM memory_labels WHERE memory_id = ?", (memory_id,)).fetchone()
    return (r[0], json.loads(r[1])) if r else None


def set_approved_labels(
    con: sqlite3.Connection, memory_id: str, rev: int, labels: dict, *, known: dict | None = None
) -> None:
    """Record the labels the phone accepts; with `known` (all_approved_labels, read in this
    transaction) a row whose rev and labels are recorded already is not written again."""
    text = json.dumps(labels, sort_keys=True)
    if known is not None and known.get(memory_id) == (rev, text):
        return
    con.execute("INSERT OR REPLACE INTO memory_labels (memory_id, rev, labels) VALUES (?,?,?)", (memory_id, rev, text))


def all_approved_labels(con: sqlite3.Connection) -> dict[str, tuple[int, str]]:
    """memory id -> (rev, labels as stored) for every row the phone accepted labels of."""
    return {r[0]: (r[1], r[2]) for r in con.execute("SELECT memory_id, rev, labels FROM memory_labels")}


def unopenable_ids(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT memory_id FROM memory_unopenable")}


# ── sync change log ────────────────────────────────────────────────────────────────────────


@dataclass
class Change:
    seq: int
    bucket: str
    item_id: str
    op: str
    space_id: str | None
    holders: list[str] | None
    at: float


def log_change(
    con: sqlite3.Connection,
    bucket: str,
    item_id: str,
    op: str,
    now: float,
    *,
    space_id: str | None = None,
    holders: Iterable[str] | None = None,
) -> int:
    """Append one change (op: created / updated / destroyed); `holders` keeps who may hear of a
    destroyed id (the tombstone's former holders)."""
    cur = con.execute(
        "INSERT INTO change_log (bucket, item_id, op, space_id, holders, at) VALUES (?,?,?,?,?,?)",
        (bucket, item_id, op, space_id, json.dumps(sorted(set(holders))) if holders is not None else None, now),
    )
    assert cur.lastrowid is not None  # an INSERT always sets it
    return cur.lastrowid


def changes_after(con: sqlite3.Connection, cursor: int, limit: int) -> list[Change]:
    return [
        Change(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]) if r[5] else None, r[6])
        for r in con.execute(
            "SELECT seq, bucket, item_id, op, space_id, holders, at FROM change_log WHERE seq > ? ORDER BY seq LIMIT ?",
            (cursor, limit),
        )
    ]


def head(con: sqlite3.Connection) -> int:
    r = con.execute("SELECT MAX(seq) FROM change_log").fetchone()
    return int(r[0] or 0)


def prune_floor(con: sqlite3.Connection) -> int:
    r = con.execute("SELECT floor FROM sync_meta WHERE id = 1").fetchone()
    return int(r[0]) if r else 0


def prune(con: sqlite3.Connection, floor: int | None = None) -> int:
    """Move the prune floor (default: the current head) and drop the log entries at or below it.
    A cursor below the floor then answers 410. Returns the new floor."""
    floor = head(con) if floor is None else int(floor)
    con.execute("INSERT OR REPLACE INTO sync_meta (id, floor) VALUES (1, ?)", (floor,))
    con.execute("DELETE FROM change_log WHERE seq <= ?", (floor,))
    return floor

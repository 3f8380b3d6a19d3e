"""`Store`: the sandbox's one SQLite connection (WAL, one transaction per request).

The connection side's tables live here (`SCHEMA`); the memory side adds its own
(`memstore.SCHEMA`, then the legacy spaces' `spacestore.SCHEMA`), and the account family its own
(`acctstore.SCHEMA`), created in the same database. Tokens are stored as SHA-256 hashes only; the simulated owner's
key is kept in `sandbox_meta` (and, until a checkpoint, in the `-wal` file beside it), so the
database, its `-wal` and its `-shm` are created readable by their user only (0600, in a directory
made 0700 when missing) before SQLite writes a byte to them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterator

from decoy_lab.sandbox.stores.acctstore import SCHEMA as ACCOUNT_SCHEMA
from decoy_lab.sandbox.stores.memstore import SCHEMA as MEMORY_SCHEMA
from decoy_lab.sandbox.stores.spacestore import SCHEMA as SPACE_SCHEMA

SCHEMA = """
CREATE TABLE IF NOT EXISTS connections (
  token_id TEXT PRIMARY KEY, connection_id TEXT, name TEXT, client_id TEXT, public_key TEXT,
  created_at REAL, key_changed_at REAL, revoked INTEGER NOT NULL DEFAULT 0,
  access_version INTEGER NOT NULL DEFAULT 1, revoked_at REAL, scopes TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS credentials (
  hash TEXT PRIMARY KEY, token_id TEXT NOT NULL, kind TEXT NOT NULL,      -- access | refresh
  issued_at REAL NOT NULL, expires_at REAL NOT NULL,
  state TEXT NOT NULL DEFAULT 'live',                   -- live | used / retired (refresh) | replaced (access) | superseded
  used_at REAL                                          -- when a refresh token was first used
);
CREATE INDEX IF NOT EXISTS credentials_token ON credentials(token_id);
CREATE TABLE IF NOT EXISTS policies (
  id TEXT PRIMARY KEY, token_id TEXT NOT NULL, request_id TEXT, reason TEXT,
  created_at REAL, approved_at REAL, expires_at REAL, revoked_at REAL,
  rows TEXT NOT NULL                                                   -- JSON list of rows
);
CREATE INDEX IF NOT EXISTS policies_token ON policies(token_id);
CREATE TABLE IF NOT EXISTS requests (
  id TEXT PRIMARY KEY, token_id TEXT NOT NULL, status TEXT NOT NULL,   -- pending|approved|resolved|denied
  entries TEXT NOT NULL, reasons TEXT NOT NULL DEFAULT '[]', renewal INTEGER NOT NULL DEFAULT 0,
  ends_at REAL, created_at REAL, decided_at REAL, policy_id TEXT
);
CREATE INDEX IF NOT EXISTS requests_token ON requests(token_id, status);
CREATE TABLE IF NOT EXISTS device_sessions (
  device_hash TEXT PRIMARY KEY, user_code TEXT UNIQUE NOT NULL, request_id TEXT UNIQUE NOT NULL,
  client_id TEXT NOT NULL, name TEXT NOT NULL, public_key TEXT, entries TEXT NOT NULL,
  scopes TEXT NOT NULL DEFAULT '[]', warnings TEXT NOT NULL DEFAULT '[]',
  created_at REAL, expires_at REAL, interval REAL, last_poll REAL,
  status TEXT NOT NULL,                                                -- pending|approved|resolved|denied|consumed
  token_id TEXT, policy_id TEXT
);
CREATE TABLE IF NOT EXISTS par_requests (
  request_uri TEXT PRIMARY KEY, entries TEXT NOT NULL, scopes TEXT NOT NULL DEFAULT '[]',
  client_id TEXT, expires_at REAL, used INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS sandbox_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS asks (token_id TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS asks_token ON asks(token_id, at);
"""


def private_dirs(directory: str) -> None:
    """Create `directory` and every missing level above it at 0700 (levels that exist are left)."""
    missing = []
    while not os.path.isdir(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for level in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(level, 0o700)
            os.chmod(level, 0o700)  # mkdir's mode passes through the umask: set it exactly


def _new_private_file(path: str) -> None:
    """Create the database file at 0600 when it is missing (and any missing directory above it at
    0700), before SQLite would create it under the process's umask (0644 by default). Created with
    os.open(…, 0o600) and set exactly with fchmod, never by changing the umask: that is
    process-wide, and other threads create files too. An existing file is left as it is here (one
    that is not SQLite is refused untouched)."""
    private_dirs(os.path.dirname(os.path.abspath(path)))
    with contextlib.suppress(FileExistsError, IsADirectoryError):
        _private(path, os.O_EXCL)


def _private(path: str, flags: int = 0) -> None:
    """`path` exists at mode 0600 (created empty when missing)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | flags | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def token_hash(token: str) -> str:
    """What the store keeps instead of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


class Store:
    """One sqlite3 connection behind a lock; `with store.tx() as con:` is one transaction."""

    def __init__(self, path: str = ":memory:"):
        self.path = str(path)
        self._lock = threading.RLock()
        self._depth = 0
        if self.path != ":memory:":
            _new_private_file(self.path)
        self._con = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._con.row_factory = sqlite3.Row
        try:
            self._con.execute("PRAGMA schema_version")  # a file that is not SQLite is refused here, untouched
        except sqlite3.DatabaseError:
            self._con.close()
            raise
        if self.path != ":memory:":
            # the owner's key goes to the -wal first: it and the -shm are 0600 before WAL mode is on
            for suffix in ("", "-wal", "-shm"):
                _private(self.path + suffix)
            self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute("PRAGMA foreign_keys=ON")
        self._con.executescript(SCHEMA + MEMORY_SCHEMA + SPACE_SCHEMA + ACCOUNT_SCHEMA)
        # CREATE TABLE IF NOT EXISTS leaves a table of an older database file as it was
        if "used_at" not in {r[1] for r in self._con.execute("PRAGMA table_info(credentials)")}:
            self._con.execute("ALTER TABLE credentials ADD COLUMN used_at REAL")

    @contextlib.contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction: commit when the block ends, roll back when it raises.
        A nested `tx()` on the same thread joins the outer transaction."""
        with self._lock:
            con = self._con
            if self._depth:  # already inside this thread's transaction: join it
                self._depth += 1
                try:
                    yield con
                finally:
                    self._depth -= 1
                return
            con.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            else:
                con.execute("COMMIT")
            finally:
                self._depth = 0

    def close(self) -> None:
        with self._lock:
            try:
                self._con.close()
            except sqlite3.ProgrammingError:  # pragma: no cover - already closed
                pass

    def __repr__(self) -> str:
        return f"Store({self.path!r})"

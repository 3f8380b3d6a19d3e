"""Bearer token → `Agent`, or a 401 that says how to recover.

401 codes: `TOKEN_EXPIRED` (recovery `refresh`: `POST /oauth/token` with the refresh token),
`TOKEN_REPLACED` (recovery `refresh`: a refresh grant has since minted a newer access token for the
connection; refreshing with the current refresh token renews it), `TOKEN_REVOKED` (recovery
`re_pair`: the owner revoked the connection, or it was ended at `POST /oauth/revoke`), `TOKEN_SUPERSEDED`
(recovery `continue`: the connection was reconnected on a newer token), `TOKEN_INVALID`
(recovery `re_pair`: not a token this sandbox issued) and `TOKEN_MISSING`.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from starlette.requests import Request

from decoy_lab.sandbox.checks import grants, grantstore
from decoy_lab.sandbox.checks.selectors import MemoryAccess, memory_access_from_rows
from decoy_lab.sandbox.core import HTTPProblem, state_of
from decoy_lab.sandbox.stores.db import token_hash


@dataclass(frozen=True)
class Agent:
    """One connected agent as a request sees it."""

    token_id: str
    connection_id: str
    name: str
    public_key: str | None
    access: MemoryAccess
    access_version: int
    approved_at: float | None  # first approval of this connection
    newest_grant_at: float | None  # newest live grant's approval
    client_id: str = ""
    key_changed_at: float | None = None
    scopes: tuple[str, ...] = ()
    token_expires_at: float | None = None
    rows: tuple[grants.Row, ...] = field(default=(), repr=False)


def agent_for(
    con: sqlite3.Connection, conn_row: sqlite3.Row, now: float, token_expires_at: float | None = None
) -> Agent:
    """Build the Agent for one `connections` row from its live grants."""
    token_id = conn_row["token_id"]
    policies = grantstore.live_policies(con, token_id, now)
    rows = grantstore.rows_of(policies)
    first = con.execute("SELECT MIN(approved_at) FROM policies WHERE token_id=?", (token_id,)).fetchone()[0]
    newest = max((p["approved_at"] for p in policies if p["approved_at"] is not None), default=None)
    extra = json.loads(conn_row["scopes"] or "[]")
    return Agent(
        token_id=token_id,
        connection_id=conn_row["connection_id"] or token_id,
        name=conn_row["name"],
        public_key=conn_row["public_key"],
        access=memory_access_from_rows(rows),
        access_version=conn_row["access_version"],
        approved_at=first if first is None else float(first),
        newest_grant_at=newest,
        client_id=conn_row["client_id"] or "",
        key_changed_at=conn_row["key_changed_at"],
        scopes=tuple(grants.scopes_for(rows, extra)),
        token_expires_at=token_expires_at,
        rows=tuple(rows),
    )


def bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPProblem(401, "TOKEN_MISSING", "send Authorization: Bearer <access_token>", recovery="re_pair")
    return token.strip()


def agent_from_token(con: sqlite3.Connection, token: str, now: float) -> Agent:
    cred = con.execute("SELECT * FROM credentials WHERE hash=? AND kind='access'", (token_hash(token),)).fetchone()
    if cred is None:
        raise HTTPProblem(
            401, "TOKEN_INVALID", "this is not a token this sandbox issued; pair again", recovery="re_pair"
        )
    conn_row = con.execute("SELECT * FROM connections WHERE token_id=?", (cred["token_id"],)).fetchone()
    if conn_row is None or conn_row["revoked"]:
        raise HTTPProblem(
            401, "TOKEN_REVOKED", "this connection was revoked; only a new pairing helps", recovery="re_pair"
        )
    if cred["state"] == "superseded":
        raise HTTPProblem(
            401,
            "TOKEN_SUPERSEDED",
            "this connection was reconnected on a newer token; use that one",
            recovery="continue",
        )
    if cred["state"] == "replaced":
        raise HTTPProblem(
            401,
            "TOKEN_REPLACED",
            "a refresh replaced this access token; refresh again at POST /oauth/token with the current refresh token",
            recovery="refresh",
        )
    if now >= cred["expires_at"]:
        raise HTTPProblem(
            401, "TOKEN_EXPIRED", "the access token expired; refresh it at POST /oauth/token", recovery="refresh"
        )
    return agent_for(con, conn_row, now, cred["expires_at"])


def live_credential(con: sqlite3.Connection, token: str, now: float) -> tuple[sqlite3.Row, sqlite3.Row] | None:
    """The credential (access or refresh) and its connection when `token` is live: issued here,
    not expired, used, replaced or superseded, and its connection not revoked (RFC 7662 `active`)."""
    cred = con.execute("SELECT * FROM credentials WHERE hash=?", (token_hash(token),)).fetchone()
    if cred is None or cred["state"] != "live" or now >= cred["expires_at"]:
        return None
    conn_row = con.execute("SELECT * FROM connections WHERE token_id=?", (cred["token_id"],)).fetchone()
    if conn_row is None or conn_row["revoked"]:
        return None
    return cred, conn_row


def agent_from_request(request: Request, con: sqlite3.Connection | None = None) -> Agent:
    """The Agent behind the request's bearer token, or raise HTTPProblem(401, …)."""
    state = state_of(request)
    token = bearer(request)
    if con is not None:
        return agent_from_token(con, token, state.now())
    with state.store.tx() as c:
        return agent_from_token(c, token, state.now())


def live_agents(con: sqlite3.Connection, now: float) -> list[Agent]:
    """Every connection that is not revoked (grantees and the sharing pass read these)."""
    rows = con.execute("SELECT * FROM connections WHERE revoked=0 ORDER BY created_at, token_id").fetchall()
    return [agent_for(con, r, now) for r in rows]


def bump_access_version(con: sqlite3.Connection, token_id: str) -> int:
    """Every change to what a connection holds bumps its access_version."""
    con.execute("UPDATE connections SET access_version=access_version+1 WHERE token_id=?", (token_id,))
    return con.execute("SELECT access_version FROM connections WHERE token_id=?", (token_id,)).fetchone()[0]

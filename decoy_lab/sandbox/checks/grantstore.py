"""Grants in the store: a connection's live and ended policies, and the refusals built from them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from decoy_lab.sandbox.checks.grants import PERMISSIONS, RequestError, Row, covers, parse_row
from decoy_lab.sandbox.checks.selectors import MemoryAccess, memory_access_from_rows
from decoy_lab.sandbox.core import HTTPProblem

# ── live grants ────────────────────────────────────────────────────────────────────────────


def live_policies(con: sqlite3.Connection, token_id: str, now: float) -> list[sqlite3.Row]:
    """Approved, unrevoked, unexpired policies of one connection, oldest first."""
    return list(
        con.execute(
            "SELECT * FROM policies WHERE token_id=? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at>?)"
            " ORDER BY approved_at, id",
            (token_id, now),
        )
    )


def rows_of(policies: Iterable[sqlite3.Row]) -> list[Row]:
    return [Row.from_json(r) for p in policies for r in json.loads(p["rows"])]


def live_rows(con: sqlite3.Connection, token_id: str, now: float) -> list[Row]:
    return rows_of(live_policies(con, token_id, now))


def memory_access(con: sqlite3.Connection, token_id: str, now: float) -> MemoryAccess:
    """What a connection may do with memories now, from its live, unexpired grants."""
    return memory_access_from_rows(live_rows(con, token_id, now))


def connection_ends_at(con: sqlite3.Connection, token_id: str, now: float) -> float | None:
    """The connection's one end date: None when anything live has none (or nothing is live)."""
    live = live_policies(con, token_id, now)
    if not live or any(p["expires_at"] is None for p in live):
        return None
    return max(p["expires_at"] for p in live)


def end_connection_at(con: sqlite3.Connection, token_id: str, ends: float, now: float) -> None:
    """Give every live grant of the connection the one end date `ends` (a connection has one)."""
    con.execute(
        "UPDATE policies SET expires_at=? WHERE token_id=? AND revoked_at IS NULL"
        " AND (expires_at IS NULL OR expires_at>?)",
        (ends, token_id, now),
    )


def ended_rows(con: sqlite3.Connection, token_id: str, now: float) -> list[Row]:
    """Rows of grants that ended by their end date (not revoked): the GRANT_EXPIRED case."""
    return rows_of(
        con.execute(
            "SELECT * FROM policies WHERE token_id=? AND revoked_at IS NULL AND expires_at IS NOT NULL"
            " AND expires_at<=?",
            (token_id, now),
        )
    )


# ── refusals ───────────────────────────────────────────────────────────────────────────────


def permission_request(
    permission: str, selection: dict[str, Any] | None = None, reason: str | None = None
) -> dict[str, Any]:
    """The body a client sends to grant-request, unchanged, to fix a refusal."""
    body: dict[str, Any] = {"permissions": [permission], **(selection or {})}
    if reason:
        body["reason"] = reason
    parse_row({k: v for k, v in body.items() if k != "reason"})  # never hand out an ask we would refuse
    return body


def insufficient(
    permission: str,
    selection: dict[str, Any] | None = None,
    *,
    code: str = "INSUFFICIENT_GRANT",
    message: str | None = None,
    reason: str | None = None,
    **extra: Any,
) -> HTTPProblem:
    """The 403 refusal body: `required_permission` and a `permission_request` to send unchanged
    (`extra`: further members, such as a SCOPE_MISSING's `required_scope`)."""
    headline = PERMISSIONS[permission][2]
    msg = message or (
        f'This needs the "{headline}" permission ({permission})'
        + (f" on {json.dumps(selection, sort_keys=True)}" if selection else "")
        + ". Send permission_request to POST /api/agent/grant-request, unchanged."
    )
    return HTTPProblem(
        403,
        code,
        msg,
        required_permission=permission,
        permission_request=permission_request(permission, selection, reason),
        recovery="request_access",
        request_endpoint="/api/agent/grant-request",
        can_request=True,
        **extra,
    )


def refusal(
    con: sqlite3.Connection,
    token_id: str,
    now: float,
    permission: str,
    selection: dict[str, Any] | None = None,
    *,
    message: str | None = None,
) -> HTTPProblem:
    """`insufficient`, but `GRANT_EXPIRED` when a grant that ended would have allowed it."""
    try:
        asked = parse_row({"permissions": [permission], **(selection or {})})
    except RequestError:
        asked = None
    expired = (
        asked is not None
        and covers(ended_rows(con, token_id, now), asked)
        and not covers(live_rows(con, token_id, now), asked)
    )
    if expired:
        return insufficient(
            permission,
            selection,
            code="GRANT_EXPIRED",
            message=message or "The grant for this ended. Send permission_request to ask again.",
        )
    return insufficient(permission, selection, message=message)

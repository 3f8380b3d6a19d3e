"""What a `Connection` holds and how it asks for more: `/policies` read into `Access` (named by
the topics read so far), and grant requests on this same connection (rules/access.py holds the
rules of both; this joins them to the connection)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from decoy_lab.errors import GrantAlreadyRequested, MemoryModelError
from decoy_lab.rules.access import ASKED, Access, GrantRequest, read_policies
from decoy_lab.rules.pairing import selection_row
from decoy_lab.transport import routes
from decoy_lab.transport.api import expect_object

Connection = Any  # client/connection.py imports this module, never the reverse


def access(conn: Connection, refresh: bool) -> Access:
    if conn._access is not None and not refresh:
        return conn._access
    acc = Access(read_policies(conn.session.get(routes.POLICIES)), topic_names=topic_names(conn))
    conn._access = acc
    t = conn.tokens
    if t is not None and acc.version is not None and acc.version != t.access_version:
        t.access_version = acc.version
        conn.save_profile()
    return acc


def topic_names(conn: Connection) -> dict[str, str]:
    """`topic:<id>` -> name for every topic read so far (copies included); no extra request."""
    s = conn.session
    topics = [*(s.vault.topic_list if s.vault is not None else []), *s.made_topics]
    names: dict[str, str] = {}
    for t in topics:
        for tid in [t.id, *getattr(t, "ids", [])]:
            tid = str(tid)
            names.setdefault(tid if tid.startswith("topic:") else f"topic:{tid}", t.name)
    return names


def send_grant_request(conn: Connection, body: Mapping) -> GrantRequest:
    body = dict(body)

    def send() -> dict:
        return expect_object(
            conn._api.request("POST", routes.GRANT_REQUEST, json=body), "POST /api/agent/grant-request", **ASKED
        )

    try:  # REVIEW_BUSY is sent again (bounded, with backoff) like an unknown outcome
        ans = conn.session.retry.run(send)
    except GrantAlreadyRequested as exc:  # also what a resend after a lost answer gets
        return GrantRequest(
            conn.session, exc.request_id, "pending", bodies=[body], raw=exc.body,
            message="this exact ask is already open; waiting on it", on_done=conn._reread_access,
        )  # fmt: skip
    return _asked(conn, ans, body)


def _asked(conn: Connection, ans: dict, body: dict) -> GrantRequest:
    """The request the server opened (or joined) for `body`."""
    return GrantRequest(
        conn.session,
        ans.get("request_id"),
        ans.get("status", "pending"),
        permissions=list(ans.get("permissions") or body.get("permissions") or []),
        bodies=[body],
        renewal=bool(ans.get("renewal")),
        combined=bool(ans.get("combined")),
        ends_at=ans.get("ends_at"),
        message=ans.get("message"),
        raw=ans,
        on_done=conn._reread_access,
    )


def reread_access(conn: Connection) -> None:
    conn._access = None
    conn.access()


def request_access(
    conn: Connection,
    permissions: Sequence[str] | str,
    *,
    about: Sequence[str] | str | None,
    reason: str,
    **selection: Any,
) -> GrantRequest:
    """`Connection.request_access`: one ask per body the selection makes, joined into one request."""
    if about is not None:
        about = [about] if isinstance(about, str) else list(about)
        about = [topic_id(conn, a) for a in about]
    result: GrantRequest | None = None
    for body in selection_row(permissions, about=about, **selection):
        body["reason"] = reason
        got = conn.send_grant_request(body)
        if result is None or got.status == "pending":
            if result is not None:
                got.permissions = list(dict.fromkeys([*result.permissions, *got.permissions]))
                got.bodies = [*result.bodies, *got.bodies]
            result = got
    assert result is not None
    return result


def topic_id(conn: Connection, value: str) -> str:
    if value.startswith("topic:"):
        return value
    try:
        uuid.UUID(value)
        return f"topic:{value}"
    except ValueError:
        pass
    found = conn.session.find_topic(value)
    if found is None:
        raise MemoryModelError(f"no topic named {value!r} is visible to this connection; pass its topic:<id>")
    return found.id

"""A Connection paired with an in-process sandbox for a test: auto-approved, a fresh key, no
saved profile and no retry back-off (no tests here)."""

from __future__ import annotations

import uuid
from typing import Any

from decoy_lab.client.connection import Connection
from decoy_lab.wire.crypto import AgentKey


def paired(sb: Any, permissions: list[Any], *, name: str) -> Connection:
    """A connection to sandbox `sb` holding `permissions` (names or permission rows)."""
    return Connection.pair(
        sb.url,
        name=name,
        permissions=permissions,
        profile=None,
        agent_key=AgentKey.generate(),
        client_id=f"test-{uuid.uuid4().hex[:8]}",
        on_link=lambda *a: None,
        backoff=0,
    )


def posted_bodies(conn: Connection, path_end: str) -> list[Any]:
    """A spy on the connection's requests from now on: the JSON bodies it POSTs to paths ending in
    `path_end`, in the order sent (every request still goes to the server)."""
    bodies: list[Any] = []
    api = conn.session.api
    real = api.request

    def request(method: str, path: str, **kw: Any) -> Any:
        if method == "POST" and path.endswith(path_end):
            bodies.append(kw.get("json"))
        return real(method, path, **kw)

    api.request = request
    return bodies

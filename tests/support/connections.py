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

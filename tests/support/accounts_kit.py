"""Accounts in a vault, over real HTTP: a connection paired with the sandbox, and a relation row
from a topic to `account:<id>` sealed as the spec lays it out (no tests here).

The memory contract: "An account end in a relation carries endpoint `account:<id>` with an empty
name; resolve its name from the authorized account list."
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from decoy_lab import memory
from decoy_lab.client.connection import Connection
from decoy_lab.protocol.writes import MEMORIES
from decoy_lab.wire.crypto import random_key

from support.connections import paired
from support.sandbox_kit import sealed_row


def connect(sb, *permissions: Any, name: str = "Accounts") -> Connection:
    return paired(sb, list(permissions), name=name)


def link_to_account(conn: Connection, topic_name: str, account_id: str, relation: str = "pays with") -> str:
    """POST one relation row from the topic `topic_name` to `account:<account_id>`; its id."""
    found = conn.session.find_topic(topic_name)
    assert found is not None, f"no topic {topic_name!r}"
    topic = {"id": found.id, "name": found.name}
    grantees = conn.session.get("/api/agent/context/memory-grantees")
    keys = memory.RecipientKeys.from_response(grantees, conn.session.agent_key.public_key_b64)
    row_id = str(uuid.uuid4())
    plain = {
        "v": 2,
        "row_id": row_id,
        "relation": {"from": topic["name"], "to": "", "relationType": relation},
        "endpoints": [topic["id"], f"account:{account_id}"],
        "about": [],
    }
    row = sealed_row(keys, plain, row_id=row_id, key_bytes=random_key())
    answer = conn.session.api.request("POST", MEMORIES, json={"rows": [row]})
    assert row_id in answer.get("created", []), answer
    return row_id


def vault_with_an_account(sb, conn: Connection, account_id: str) -> tuple[Any, str, str]:
    """A topic "Streaming", a link from it to the account and a memory about the account, shared
    by the owner's phone; (the loaded vault, the link's id, the memory's id)."""
    conn.save("Watches films on Sundays.", topic="Streaming")
    link = link_to_account(conn, "Streaming", account_id)
    mid = conn.save("Shares the family plan.", account=account_id)
    sb.owner.share()
    return conn.load(), link, mid


def personal_alias(sb, name: str) -> dict:
    """A Personal Alias made on the sandbox owner's surface (an address no account owns): its
    served form (`id`, `email`, …)."""
    r = httpx.post(f"{sb.url}/_sandbox/aliases", json={"name": name})
    assert r.status_code == 201, r.text
    return r.json()

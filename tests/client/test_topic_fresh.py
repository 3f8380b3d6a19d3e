"""Find-or-create against what the server holds now: a topic another connection made since this
one's last load is reused, never written twice (sandbox over real HTTP)."""

from __future__ import annotations

import uuid

from decoy_lab.client.connection import Connection
from decoy_lab.wire.crypto import AgentKey

PERMS = ["memory.read", "memory.save", "memory.edit"]


def connect(sb, name: str) -> Connection:
    return Connection.pair(
        sb.url,
        name=name,
        profile=None,
        agent_key=AgentKey.generate(),
        permissions=PERMS,
        on_link=lambda *a: None,
        client_id=f"fresh-{uuid.uuid4().hex[:8]}",
    )


def topics(sb, name: str) -> list[dict]:
    return [r for r in sb.owner.app_view() if r["kind"] == "topic" and (r.get("name") or "").lower() == name]


def test_two_connections_racing_to_create_one_topic_write_it_once(sb):
    """ "Reuse before creating … Compare names normalized … An exact match reuses the oldest reachable
    topic": the second writer's last load predates the first writer's topic, so it reads again first."""
    first, second = connect(sb, "First"), connect(sb, "Second")
    second.load()  # its view of the vault: no topic "golf" yet
    a = first.save("Plays on Saturdays.", topic="Golf")
    sb.owner.share()
    b = second.save("Owns a 7 iron.", topic="  golf ")
    (only,) = topics(sb, "golf")
    view = {r["id"]: r for r in sb.owner.app_view()}
    assert view[a]["topic"]["id"] == view[b]["topic"]["id"] == only["topic_id"]
    c = second.edit(b, topic="GOLF")  # an edit resolves the name the same way
    assert c and len(topics(sb, "golf")) == 1
    first.close()
    second.close()

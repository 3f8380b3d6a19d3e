"""A load keeps each served row as the JSON text it came in, not a dict (a dict costs ~1.6× the
text: the figure bench/large.py measures), and gives the row back exactly as served — the
unseal step-through and an edit read it from there. Against the sandbox over real HTTP."""

from __future__ import annotations

import uuid

import httpx
import orjson

from decoy_lab.client.connection import Connection
from decoy_lab.vault.served import ServedRows
from decoy_lab.wire.crypto import AgentKey

MEMORIES = "/api/agent/context/memories"


def connect(sb) -> Connection:
    return Connection.pair(
        sb.url,
        name="Served rows",
        permissions=["memory.read", "memory.save", "memory.edit"],
        profile=None,
        agent_key=AgentKey.generate(),
        client_id=f"served-{uuid.uuid4().hex[:8]}",
        on_link=lambda *a: None,
        backoff=0,
    )


def raw_answer(conn: Connection) -> list[dict]:
    token = conn.tokens.access_token.reveal()
    got = httpx.get(conn.base_url + MEMORIES, headers={"Authorization": f"Bearer {token}"})
    return got.json()["memories"]


def test_rows_are_kept_as_their_served_text_and_come_back_exactly_as_served(sb):
    conn = connect(sb)
    ids = [conn.save(f"Kept as text {i}.", topic="Served rows", categories=["misc"]) for i in range(3)]
    vault = conn.load()
    served = vault.served
    assert isinstance(served, ServedRows) and len(served) == len(vault.decoded_rows)
    assert all(isinstance(served.entry(i), bytes) for i in range(len(served))), "no dict kept per row: blobs as bytes"
    assert [served.text(i) for i in range(len(served))] == [orjson.dumps(r).decode() for r in raw_answer(conn)]
    as_served = raw_answer(conn)
    assert list(served) == as_served, "every row, every field, as the server sends it"
    for mid in ids:
        row = vault.served_row(mid)
        assert row == next(r for r in as_served if r["id"] == mid)
        assert orjson.dumps(row) in orjson.dumps(as_served), "the same JSON text"
    trace = conn.unseal(ids[0])
    assert trace.ok and trace.steps[0].inputs["id"] == ids[0]
    conn.edit(ids[1], text="Edited from the kept text.")
    assert conn.load().memory(ids[1]).text == "Edited from the kept text."
    conn.close()


def test_a_reload_of_unchanged_rows_takes_them_by_their_text_unread(sb):
    """A row served again byte for byte as before is the same row: compared as text, not opened."""
    conn = connect(sb)
    conn.save("Unchanged between loads.")
    first = conn.load()
    again = conn.load()
    assert again.read == 0 and len(again) == len(first)
    assert [again.served.entry(i) for i in range(len(again))] == [first.served.entry(i) for i in range(len(first))]
    conn.close()

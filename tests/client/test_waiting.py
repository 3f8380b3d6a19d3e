"""What a load says while keys are on their way: after a reconnect with a new key its own rows are
`preparing`, after 7 days `failed` (stopped_asking); a category grant is `preparing_unknown` then
`failed_unknown`. Explained in words — never "missing", never "pair again" — and kept in `.rows`.
Also: a reload of unchanged rows does no RSA work."""

from __future__ import annotations

import uuid

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import MemoryModelError
from decoy_lab.sandbox.phone import schedule
from decoy_lab.wire.crypto import AgentKey

DAY = 86400


@pytest.fixture(scope="module")
def sb(clocked_sb):
    schedule.configure(clocked_sb.state, auto_share_after=None)  # the phone answers only when asked
    return clocked_sb


def connect(sb, key, permissions=None, client_id=None) -> Connection:
    return Connection.pair(
        sb.url,
        name="Waiting test",
        permissions=permissions,
        profile=None,
        agent_key=key,
        client_id=client_id or f"wait-{uuid.uuid4().hex[:8]}",
        on_link=lambda *a: None,
    )


def honest(notes: list[str]) -> None:
    text = " ".join(notes).lower()
    assert "missing" not in text and "pair again" not in text and "lost" not in text.replace("not lost", "")


def test_a_reconnect_with_a_new_key_lists_its_rows_as_preparing_then_failed(sb, clock):
    """ "With a new key … reports them as `preparing` … after that they are reported as `failed` with
    `recovery: "stopped_asking"`"."""
    cid = f"reconnect-{uuid.uuid4().hex[:6]}"
    first = connect(sb, AgentKey.generate(), client_id=cid)
    ids = [first.save(f"Fact {i}", topic="Kitchen remodel", categories=["misc"]) for i in range(3)]
    second = connect(sb, AgentKey.generate(), client_id=cid)
    v = second.load()
    waiting = set(v.answer.get("preparing") or [])
    assert set(ids) <= waiting and len(v.memories) == 0
    assert "on their way" in v.summary
    notes = v.notes
    assert any("waiting for the owner's phone" in n and "Read again in" in n for n in notes)
    honest(notes)
    rows = v.rows.set_index("id")
    assert (rows.loc[ids, "status"] == "preparing").all() and rows.loc[ids[0], "reason"].startswith("saved")
    clock.advance(8 * DAY)
    second.load()  # the read after the 7 days asks the phone once more
    v = second.load()
    assert set(ids) <= set(v.answer.get("failed") or [])
    assert any("stopped asking" in n for n in v.notes) and "no longer asked for" in v.summary
    honest(v.notes)
    assert (v.rows.set_index("id").loc[ids, "status"] == "failed").all()
    sb.owner.share()
    v = second.load()
    assert {m for m in ids if v.memory(m) is not None} == set(ids), "readable as soon as the phone shares"


def test_a_category_grant_is_preparing_unknown_then_failed_unknown(sb, clock):
    reader = connect(sb, AgentKey.generate(), [{"permissions": ["memory.read"], "datatypes": ["health"]}])
    v = reader.load()
    assert v.answer.get("preparing_unknown") is True
    assert any("says nothing about whether matching memories exist" in n for n in v.notes)
    honest(v.notes)
    clock.advance(2 * DAY)
    v = reader.load()
    assert v.answer.get("failed_unknown") is True
    assert any("cannot tell whether such memories exist" in n for n in v.notes)
    honest(v.notes)


def test_a_reload_of_unchanged_rows_does_no_rsa_work(sb, monkeypatch):
    """ "Unwrapped keys are kept in memory by kid for the session … so a reload of unchanged rows costs
    no RSA work."""
    conn = connect(sb, AgentKey.generate(), ["memory.read", "memory.save"])
    for i in range(4):
        conn.save(f"Cached {i}", topic="Cache topic" if i % 2 else None)
    conn.session.key_cache.clear()  # each save's read-back (verify.py) already kept its key
    calls = []
    real = AgentKey.decrypt
    monkeypatch.setattr(AgentKey, "decrypt", lambda self, data: calls.append(1) or real(self, data))
    first = conn.load()
    cold = len(calls)
    assert cold >= 4
    again = conn.load()
    assert len(calls) == cold and again.summary == first.summary
    assert "KeyCache" in repr(conn.session.key_cache) and all(len(k) == 16 for k in conn.session.key_cache)


def test_no_second_topic_while_the_first_may_still_be_on_its_way(sb):
    """ "Keep memory and topic IDs, and do not save a memory or recreate a topic again because it is
    not listed. A new memory for a topic you cannot see yet waits for that read, then is saved.\""""
    cid = f"topic-wait-{uuid.uuid4().hex[:6]}"
    first = connect(sb, AgentKey.generate(), client_id=cid)
    first.save("Tiles chosen.", topic="Bathroom remodel")
    second = connect(sb, AgentKey.generate(), client_id=cid)  # a new key: its rows are preparing
    second.load()
    with pytest.raises(MemoryModelError, match="on their way"):
        second.save("Grout colour: grey.", topic="bathroom REMODEL")
    sb.owner.share()
    mid = second.save("Grout colour: grey.", topic="bathroom REMODEL")
    topics = second.load().topics
    assert (topics["name"] == "Bathroom remodel").sum() == 1
    assert second.vault.memory(mid).topic["name"] == "Bathroom remodel"

"""vault.py offline: reading a served answer into a Vault, duplicates, reuse on reload (reuse.py),
the waiting states in words."""

from __future__ import annotations

import copy

import pytest

from decoy_lab import memory
from decoy_lab.vault.read import build_vault, read_vault
from decoy_lab.vault.reuse import Reuse
from decoy_lab.vault.waiting import explain_waiting
from decoy_lab.wire.crypto import AgentKey


@pytest.fixture(scope="module")
def rows(agent):
    owner = AgentKey.generate()
    keys = memory.RecipientKeys(owner.public_key_b64, agent.public_key_b64)
    made = memory.new_topic_rows(keys, "Garden", type="hobby")
    return [
        memory.new_memory_row(keys, "Tomatoes on the south wall.", topic=made.topic, categories=["hobbies"]),
        memory.new_memory_row(keys, "Prefers tea."),
        *made.rows,
    ]


def served(row: dict, rev: int = 1) -> dict:
    """A posted row as the server would serve it back to its author."""
    out = {k: v for k, v in row.items() if k in ("id", "kid", "ciphertext")}
    return {
        **out,
        "wrapped_key": row["self_wrap"],
        "rev": rev,
        "via": ["self"],
        "mine": True,
        "author_kind": "agent",
        "created_at": "2026-10-01T10:00:00Z",
        "updated_at": "2026-10-01T10:00:00Z",
    }


def test_a_served_answer_becomes_memories_topics_and_links(agent, rows):
    v = build_vault({"memories": [served(r) for r in rows]}, agent, key_cache=memory.KeyCache())
    assert v.summary == "2 memories, 1 topic, 1 link, 0 unreadable"
    m = v.memories.set_index("text").loc["Tomatoes on the south wall."]
    assert m["topic"] == "Garden" and m["categories"] == ["hobbies"]
    assert v.topics.iloc[0]["memories"] == 1 and v.links.iloc[0]["to"] == "Garden"


def test_an_id_served_twice_is_read_once_and_the_copies_reported(agent, rows):
    first, other = served(rows[0]), served(rows[1])
    answer = {"memories": [first, other, copy.deepcopy(first), {**copy.deepcopy(other), "id": first["id"]}]}
    v = build_vault(answer, agent, key_cache=memory.KeyCache())
    mem = v.memories
    assert sorted(mem["text"]) == ["Prefers tea.", "Tomatoes on the south wall."]
    bad = v.rows[v.rows["status"] == "unreadable"]
    assert list(bad["id"]) == [first["id"], first["id"]]
    assert bad["reason"].str.contains("served more than once").all()
    assert v.memory(first["id"]).text == "Tomatoes on the south wall."


def test_a_reload_reuses_unchanged_rows_and_reads_changed_ones(agent, rows):
    cache = memory.KeyCache()
    v1 = build_vault({"memories": [served(r) for r in rows]}, agent, key_cache=cache)
    assert v1.read == len(rows)
    changed = [served(r) for r in rows]
    changed[1]["rev"] = 2
    v2 = build_vault({"memories": changed}, agent, key_cache=cache, previous=v1)
    assert v2.read == 1 and v2.summary == v1.summary


def test_the_cache_is_waited_for_once_and_before_any_row_is_opened(agent, rows, monkeypatch):
    """A load hands `Reuse` the cache's snapshot still opening (it is opened while the server is
    asked): it is waited for at the first row, so its keys are in the key cache before any row is
    opened, and only once however many rows come."""
    order: list[str] = []
    real = AgentKey.decrypt
    monkeypatch.setattr(AgentKey, "decrypt", lambda self, data: order.append("opened") or real(self, data))

    def snapshot() -> None:
        order.append("cache")

    reuse = Reuse(None, snapshot)
    vault = read_vault([served(r) for r in rows], agent, rest=dict, key_cache=memory.KeyCache(), reuse=reuse)
    assert vault.read == len(rows) and order[0] == "cache" and order.count("cache") == 1


def test_a_reuse_takes_from_the_previous_vault_only_rows_served_exactly_as_then(agent, rows):
    """One owner for what an earlier load read: a row served as then is taken (not opened); the
    same id with another rev, or one field changed, is opened again."""
    v1 = build_vault({"memories": [served(r) for r in rows]}, agent, key_cache=memory.KeyCache())
    reuse = Reuse(v1)
    first = served(rows[0])
    entry, before = reuse.take(first, None)
    assert before is not None and before[1] == v1.results[0] and entry == first
    assert reuse.take(served(rows[0], rev=2), None)[1] is None
    assert reuse.take({**first, "mine": False}, None)[1] is None


def test_waiting_states_are_explained_in_words_never_missing():
    """`read_again_later`: "do not report the listed items as missing or pair again"."""
    notes = explain_waiting(
        {
            "preparing": ["a", "b"],
            "preparing_others": 3,
            "preparing_unknown": True,
            "retry_after_seconds": 60,
            "recovery": "read_again_later",
        }
    )
    assert len(notes) == 3 and "Read again in 60 s" in notes[0]
    notes += explain_waiting(
        {"failed": ["a"], "failed_others": 2, "failed_unknown": True, "recovery": "stopped_asking"}
    )
    text = " ".join(notes).lower()
    assert "stopped asking" in text and "missing" not in text and "pair again" not in text
    assert explain_waiting({}) == []


def test_load_reports_progress_per_row_read():
    """`load(progress=…)` is called once per row read, with the number of rows received so far
    (rows are read while the answer arrives): it ends at every row served."""
    import threading

    from decoy_lab import Connection, Sandbox

    calls: list = []
    lock = threading.Lock()

    def progress(n, total):
        with lock:
            calls.append((n, total))

    with Sandbox.start() as sb:
        conn = Connection.pair(sb.url, name="progress", on_link=lambda *a: None, profile=None)
        sb.owner.share()
        vault = conn.load(progress=progress)
        assert calls and all(n == 1 and 0 < total <= len(vault.served) for n, total in calls)
        assert len(calls) == max(total for _, total in calls) == len(vault.served)
        calls.clear()
        conn.load(progress=progress)
        assert calls == []  # a reload of unchanged rows reads nothing
        conn.close()


def test_editing_someone_elses_legacy_space_row_is_refused_with_why():
    """Legacy space rows appear with the memories (source "space"); PUT rows edits "only rows this agent
    wrote": another connection's row is refused, and the error says why."""
    import pytest

    from decoy_lab import Connection, Sandbox
    from decoy_lab.errors import NotFound

    with Sandbox.start() as sb:
        conn = Connection.pair(sb.url, name="legacy", on_link=lambda *a: None, profile=None)
        sb.owner.share()
        memories = conn.load().memories
        legacy = memories[memories["source"] == "space"]["id"].iloc[0]
        with pytest.raises(NotFound, match="legacy space row"):
            conn.edit(legacy, text="changed")
        conn.close()

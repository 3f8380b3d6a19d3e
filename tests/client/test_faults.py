"""Reliability under injected faults, over real HTTP: answers dropped after the commit and 5xx
before it, on well over 100 writes. Checked through the owner's app-view: zero duplicates, zero
lost writes, no orphan topics, every row readable."""

from __future__ import annotations

import collections
import uuid

import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.wire.crypto import AgentKey

SAVES = 110
TOPICS = [f"Project {c}" for c in "ABCDEFG"]


@pytest.fixture(scope="module")
def run(sb):
    """Pair without faults, then write under them; returns what the client believes it did."""
    conn = Connection.pair(
        sb.url,
        name="Faulty network",
        profile=None,
        agent_key=AgentKey.generate(),
        permissions=["memory.read", "memory.edit", "memory.delete", "memory.save"],
        client_id=f"faults-{uuid.uuid4().hex[:6]}",
        on_link=lambda *a: None,
        retries=15,
        backoff=0,
    )
    sb.state.faults.configure({"drop_after_commit": 0.2, "error_5xx": 0.2, "seed": 20261130})
    saved: dict[str, str] = {}
    for i in range(SAVES):
        topic = TOPICS[i % len(TOPICS)] if i % 2 == 0 else None
        text = f"Fact {i}: {uuid.uuid4().hex[:6]}"
        saved[text] = conn.save(text, topic=topic, topic_type="project" if topic else "", categories=["misc"])
    conn.load()
    edited = {}
    for text, mid in list(saved.items())[:20]:
        conn.edit(mid, text=text + " (edited)")
        edited[mid] = text + " (edited)"
    deleted = conn.delete(list(list(saved.values())[20:30]))
    counts = dict(sb.state.faults.counts)
    sb.state.faults.configure({})
    return {"conn": conn, "saved": saved, "edited": edited, "deleted": deleted, "counts": counts}


def test_faults_really_fired(run):
    assert run["counts"]["drop_after_commit"] >= 20 and run["counts"]["error_5xx"] >= 20, run["counts"]
    assert run["conn"].resends >= 40


def test_no_write_is_lost_or_duplicated(sb, run):
    """ "If the outcome is unknown … POST the same sealed rows again: the server stores each id once"."""
    rows = [r for r in sb.owner.app_view() if r["kind"] == "memory"]
    texts = collections.Counter(r["text"] for r in rows)
    assert max(texts.values()) == 1, "no duplicate memory"
    deleted = set(run["deleted"].deleted)
    assert deleted == set(list(run["saved"].values())[20:30]) and not run["deleted"].refused
    want = {run["edited"].get(mid, text) for text, mid in run["saved"].items() if mid not in deleted}
    assert set(texts) == want, "every saved memory landed once, every edit applied, every delete done"
    by_id = {r["id"]: r for r in rows}
    assert set(by_id) == {mid for mid in run["saved"].values() if mid not in deleted}


def test_no_orphan_or_duplicate_topics_and_every_row_opens(sb, run):
    view = sb.owner.app_view()
    assert all(r["readable"] for r in view)
    topics = [r for r in view if r["kind"] == "topic"]
    assert sorted(t["name"] for t in topics) == sorted(TOPICS), "one topic per name, none made twice"
    assert not [t for t in topics if t["problems"]], "each topic is linked and has a memory filed under it"
    links = [r for r in view if r["kind"] == "link"]
    assert len(links) == len(TOPICS)


def test_the_client_reads_back_what_the_owner_sees(sb, run):
    v = run["conn"].load()
    assert v.counts()["unreadable"] == 0
    assert len(v.memories) == SAVES - 10 and len(v.topics) == len(TOPICS)

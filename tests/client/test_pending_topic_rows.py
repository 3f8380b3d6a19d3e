"""The topic rows a pending write made: removed when the write is finally refused and no memory is
filed under that topic, kept when one is; and pending writes finished before a topic is created.

Against the sandbox over real HTTP, the network scripted by `support.meddler`. A write's topic
rows are sent before its memory; "reuse before creating" — a pending write may hold the topic."""

from __future__ import annotations

import logging
import uuid

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import OutcomeUnknown
from decoy_lab.transport import routes

from support.meddler import Meddler, lost

ALL = ["memory.read", "memory.save", "memory.edit", "memory.delete"]
LOGGER = "decoy_lab.protocol.writes.sending"


@pytest.fixture
def cast(sb):
    meddler = Meddler()
    conn = Connection.pair(
        sb.url,
        name="Pending topic test",
        profile=None,
        permissions=ALL,
        on_link=lambda *a: None,
        client_id=f"pending-topic-{uuid.uuid4().hex[:8]}",
        retries=0,
        backoff=0,
        sleep=lambda s: None,
        transport=meddler,
    )
    yield conn, meddler
    conn.close()


def listed(conn: Connection, name: str) -> list[str]:
    """The ids of the memories filed under the topic `name`, or [] when no such topic is listed."""
    t = conn.load().topics
    rows = t[t["name"] == name]
    return [] if rows.empty else sorted(rows.iloc[0]["memory_ids"])


def entity_served(conn: Connection, name: str) -> bool:
    """Whether the topic's entity row is served (a topic whose rows are deleted is still listed, as
    the name a memory's `about` gives, but with no row to read)."""
    t = conn.load().topics
    rows = t[t["name"] == name]
    return not rows.empty and bool(rows.iloc[0]["readable"])


def has_topic(conn: Connection, name: str) -> bool:
    t = conn.load().topics
    return bool((t["name"] == name).any())


def pending_edit_to_a_new_topic(conn: Connection, meddler: Meddler, name: str) -> str:
    """An edit filing a memory under a new topic whose PUT is lost: the topic rows are on the server,
    the edit is pending. Then another edit of the memory lands, so the pending one can only be refused."""
    mid = conn.save("Rents a kayak in summer.")
    meddler.plan("PUT", routes.MEMORIES, lost)
    with pytest.raises(OutcomeUnknown):
        conn.edit(mid, topic=name)
    assert has_topic(conn, name), "the topic rows were sent before the PUT"
    conn.edit(mid, text="Rents a canoe in summer.")
    return mid


def test_a_pending_edit_refused_at_last_removes_the_topic_rows_it_made(cast):
    conn, meddler = cast
    pending_edit_to_a_new_topic(conn, meddler, "Kayak trip")
    [done] = conn.resend()
    assert done["outcome"].startswith("not applied: ")
    assert conn.pending == []
    assert not has_topic(conn, "Kayak trip"), "no orphan topic once the write is settled"


def test_the_topic_rows_stay_when_a_memory_is_filed_under_that_topic_now(cast):
    conn, meddler = cast
    pending_edit_to_a_new_topic(conn, meddler, "Canoe trip")
    other = conn.save("Bring a dry bag.", topic="Canoe trip")  # reuses the listed topic
    [done] = conn.resend()
    assert done["outcome"].startswith("not applied: ")
    assert listed(conn, "Canoe trip") == [other]
    assert entity_served(conn, "Canoe trip"), "the topic's own rows were kept, not only named by the memory"


def test_the_topic_rows_stay_when_nothing_can_be_read_back_and_the_log_says_why(cast, caplog):
    conn, meddler = cast
    pending_edit_to_a_new_topic(conn, meddler, "Rafting trip")

    def conflict_then_the_read_back_is_lost(request: httpx.Request, inner: httpx.BaseTransport) -> httpx.Response:
        meddler.plan("GET", routes.MEMORIES, lambda r, i: i.handle_request(r), lost)
        return inner.handle_request(request)  # the server: REV_CONFLICT

    meddler.plan("PUT", routes.MEMORIES, conflict_then_the_read_back_is_lost)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        [done] = conn.resend()
    assert done["outcome"].startswith("not applied: ")
    said = [m for m in caplog.messages if m.startswith("could not read back before removing topic rows ['")]
    assert len(said) == 1 and "GET /api/agent/context/memories" in said[0]
    assert has_topic(conn, "Rafting trip")


def test_pending_writes_are_finished_before_a_topic_is_created(sb, cast, caplog):
    """A pending save may hold the very topic about to be created: it is sent again first."""
    conn, meddler = cast
    meddler.plan("POST", routes.MEMORIES, lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.save("Swims in the lake.")
    [first] = caught.value.ids
    with caplog.at_level(logging.INFO, logger=LOGGER):
        conn.save("Open water swim in June.", topic="Lake swim")
    assert "pending writes before creating a topic: sending them again first" in caplog.messages
    assert conn.pending == []
    assert any(r["id"] == first for r in sb.owner.app_view())


def test_no_pending_writes_nothing_is_sent_again_before_a_topic(cast, caplog):
    conn, _meddler = cast
    with caplog.at_level(logging.INFO, logger=LOGGER):
        conn.save("Climbs on Tuesdays.", topic="Bouldering")
    assert "pending writes before creating a topic: sending them again first" not in caplog.messages


def test_a_same_name_copy_in_use_does_not_keep_the_unused_copy(sb, cast):
    """Two connections made a topic of one name (neither saw the other's yet): the listing shows
    one topic over both copies. Only a memory filed under THIS write's copy keeps its rows; one
    filed under the other copy does not."""
    conn, meddler = cast
    mid = conn.save("Joined a kayak club.")
    meddler.plan("PUT", routes.MEMORIES, lost)
    with pytest.raises(OutcomeUnknown) as caught:
        conn.edit(mid, topic="Kayak club")
    entity = caught.value.ids[0]  # this write's topic rows come first: the entity, then its relation
    other = Connection.pair(
        sb.url,
        name="Other paddler",
        profile=None,
        permissions=ALL,
        on_link=lambda *a: None,
        client_id=f"pending-topic-other-{uuid.uuid4().hex[:8]}",
        backoff=0,
    )
    try:
        theirs = other.save("Paddles on Sundays.", topic="Kayak club")  # its own copy: it cannot see ours yet
        sb.owner.share()
        conn.edit(mid, text="Left the kayak club.")
        [done] = conn.resend()
        assert done["outcome"].startswith("not applied: ")
        served = {r["id"] for r in sb.owner.app_view()}
        assert entity not in served, "this write's copy, unused, was removed"
        assert listed(conn, "Kayak club") == [theirs]
    finally:
        other.close()

"""What `Connection.edit` refuses before sending, what a refused edit leaves behind, and where an
edit files a memory when it names a topic.

Against the sandbox over real HTTP. "Reuse before creating": a topic name already listed is reused,
a new one is created first — and removed again if the edit is then definitely refused."""

from __future__ import annotations

import logging

import httpx
import pytest

from decoy_lab.client.connection import Connection
from decoy_lab.errors import APIError, MemoryModelError
from decoy_lab.transport import routes

from support.meddler import answer, scripted_pair


@pytest.fixture(scope="module")
def cast(sb):
    conn, meddler = scripted_pair(sb, "Edit refusal test")
    yield conn, meddler
    conn.close()


def owner_rows(sb) -> dict[str, dict]:
    return {r["id"]: r for r in sb.owner.app_view()}


def topics_named(conn: Connection, name: str):
    t = conn.load().topics
    return t[t["name"] == name]


def test_an_edit_of_nothing_is_refused_before_anything_is_sent(cast):
    conn, meddler = cast
    mid = conn.save("Nothing to change.")
    with pytest.raises(MemoryModelError, match=r"^edit needs text=, topic= or categories=$"):
        conn.edit(mid)
    assert meddler.bodies("PUT", routes.MEMORIES) == []


@pytest.mark.parametrize(
    "change, words",
    [
        ({"text": b"Caf\xc3\xa9"}, "the text is bytes: pass it as text (str); nothing was sent"),
        ({"text": b"\xff"}, "the text is bytes that are not UTF-8 (byte 0): decode it to text first; nothing was sent"),
        ({"topic": b"Paris"}, "the topic name is bytes: pass it as text (str); nothing was sent"),
        ({"topic": "Par\udcc3is"}, "the topic name holds a lone surrogate at character 3 (U+DCC3)"),
    ],
)
def test_text_that_is_not_text_is_refused_in_words_before_anything_is_sent(cast, change, words):
    conn, meddler = cast
    mid = conn.save("Likes quiet cafés.")
    puts, posts = len(meddler.bodies("PUT", routes.MEMORIES)), len(meddler.bodies("POST", routes.MEMORIES))
    with pytest.raises(MemoryModelError) as caught:
        conn.edit(mid, **change)
    assert str(caught.value).startswith(words)
    assert len(meddler.bodies("PUT", routes.MEMORIES)) == puts and len(meddler.bodies("POST", routes.MEMORIES)) == posts


def test_an_edit_to_a_listed_topic_files_it_there_and_makes_no_second_topic(cast):
    conn, _meddler = cast
    first = conn.save("Book the night train.", topic="Vienna trip", topic_type="trip")
    mid = conn.save("Bring the rail pass.")
    conn.load()
    conn.edit(mid, topic="vienna   TRIP")
    v = conn.load()
    listed = topics_named(conn, "Vienna trip")
    assert len(listed) == 1
    assert v.memory(mid).topic["id"] == v.memory(first).topic["id"] == listed.iloc[0]["id"]
    assert sorted(listed.iloc[0]["memory_ids"]) == sorted([first, mid])


def test_an_edit_to_a_new_topic_creates_it_with_its_type_and_relation(cast):
    """ "create the entity, its relation …": the type and relation asked are the topic's."""
    conn, _meddler = cast
    mid = conn.save("Ask about the cable car.")
    conn.edit(mid, topic="Lisbon hills", topic_type="place", link="wants to visit")
    v = conn.load()
    listed = topics_named(conn, "Lisbon hills")
    assert len(listed) == 1 and listed.iloc[0]["type"] == "place"
    assert v.memory(mid).topic["id"] == listed.iloc[0]["id"]
    assert (v.links["relation_type"] == "wants to visit").any()


def test_an_edit_to_a_new_topic_with_no_type_leaves_the_type_empty(cast):
    conn, _meddler = cast
    mid = conn.save("Look for a used road bike.")
    conn.edit(mid, topic="Road bike")
    listed = topics_named(conn, "Road bike")
    assert len(listed) == 1 and listed.iloc[0]["type"] in ("", None)


def test_a_definitely_refused_edit_removes_the_topic_it_created(sb, cast, caplog):
    """The topic rows are written first; the PUT is refused (nothing changed): the rows are deleted
    again, no orphan topic is left, and nothing is pending."""
    conn, meddler = cast
    mid = conn.save("Compare two tents.")
    refused = answer(403, {"code": "AUTHOR_ONLY", "message": "a key rotation is for the memory's author only"})
    meddler.plan("PUT", routes.MEMORIES, refused)
    deletes = len(meddler.bodies("POST", routes.MEMORIES_DELETE))
    with pytest.raises(APIError) as caught:
        conn.edit(mid, topic="Camping gear", topic_type="product")
    assert caught.value.code == "AUTHOR_ONLY"
    assert len(meddler.bodies("POST", routes.MEMORIES_DELETE)) == deletes + 1
    names = {r.get("name") for r in owner_rows(sb).values()}
    assert "Camping gear" not in names
    assert len(topics_named(conn, "Camping gear")) == 0
    assert conn.pending == []
    assert conn.load().memory(mid).topic is None, "the memory itself was not changed"


def test_a_refused_edit_whose_topic_rows_cannot_be_removed_says_so_in_the_log(sb, cast, caplog):
    conn, meddler = cast
    mid = conn.save("Compare two stoves.")
    refused = answer(403, {"code": "AUTHOR_ONLY", "message": "a key rotation is for the memory's author only"})
    meddler.plan("PUT", routes.MEMORIES, refused)
    gateway = httpx.Response(200, content=b"<html>gateway</html>", headers={"content-type": "text/html"})
    meddler.plan("POST", routes.MEMORIES_DELETE, lambda request, inner: gateway)
    with caplog.at_level(logging.INFO, logger="decoy_lab.protocol.writes.sending"), pytest.raises(APIError):
        conn.edit(mid, topic="Stoves", topic_type="product")
    said = [m for m in caplog.messages if m.startswith("could not remove topic rows ")]
    assert len(said) == 1 and "['" in said[0]
    assert "POST /api/agent/context/memories/delete: the answer is not JSON" in said[0]


def test_an_edit_is_read_back_and_found_as_asked(cast, caplog):
    """After the PUT the memory is read back and compared with what was asked: nothing to warn of."""
    conn, _meddler = cast
    mid = conn.save("Takes the early ferry.", categories=["travel"])
    with caplog.at_level(logging.WARNING, logger="decoy_lab.protocol.verify"):
        conn.edit(mid, text="Takes the late ferry.", categories=["travel", "misc"])
    assert [r.getMessage() for r in caplog.records if r.name == "decoy_lab.protocol.verify"] == []

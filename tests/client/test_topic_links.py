"""How a save names the topic it files a memory under, and the relation (`link`) a new topic is
created with: the forms taken, and the refusals, in words, before anything is sent.

Against the sandbox over real HTTP. "Otherwise create the entity, its relation and the first
memories in **one** POST"; a relation runs from You, or from a parent topic the connection sees."""

from __future__ import annotations

import uuid

import pytest

from decoy_lab import memory
from decoy_lab.client.connection import Connection
from decoy_lab.errors import MemoryModelError
from decoy_lab.recipes import sealing
from decoy_lab.transport import routes

from support.meddler import scripted_pair


@pytest.fixture(scope="module")
def cast(sb):
    conn, meddler = scripted_pair(sb, "Topic link test")
    conn.save("Plans a walking holiday.", topic="Alps holiday", topic_type="trip")
    yield conn, meddler
    conn.close()


def link_to(conn: Connection, name: str) -> list[tuple[str, str]]:
    """(from, relation_type) of each link that ends at the topic `name`."""
    links = conn.load().links
    return [(f, r) for f, t, r in zip(links["from"], links["to"], links["relation_type"], strict=True) if t == name]


def topics_named(conn: Connection, name: str) -> int:
    t = conn.load().topics
    return int((t["name"] == name).sum())


@pytest.mark.parametrize(
    "name, link",
    [
        ("Hut to hut route", {"relation_type": "part of", "topic": "Alps holiday"}),
        ("Glacier day", {"relationType": "part of", "parent": "alps   HOLIDAY"}),
    ],
)
def test_a_new_topic_is_linked_from_the_parent_topic_named(cast, name, link):
    conn, _meddler = cast
    conn.save("Needs crampons.", topic=name, link=link)
    assert link_to(conn, name) == [("Alps holiday", "part of")]


def test_a_relation_type_alone_links_the_new_topic_from_you(cast):
    conn, _meddler = cast
    conn.save("Reading about the Eiger.", topic="Eiger north face", link="is curious about")
    [(frm, rel)] = link_to(conn, "Eiger north face")
    assert rel == "is curious about" and frm != "Alps holiday"


@pytest.mark.parametrize(
    "kw, words",
    [
        (
            {"topic": "Via ferrata", "link": {"relation_type": "part of", "topic": "Dolomites"}},
            "the parent topic 'Dolomites' is not visible to this connection",
        ),
        (
            {"topic": "Via ferrata", "link": 5},
            "link is a relation type (text) or {'relation_type': …, 'topic': parent}",
        ),
    ],
)
def test_a_topic_or_link_it_cannot_file_under_is_refused_in_words_before_sending(cast, kw, words):
    conn, meddler = cast
    posts = len(meddler.bodies("POST", routes.MEMORIES))
    with pytest.raises(MemoryModelError) as caught:
        conn.save("Wants to try a via ferrata.", **kw)
    assert str(caught.value) == words
    assert len(meddler.bodies("POST", routes.MEMORIES)) == posts, "nothing was sent"
    assert topics_named(conn, "Via ferrata") == 0


def test_a_topic_id_this_connection_cannot_see_is_refused_by_its_id(cast):
    conn, meddler = cast
    tid = f"topic:{uuid.uuid4()}"
    posts = len(meddler.bodies("POST", routes.MEMORIES))
    with pytest.raises(MemoryModelError) as caught:
        conn.save("Filed under a topic it cannot see.", topic=tid)
    assert str(caught.value) == f"{tid} is not a topic this connection can see"
    assert len(meddler.bodies("POST", routes.MEMORIES)) == posts


def test_a_topic_given_as_id_and_name_that_is_not_visible_is_created_by_that_name(cast):
    """{'id', 'name'} of a topic this connection does not see: "reuse before creating" finds none,
    so the topic is created under the name given."""
    conn, _meddler = cast
    mid = conn.save("Sketches on Sundays.", topic={"id": f"topic:{uuid.uuid4()}", "name": "Sketchbook"})
    assert topics_named(conn, "Sketchbook") == 1
    assert conn.load().memory(mid).topic["name"] == "Sketchbook"


def test_a_topic_made_here_is_reused_before_the_next_load_lists_it(cast):
    """A topic this connection just created is found by name before a load lists it: a preview
    files the next memory under it (no second topic), and the access summary names it without error."""
    conn, _meddler = cast
    conn.save("Throws bowls on Saturdays.", topic="Pottery")
    row, trace = conn.seal_preview("Glazes on Sundays.", topic="  pottery ")
    assert "new topic" not in repr(trace)
    assert "Memories:" in str(conn.access())
    key = sealing.unwrap_as_agent(row["self_wrap"], conn.agent_key)
    about = sealing.open_json(key, row["ciphertext"])["about"]
    t = conn.load().topics
    [tid] = t[t["name"] == "Pottery"]["id"]
    assert about == [tid]


def test_an_edit_to_a_new_topic_links_it_from_the_parent_topic_named(cast):
    conn, _meddler = cast
    mid = conn.save("Wants to see the Matterhorn.")
    conn.edit(mid, topic="Zermatt day", link={"relation_type": "part of", "topic": "Alps holiday"})
    assert link_to(conn, "Zermatt day") == [("Alps holiday", "part of")]
    assert conn.load().memory(mid).topic["name"] == "Zermatt day"


def test_a_topic_object_naming_no_visible_topic_is_refused_in_words(cast):
    """A Topic (as a load lists them) that names no topic visible here is neither a name to create
    nor a topic to file under: refused before anything is sent."""
    conn, meddler = cast
    stray = memory.Topic(f"topic:{uuid.uuid4()}", "Apiary notes", "")
    posts = len(meddler.bodies("POST", routes.MEMORIES))
    with pytest.raises(MemoryModelError) as caught:
        conn.save("Wants honey.", topic=stray)
    assert str(caught.value) == "topic is a name, a topic:<id>, or {'id', 'name'}"
    assert len(meddler.bodies("POST", routes.MEMORIES)) == posts

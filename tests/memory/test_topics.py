"""Topics: normalize_topic_name, list_topics (oldest first, same names once), find_topic, same_topic."""

from __future__ import annotations

import uuid

import pytest

from decoy_lab import memory as M
from decoy_lab.errors import MemoryModelError

from support.memory_cast import serve, stamp


@pytest.mark.parametrize(
    "raw,norm",
    [
        ("Golf club headcovers", "golf club headcovers"),
        ("  Golf   club\theadcovers\n", "golf club headcovers"),
        ('"Golf club headcovers"', "golf club headcovers"),
        ("“Golf club headcovers”", "golf club headcovers"),
        ("‘Lisbon trip’", "lisbon trip"),
        ("`Lisbon trip`", "lisbon trip"),
        ("' Lisbon  Trip '", "lisbon trip"),
        ("ＧＯＬＦ", "golf"),  # NFKC folds full-width letters
        ("ﬁshing", "fishing"),  # NFKC folds the ligature
        ("Bob's bakery", "bob's bakery"),
        ("", ""),
    ],
)
def test_normalize_topic_name(raw, norm):
    """Compare names normalized: NFKC, lowercase, whitespace collapsed, trimmed, and surrounding quotes
    (`"`, `'`, `“`, `”`, `‘`, `’`, backtick) stripped."""
    assert M.normalize_topic_name(raw) == norm


def test_normalize_refuses_non_text():
    with pytest.raises(MemoryModelError):
        M.normalize_topic_name(None)


def _store(c, keys):
    """Two same-name topics (older "Golf", younger "golf "), Lisbon, and a topic known only from a memory."""
    golf = M.new_topic_rows(keys, "Golf", type="hobby")
    golf2 = M.new_topic_rows(keys, "golf ", type="hobby")
    lisbon = M.new_topic_rows(keys, "Lisbon trip", type="trip")
    hidden = {"id": f"topic:{uuid.uuid4()}", "name": "Piano lessons"}
    m1 = M.new_memory_row(keys, "Uses a 460cc driver.", topic=golf.topic)
    m2 = M.new_memory_row(keys, "Plays Saturdays.", topic=golf2.topic)
    m3 = M.new_memory_row(keys, "Thursday evening slot.", topic=hidden)
    m4 = M.new_memory_row(keys, "Likes scales.", topic={"id": hidden["id"], "name": "Piano lessons (Thu)"})
    m5 = M.new_memory_row(keys, "Prefers short answers.")
    served = [
        serve(lisbon.rows[0], created=stamp(30)),
        serve(lisbon.rows[1], created=stamp(30)),
        serve(golf2.rows[0], created=stamp(20)),
        serve(golf2.rows[1], created=stamp(20)),
        serve(golf.rows[0], created=stamp(10)),
        serve(golf.rows[1], created=stamp(10)),
        serve(m1, created=stamp(40)),
        serve(m2, created=stamp(41)),
        serve(m3, created=stamp(5)),
        serve(m4, created=stamp(50)),
        serve(m5, created=stamp(51)),
    ]
    return {
        "golf": golf,
        "golf2": golf2,
        "lisbon": lisbon,
        "hidden": hidden,
        "mems": [m1, m2, m3, m4, m5],
        "served": served,
    }


@pytest.fixture(scope="module")
def store(c, keys):
    return _store(c, keys)


def test_list_topics_oldest_first_same_names_once(c, store):
    """`listTopics(memories, privateKey)` returns them oldest first as `[{id, name, type, memories, ids}]`.
    Same-name topics (by normalized name) are listed once, as the app shows them: under the oldest id and
    its name, with `ids` naming every copy and `memories` combining their memories."""
    topics = M.list_topics(store["served"], c.agent)
    assert [t.name for t in topics] == ["Piano lessons (Thu)", "Golf", "Lisbon trip"]
    _piano, golf, lisbon = topics
    assert golf.id == store["golf"].topic_id and golf.type == "hobby"
    assert golf.ids == [store["golf"].topic_id, store["golf2"].topic_id]
    assert sorted(golf.memories) == sorted([store["mems"][0]["id"], store["mems"][1]["id"]])
    assert lisbon.memories == [] and lisbon.type == "trip"


def test_topic_known_only_from_a_memory(c, store):
    """… plus every `topic:<id>` named by a memory you can open (its name from that memory's `entityName`,
    its type unknown)."""
    piano = M.list_topics(store["served"], c.agent)[0]
    assert piano.id == store["hidden"]["id"] and piano.type is None
    assert piano.name == "Piano lessons (Thu)"  # the newest memory's entityName: the topic's current name
    assert sorted(piano.memories) == sorted([store["mems"][2]["id"], store["mems"][3]["id"]])


def test_list_topics_agrees_with_build_topics(c, store):
    read = M.read_rows(store["served"], c.agent)
    assert M.build_topics(read) == M.list_topics(store["served"], c.agent)


def test_list_topics_sees_only_what_it_can_open(c, store):
    """Access works as for any memory; there is no topic-name directory."""
    assert M.list_topics(store["served"], c.travel) == []


def test_find_topic_by_any_spelling_reuses_the_oldest(c, store):
    """An exact normalized match reuses the oldest topic (`findTopic`, which also takes a `topic:<id>`)."""
    topics = M.list_topics(store["served"], c.agent)
    for spelling in ["golf", " GOLF ", "“Golf”", store["golf2"].topic_id, store["golf"].topic_id]:
        assert M.find_topic(topics, spelling).id == store["golf"].topic_id
    assert M.find_topic(topics, "Golf clubs") is None
    assert M.find_topic(topics, f"topic:{uuid.uuid4()}") is None
    assert M.find_topic(topics, "") is None and M.find_topic(topics, None) is None
    assert M.find_topic(topics, store["golf2"].topic).id == store["golf"].topic_id


def test_found_topic_files_a_new_memory(c, keys, store):
    topics = M.list_topics(store["served"], c.agent)
    topic = M.find_topic(topics, "lisbon trip")
    row = M.new_memory_row(keys, "Window seat.", topic=topic)
    m = M.read_memory_row(serve(row), c.agent)
    assert m.topic == {"id": store["lisbon"].topic_id, "name": "Lisbon trip"}


def test_same_topic_treats_copies_as_one(c, store):
    """Same-name topics … Treat them as one when filtering (`sameTopic`)."""
    topics = M.list_topics(store["served"], c.agent)
    golf = M.find_topic(topics, "Golf")
    memories = M.read_memory_rows(store["served"], c.agent, topics)
    on_golf = [m.text for m in memories if M.same_topic(m.topic, golf)]
    assert sorted(on_golf) == ["Plays Saturdays.", "Uses a 460cc driver."]
    assert M.same_topic(store["golf"].topic, store["golf2"].topic)  # by normalized name
    assert M.same_topic({"id": store["golf2"].topic_id, "name": "x"}, golf)  # by id
    assert M.same_topic(store["golf2"].topic_id, golf)
    assert not M.same_topic(store["golf"].topic, store["lisbon"].topic)
    assert not M.same_topic(None, golf) and not M.same_topic(None, None)
    assert not M.same_topic({"id": "topic:a", "name": ""}, {"id": "topic:b", "name": ""})

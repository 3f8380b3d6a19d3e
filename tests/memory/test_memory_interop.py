"""Memory rows across implementations: rows built here open in the independent Node/WebCrypto reading
of the spec (tests/interop/memory.mjs), as the agent and as the owner's app, and rows built there
read here. One Node process for the whole module."""

from __future__ import annotations

import uuid

import pytest

from decoy_lab import memory as M
from decoy_lab.recipes import sealing

from support.memory_cast import cast, open_plaintext, serve
from support.node import requires_node, run_batch

pytestmark = requires_node

ACCOUNT = str(uuid.uuid4())


@pytest.fixture(scope="module")
def c():
    return cast()


@pytest.fixture(scope="module")
def py_rows(c):
    keys = c.keys()
    made = M.new_topic_rows(keys, "Golf club headcovers", type="product", relation_type="is choosing")
    return {
        "user": M.new_memory_row(keys, "Prefers short answers. ✓ naïve", categories=["user_preferences"]),
        "topic": M.new_memory_row(
            keys,
            "Navy or grey, no large logos.",
            topic=made.topic,
            categories=["fashion", "user_preferences"],
            metadata={"source": "chat"},
        ),
        "account": M.new_memory_row(keys, "Uses squash merges.", account=ACCOUNT),
        "entity": made.rows[0],
        "relation": made.rows[1],
    }


@pytest.fixture(scope="module")
def node(c, py_rows):
    """Every Node answer this module needs, from one batch."""
    agent_pem, owner_pem = c.agent.to_pem(), c.owner.to_pem()
    node_keys = {
        "ownerPublicKey": c.owner.public_key_b64,
        "agentPublicKey": c.agent.public_key_b64,
        "grantees": [
            {"token_id": "tok-travel", "public_key": c.travel.public_key_b64, "selectors": {"categories": ["travel"]}}
        ],
    }
    names = list(py_rows)
    cmds = [{"op": "readMemoryRow", "row": serve(py_rows[n]), "privateKeyPem": agent_pem} for n in names]
    cmds += [{"op": "openRowAsOwner", "row": py_rows[n], "privateKeyPem": owner_pem} for n in names]
    cmds += [
        {
            "op": "newMemoryRow",
            "text": "Window seat on long flights.",
            "categories": ["travel", "travel"],
            "keys": node_keys,
        },
        {
            "op": "newTopicRows",
            "name": "Lisbon trip",
            "type": "trip",
            "link": {"relationType": "is planning"},
            "keys": node_keys,
        },
    ]
    answers = run_batch(cmds)
    assert all(a["ok"] for a in answers), [a.get("error") for a in answers if not a["ok"]]
    n = len(names)
    return {
        "read": dict(zip(names, answers[:n])),
        "owner": dict(zip(names, answers[n : 2 * n])),
        "memory": answers[2 * n]["row"],
        "topic": answers[2 * n + 1],
    }


def test_python_memories_read_in_node(py_rows, node):
    read = node["read"]
    assert read["user"]["memory"]["text"] == "Prefers short answers. ✓ naïve"
    assert read["user"]["memory"]["about"] == ["user"] and read["user"]["memory"]["categories"] == ["user_preferences"]
    topic = read["topic"]["memory"]
    assert topic["entityName"] == "Golf club headcovers" and topic["categories"] == ["fashion", "user_preferences"]
    assert topic["metadata"] == {"source": "chat"}
    assert read["account"]["memory"]["account"] == ACCOUNT and read["account"]["memory"]["entityName"] is None
    assert read["entity"]["memory"] is None and read["relation"]["memory"] is None  # graph rows


def test_python_rows_open_as_the_owner_in_node(c, py_rows, node):
    """owner_wrap … whose plaintext is the ASCII base64 text (44 characters) of the key."""
    for name, row in py_rows.items():
        assert node["owner"][name]["plaintext"] == open_plaintext(row, c.agent), name


def test_node_memory_reads_here(c, node):
    row = node["memory"]
    m = M.read_memory_row(serve(row), c.agent)
    assert (m.text, m.about, m.entity_name, m.categories) == (
        "Window seat on long flights.",
        "user",
        "default_user",
        ["travel"],
    )
    assert sealing.unwrap_as_owner(row["owner_wrap"], c.owner) == sealing.unwrap_as_agent(row["self_wrap"], c.agent)
    g = M.read_memory_row(serve(row, to="tok-travel", mine=False), c.travel)
    assert g.text == m.text and g.via == ["category:travel"]


def test_node_topic_rows_read_here(c, node):
    entity, relation = (M.read_row(serve(r), c.agent) for r in node["topic"]["rows"])
    assert isinstance(entity, M.TopicEntity) and (entity.name, entity.type) == ("Lisbon trip", "trip")
    assert isinstance(relation, M.Link)
    assert (relation.from_, relation.to, relation.relation_type) == ("default_user", "Lisbon trip", "is planning")
    assert relation.endpoints == ["user", entity.topic_id]
    topics = M.list_topics([serve(r) for r in node["topic"]["rows"]], c.agent)
    assert [(t.id, t.name, t.type) for t in topics] == [(entity.topic_id, "Lisbon trip", "trip")]


def test_python_edit_of_a_node_memory_reads_in_python(c, node):
    served = serve(node["memory"])
    body = M.edit_memory_row(served, {"categories": ["food"]}, c.agent, c.keys())
    assert body["removed_reasons"] == ["category:travel"]
    plain = sealing.open_json(sealing.unwrap_as_owner(body["owner_wrap"], c.owner), body["ciphertext"])
    assert plain["categories"] == ["food"] and plain["row_id"] == served["id"]

"""After its author rotates a memory's key, what the author reads it by, over HTTP.

Spec 001, PUT memories (a new `kid`): "The caller's own wrap keeps the reasons it reads the
memory by, plus any in `self_via` it holds."
"""

from __future__ import annotations

from support.memories_kit import PUT, rotation
from support.sandbox_kit import saved

TRAVEL = {"permissions": ["memory.read"], "datatypes": ["travel"]}
FOOD = {"permissions": ["memory.read"], "datatypes": ["food"]}


def test_the_author_keeps_what_it_read_by_and_the_self_via_it_holds(lab):
    author = lab.pair("author", "memory.save", TRAVEL, FOOD)
    row = saved(author, categories=["travel"])
    assert author.served(row["id"])["via"] == ["self", "category:travel"]
    body, _ = rotation(author, row["id"], lab, self_via=["category:food", "category:health", "category:food"])
    r = author.put(PUT, body)
    assert r.status_code == 200, r.text
    # self and travel (read by before), food (held, named once), never health (not held)
    assert author.served(row["id"])["via"] == ["self", "category:travel", "category:food"]


def test_without_self_via_the_author_keeps_what_it_read_by(lab):
    author = lab.pair("author", "memory.save", TRAVEL)
    row = saved(author, categories=["travel"])
    body, _ = rotation(author, row["id"], lab)
    assert author.put(PUT, body).status_code == 200
    assert author.served(row["id"])["via"] == ["self", "category:travel"]


def test_a_rotation_gives_the_author_self_back_while_it_holds_save(lab):
    """Saved with a `self_via` that left `self` out, the author reads it by travel only; its own
    rotation keeps `self` too, since "what it saved is its own to read and edit while it holds it"."""
    author = lab.pair("author", "memory.save", TRAVEL)
    row = author.new_row("Lisbon: Fridays only.", categories=["travel"])
    row["self_via"] = ["category:travel"]
    assert author.save([row]).status_code == 201
    assert author.served(row["id"])["via"] == ["category:travel"]
    body, _ = rotation(author, row["id"], lab)
    assert author.put(PUT, body).status_code == 200
    assert author.served(row["id"])["via"] == ["self", "category:travel"]


def test_removing_a_label_it_does_not_write_names_the_ask(lab):
    """Once "Save memories" is taken away the author is a reader like any other: its rotation may
    remove only labels it holds memory.edit on, and the 403 names the ask for the one it named."""
    author = lab.pair("author", "memory.save")
    lab.ask(author, {"permissions": ["memory.edit"], "datatypes": ["travel"]})
    row = saved(author, categories=["travel", "food"])
    [save_policy] = [
        p
        for p in author.get("/api/agent/policies").json()["policies"]
        if p["permissions"][0]["permissions"] == ["memory.save"]
    ]
    lab.owner.revoke(author.token_id, save_policy["id"])
    body, _ = rotation(author, row["id"], lab, removed_reasons=["category:food"])
    r = author.put(PUT, body)
    assert r.status_code == 403, r.text
    got = r.json()
    assert got["code"] == "INSUFFICIENT_GRANT"
    assert got["message"] == "removing the label 'category:food' needs memory.edit on it"
    assert got["permission_request"] == {"permissions": ["memory.edit"], "datatypes": ["food"]}


def test_a_grantee_wrap_never_keeps_a_label_the_rotation_removes(lab):
    """001, PUT memories: "`removed_reasons`: the labels this edit removes" — a reader that also
    holds the removed label keeps the new key only by the labels left, even when the author's wrap
    lists the removed one ("a connection that only had it through that label stops getting it")."""
    author = lab.pair("author", "memory.save")
    reader = lab.pair("reader", TRAVEL, FOOD)
    row = saved(author, categories=["travel", "food"])
    assert reader.served(row["id"])["via"] == ["category:travel", "category:food"]
    body, _ = rotation(
        author,
        row["id"],
        lab,
        grantees=[(reader, ["category:travel", "category:food"])],
        removed_reasons=["category:food"],
    )
    r = author.put(PUT, body)
    assert r.status_code == 200 and r.json()["grantee_wraps"] == 1, r.text
    assert reader.served(row["id"])["via"] == ["category:travel"]

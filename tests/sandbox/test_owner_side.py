"""The owner's side: edits, renames, grant changes and key setup as the owner's app makes them."""

from __future__ import annotations

import pytest

from decoy_lab import memory
from decoy_lab.sandbox.phone import appview

from support.sandbox_kit import saved

PUT = "/api/agent/context/memories"
ALL = ["memory.save", "memory.read", "memory.edit"]


def _put_edit(peer, served: dict, text: str) -> object:
    body = memory.edit_memory_row(served, {"text": text}, peer.key, peer.keys())
    return peer.put(PUT, body)


def test_an_agent_edit_after_the_owner_edited_meets_rev_conflict_and_loses_nothing(lab):
    """ "`PUT` it with the `expected_rev` you read; `409 REV_CONFLICT` means it changed since, so
    re-read and re-apply." The owner edits on the phone between the agent's read and its write."""
    alpha = lab.pair("alpha", *ALL)
    row = saved(alpha, "Lisbon: Fridays only.", categories=["travel"])
    stale = alpha.served(row["id"])
    assert stale["rev"] == 1
    out = lab.owner.edit(row["id"], text="Lisbon: Fridays and Saturdays.")
    assert out["rev"] == 2 and out["rotated"] is False
    r = _put_edit(alpha, stale, "Lisbon: Fridays, window seat.")
    assert r.status_code == 409 and r.json()["code"] == "REV_CONFLICT" and r.json()["current_rev"] == 2
    fresh = alpha.served(row["id"])
    assert alpha.read(row["id"]).text == "Lisbon: Fridays and Saturdays.", "the owner's edit is what is read"
    assert _put_edit(alpha, fresh, "Lisbon: Fridays and Saturdays, window seat.").status_code == 200
    assert lab.view(row["id"])["text"] == "Lisbon: Fridays and Saturdays, window seat."
    assert lab.view(row["id"])["categories"] == ["travel"], "the categories the owner kept are kept"


def test_a_renamed_topic_is_what_a_second_agent_lists(lab):
    """The owner renames a topic in the app: the entity row, its memories' `entityName` ("the
    topic's name") and its link are re-sealed, so another reader lists the new name."""
    alpha = lab.pair("alpha", *ALL)
    beta = lab.pair("beta", "memory.read")
    made = memory.new_topic_rows(alpha.keys(), "Golf club headcovers")
    first = memory.new_memory_row(alpha.keys(), "Prefers leather.", topic=made.topic)
    assert alpha.save([*made.rows, first]).status_code == 201
    lab.share()
    out = lab.owner.rename_topic(made.topic_id, "Headcovers")
    assert set(out["changed"]) == {r["id"] for r in [*made.rows, first]}
    topics = memory.list_topics(beta.memories()["memories"], beta.key)
    assert [t.name for t in topics] == ["Headcovers"]
    assert lab.view(first["id"])["topic"]["name"] == "Headcovers" and lab.view(first["id"])["problems"] == []


def test_narrowing_a_category_grant_hides_exactly_those_memories_at_the_next_read(lab):
    """Reasons are rechecked against live grants on every read: a grant narrowed from travel and
    food to travel hides the food memories on the next read, and nothing else."""
    alpha = lab.pair("alpha", "memory.save")
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["travel", "food"]})
    trip = saved(alpha, "Window seats.", categories=["travel"])
    meal = saved(alpha, "No coriander.", categories=["food"])
    lab.share()
    assert {m["id"] for m in reader.memories()["memories"]} == {trip["id"], meal["id"]}
    (grant,) = [g for g in lab.owner.grants_of(reader.token_id) if g["rows"][0].get("datatypes")]
    lab.owner.set_grant(
        reader.token_id, grant["policy_id"], [{"permissions": ["memory.read"], "datatypes": ["travel"]}]
    )
    served = reader.memories()["memories"]
    assert [m["id"] for m in served] == [trip["id"]]
    assert served[0]["via"] == ["category:travel"]


def test_a_removed_label_rotates_the_key_and_the_phone_shares_the_new_one(lab):
    """ "When an edit removes a label, the writer rotates the key": the owner moving a memory off
    `food` gives it a new key; the food reader loses it, the travel reader reads the new key."""
    alpha = lab.pair("alpha", "memory.save")
    food = lab.pair("food", {"permissions": ["memory.read"], "datatypes": ["food"]})
    travel = lab.pair("travel", {"permissions": ["memory.read"], "datatypes": ["travel"]})
    row = saved(alpha, "Tapas in Lisbon.", categories=["food", "travel"])
    lab.share()
    assert food.served(row["id"]) is not None
    out = lab.owner.edit(row["id"], categories=["travel"])
    assert out["rotated"] is True and lab.stored(row["id"]).kid != row["kid"]
    assert food.served(row["id"]) is None
    assert travel.read(row["id"]).categories == ["travel"]


def test_key_setup_pending_then_finished(lab):
    """ "`owner_public_key` … is null until the owner finishes key setup in the app (complete that
    setup before saving)"; `GET /api/agent/public-key` is 404 `no_public_key` meanwhile."""
    alpha = lab.pair("alpha", "memory.save")
    lab.owner.set_key_setup(False)
    assert alpha.grantees()["owner_public_key"] is None
    assert alpha.get("/api/agent/public-key").status_code == 404
    with pytest.raises(Exception, match="complete that setup before saving"):
        alpha.new_row("x")
    lab.owner.finish_key_setup()
    assert alpha.grantees()["owner_public_key"] == lab.owner.key.public_key_b64
    assert saved(alpha)["id"]


def test_deleting_as_the_owner_tells_every_holder(lab):
    alpha = lab.pair("alpha", "memory.save")
    reader = lab.pair("reader", "memory.read")
    row = saved(alpha)
    lab.share()
    cursor = reader.get("/api/agent/sync/head").json()["head"]
    assert lab.owner.delete([row["id"], "no-such-row"]) == {"deleted": [row["id"]], "missing": ["no-such-row"]}
    assert reader.served(row["id"]) is None and alpha.served(row["id"]) is None
    feed = reader.get(f"/api/agent/sync?cursor={cursor}").json()
    assert row["id"] in feed["changes"]["context_memory"]["destroyed"]


def test_a_row_saved_without_self_via_is_served_with_real_reasons_only(lab):
    """`via` records the access reason; `topic:<id>` is a topic's id, so a memory saved without
    `self_via` by a connection reading everything is not served with `topic:<its own id>`."""
    alpha = lab.pair("alpha", "memory.save", "memory.read")
    row = alpha.new_row("x")
    row.pop("self_via", None)
    assert alpha.save([row]).status_code == 201
    assert alpha.served(row["id"])["via"] == ["self", "all"]


def test_the_owner_surface_edits_and_renames_over_http(lab):
    """POST /_sandbox/edit and /_sandbox/rename-topic do what `sb.owner.edit` / `rename_topic` do."""
    alpha = lab.pair("alpha", *ALL)
    row = saved(alpha, "Old.")
    r = lab.client.post("/_sandbox/edit", json={"id": row["id"], "text": "New.", "expected_rev": 1})
    assert r.status_code == 200 and r.json()["rev"] == 2
    again = lab.client.post("/_sandbox/edit", json={"id": row["id"], "text": "Newer.", "expected_rev": 1})
    assert again.status_code == 409 and again.json()["code"] == "REV_CONFLICT"
    assert lab.client.post("/_sandbox/edit", json={"id": row["id"], "topic": 7}).status_code == 400
    assert lab.client.post("/_sandbox/key-setup", json={"done": False}).json() == {"key_setup": "pending"}
    assert lab.client.get("/_sandbox/key-setup").json() == {"key_setup": "pending"}
    assert appview.app_view(lab.state)[0]["text"] == "New."

"""Legacy space storage: spaces, grantees, rows (GET/POST/PUT) and rows/delete."""

from __future__ import annotations

import uuid

from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

from support.sandbox_kit import Lab
from support.spaces_kit import DELETE, EDIT, OBS, READ, ROWS, SPACES, make_space, row_body, space_body


def test_create_list_and_read_a_space(lab):
    """The Me space: create with own/owner wraps, list with `wrapped_key`, write and read rows that bind
    `space_id` and `row_id`."""
    writer = lab.pair("writer", READ)
    other = lab.pair("other", READ)
    saver = lab.pair("saver", "memory.save")  # not covered: its wrap is dropped
    made, key = make_space(lab, writer, other, saver)
    assert made["fanned_out"] == 1
    sid = made["space"]["id"]
    listed = writer.get(SPACES).json()
    assert listed["me_granted"] is True and listed["account_ids"] == []
    assert [s["id"] for s in listed["spaces"]] == [sid]
    assert sealing.unwrap_as_agent(listed["spaces"][0]["wrapped_key"], writer.key) == key
    assert sealing.unwrap_as_agent(other.get(SPACES).json()["spaces"][0]["wrapped_key"], other.key) == key
    body = row_body(sid, key, OBS)
    r = writer.post(ROWS, {"space_id": sid, "rows": [body]})
    assert r.status_code == 201 and r.json() == {"created": [body["id"]], "existing": []}
    assert writer.post(ROWS, {"space_id": sid, "rows": [body]}).json() == {"created": [], "existing": [body["id"]]}
    got = other.get(ROWS, params={"space_id": sid}).json()
    assert got["skid"] == wire.kid(key)
    served = got["rows"][0]
    assert served["mine"] is False and served["author_kind"] == "agent" and served["rev"] == 1
    assert writer.get(ROWS, params={"space_id": sid}).json()["rows"][0]["mine"] is True
    plain = sealing.open_space_row(served["ciphertext"], key, space_id=sid, row_id=served["id"])
    assert plain["observation"]["content"] == "Prefers meetings after 10 am."


def test_space_exists_is_409(lab):
    """ "Insert-only: if the space already exists you get `409 SPACE_EXISTS` with its `space_id`"."""
    writer = lab.pair("writer", READ)
    made, _ = make_space(lab, writer)
    r = writer.post(SPACES, space_body(lab, writer, random_key()))
    assert r.status_code == 409 and r.json()["code"] == "SPACE_EXISTS"
    assert r.json()["space_id"] == made["space"]["id"]


def test_space_needs_a_covering_grant(lab):
    """The Me space "needs `memory.read`"; an account space `acctmem.read` on that account."""
    saver = lab.pair("saver", "memory.save")
    r = saver.post(SPACES, space_body(lab, saver, random_key()))
    assert r.status_code == 403 and r.json()["code"] == "INSUFFICIENT_GRANT"
    acct = str(uuid.uuid4())
    body = dict(space_body(lab, saver, random_key()), kind="account", account_id=acct)
    r = saver.post(SPACES, body)
    assert r.status_code == 403 and r.json()["permission_request"]["permissions"] == ["acctmem.read"]
    assert r.json()["permission_request"]["account_id"] == acct
    accountant = lab.pair("acct", {"permissions": ["acctmem.read"], "account_id": acct})
    body = dict(space_body(lab, accountant, random_key()), kind="account", account_id=acct)
    assert accountant.post(SPACES, body).status_code == 201
    assert accountant.get(SPACES).json()["account_ids"] == [acct]
    assert accountant.get(SPACES).json()["me_granted"] is False


def test_space_wraps_are_checked(lab):
    """Under --strict a wrap of the wrong layout is refused naming its field."""
    lab.state.strict = True
    writer = lab.pair("writer", READ)
    key = random_key()
    body = space_body(lab, writer, key)
    assert writer.post(SPACES, dict(body, own_wrap=body["owner_wrap"])).json()["field"] == "own_wrap"
    assert writer.post(SPACES, dict(body, owner_wrap=body["own_wrap"])).json()["field"] == "owner_wrap"
    assert writer.post(SPACES, dict(body, skid="ABC")).status_code == 400
    assert writer.post(SPACES, dict(body, kind="team")).status_code == 400


def test_grantees_lists_covered_agents(lab):
    writer = lab.pair("writer", READ)
    other = lab.pair("other", READ)
    lab.pair("saver", "memory.save")
    g = writer.get("/api/agent/context/grantees", params={"kind": "me"}).json()
    assert g["owner_public_key"] == lab.owner.public_key_b64
    assert g["grantees"] == [{"token_id": other.token_id, "public_key": other.key.public_key_b64}]
    assert lab.pair("x", "memory.save").get("/api/agent/context/grantees", params={"kind": "me"}).status_code == 403


def test_rows_rules(lab):
    """`skid` must equal the space's current key id; at most 200 rows; an unknown space is 404."""
    writer = lab.pair("writer", READ)
    made, key = make_space(lab, writer)
    sid = made["space"]["id"]
    bad = row_body(sid, random_key(), OBS)
    r = writer.post(ROWS, {"space_id": sid, "rows": [bad]})
    assert r.status_code == 400 and r.json()["code"] == "SKID_MISMATCH"
    good = row_body(sid, key, OBS)
    assert writer.post(ROWS, {"space_id": sid, "rows": [good] * 201}).status_code == 400
    assert writer.post(ROWS, {"space_id": str(uuid.uuid4()), "rows": [good]}).status_code == 404
    assert writer.post(ROWS, {"space_id": sid, "rows": [dict(good, text="x")]}).json()["code"] == "PLAINTEXT_REJECTED"
    assert lab.pair("s", "memory.save").get(ROWS, params={"space_id": sid}).status_code == 403


def own_row(peer, sid, key, plain=OBS):
    """A row `peer` writes into the space, and a PUT body that re-seals it with new content."""
    body = row_body(sid, key, plain)
    assert peer.post(ROWS, {"space_id": sid, "rows": [body]}).status_code == 201
    changed = {**plain, "observation": {**plain["observation"], "content": "after 11"}}
    ct = wire.b64encode(sealing.seal_space_row(key, changed, space_id=sid, row_id=body["id"]))
    return body["id"], {"id": body["id"], "expected_rev": 1, "ciphertext": ct}


def test_edit_rows_needs_edit_on_every_memory(lab):
    """PUT rows: "`409 REV_CONFLICT` and the `current_rev`"; a category-only editor gets `409 MEMORY_MOVING`;
    "Saving a row gives no access to it"."""
    writer = lab.pair("writer", READ)
    made, key = make_space(lab, writer)
    sid = made["space"]["id"]
    _, edit = own_row(writer, sid, key)
    assert writer.put(ROWS, edit).status_code == 403
    narrow = lab.pair("narrow", READ, {"permissions": ["memory.edit"], "datatypes": ["food"]})
    _, narrow_edit = own_row(narrow, sid, key)
    r = narrow.put(ROWS, narrow_edit)
    assert r.status_code == 409 and r.json()["code"] == "MEMORY_MOVING" and r.json()["retry_after_seconds"] > 0
    assert r.json()["current_rev"] == 1
    editor = lab.pair("editor", READ, EDIT)
    _, mine = own_row(editor, sid, key)
    r = editor.put(ROWS, mine)
    assert r.status_code == 200 and r.json()["rev"] == 2
    r = editor.put(ROWS, mine)
    assert r.status_code == 409 and r.json()["code"] == "REV_CONFLICT" and r.json()["current_rev"] == 2
    assert editor.put(ROWS, dict(mine, id=str(uuid.uuid4()))).status_code == 404


def test_edit_rows_only_rows_this_agent_wrote(lab):
    """PUT rows x-permissions: "only rows this agent wrote (and the owner hasn't since edited)": another
    connection's row is `404`, even to one holding `memory.edit` on every memory."""
    writer = lab.pair("writer", READ, EDIT)
    made, key = make_space(lab, writer)
    sid = made["space"]["id"]
    _, edit = own_row(writer, sid, key)
    other = lab.pair("other", READ, EDIT)
    r = other.put(ROWS, edit)
    assert r.status_code == 404 and r.json()["code"] == "NOT_FOUND"
    assert writer.put(ROWS, edit).status_code == 200


def test_delete_rows(lab):
    """rows/delete: "Deletes rows by id, in spaces you are still granted, that you hold `memory.delete` … on …
    everything else comes back in `refused`"; GET rows: "`mine` is true for rows your token wrote — the only rows
    you may delete". Both hold: a row is deleted only when it is `mine` and the permission covers it."""
    writer = lab.pair("writer", READ)
    made, key = make_space(lab, writer)
    sid = made["space"]["id"]
    rows = [row_body(sid, key, OBS) for _ in range(3)]
    writer.post(ROWS, {"space_id": sid, "rows": rows})
    theirs, missing = rows[0]["id"], str(uuid.uuid4())
    assert writer.post(ROWS + "/delete", {"ids": [theirs, missing]}).json() == {
        "deleted": [],
        "refused": [theirs, missing],
        "remediation": {theirs: {"permissions": ["memory.delete"]}},
    }, "its own row without memory.delete: refused with the grant request that unlocks it"
    deleter = lab.pair("deleter", READ, DELETE)
    narrow = lab.pair("narrow", READ, {"permissions": ["memory.delete"], "datatypes": ["food"]})
    for other in (deleter, narrow):
        assert other.post(ROWS + "/delete", {"ids": [theirs]}).json() == {"deleted": [], "refused": [theirs]}, (
            "another connection's row: refused (nothing it can ask for unlocks it), never moving"
        )
    own = row_body(sid, key, OBS)
    deleter.post(ROWS, {"space_id": sid, "rows": [own]})
    assert deleter.post(ROWS + "/delete", {"ids": [own["id"], theirs]}).json() == {
        "deleted": [own["id"]],
        "refused": [theirs],
    }
    assert len(writer.get(ROWS, params={"space_id": sid}).json()["rows"]) == 3


def test_delete_rows_in_an_account_space(lab):
    """rows/delete deletes rows "that you hold `memory.delete` or `acctmem.delete` on": in an account's space
    the writer's own row needs `acctmem.delete` on that account, and the refusal names that grant."""
    acct = str(uuid.uuid4())
    reader = lab.pair("reader", {"permissions": ["acctmem.read"], "account_id": acct})
    key = random_key()
    r = reader.post(SPACES, dict(space_body(lab, reader, key), kind="account", account_id=acct))
    sid = r.json()["space"]["id"]
    row = row_body(sid, key, OBS)
    reader.post(ROWS, {"space_id": sid, "rows": [row]})
    assert reader.post(ROWS + "/delete", {"ids": [row["id"]]}).json() == {
        "deleted": [],
        "refused": [row["id"]],
        "remediation": {row["id"]: {"permissions": ["acctmem.delete"], "account_id": acct}},
    }
    deleter = lab.pair("deleter", {"permissions": ["acctmem.read", "acctmem.delete"], "account_id": acct})
    own = row_body(sid, key, OBS)
    deleter.post(ROWS, {"space_id": sid, "rows": [own]})
    assert deleter.post(ROWS + "/delete", {"ids": [own["id"], row["id"]]}).json() == {
        "deleted": [own["id"]],
        "refused": [row["id"]],
    }


def test_owner_phone_converges_space_keys(lab):
    """`wrapped_key` is "`null` when no wrap has reached you yet — the owner's device converges it"."""
    writer = lab.pair("writer", READ)
    _made, key = make_space(lab, writer)
    late = lab.pair("late", READ)
    assert late.get(SPACES).json()["spaces"][0]["wrapped_key"] is None
    assert lab.share().spaces_shared == 1
    wrapped = late.get(SPACES).json()["spaces"][0]["wrapped_key"]
    assert sealing.unwrap_as_agent(wrapped, late.key) == key


def test_seeded_legacy_space_reads_after_the_phone_shares():
    lab = Lab(seed="demo")
    reader = lab.pair("reader", READ)
    lab.share()
    space = reader.get(SPACES).json()["spaces"][0]
    key = sealing.unwrap_as_agent(space["wrapped_key"], reader.key)
    rows = reader.get(ROWS, params={"space_id": space["id"]}).json()["rows"]
    kinds = [
        next(
            k
            for k in ("entity", "observation", "relation")
            if k in sealing.open_space_row(r["ciphertext"], key, space_id=space["id"], row_id=r["id"])
        )
        for r in rows
    ]
    assert kinds == ["entity", "observation", "observation", "relation"]


# ── the owner's phone moves a row to its own key ─────────────────────────────────────────────

FOOD = {"permissions": ["memory.read", "memory.edit"], "datatypes": ["food"]}
FOOD_OBS = {
    "observation": {"entityName": "default_user", "content": "Allergic to peanuts."},
    "categories": ["food"],
    "metadata": {"source": "chat"},
}


def test_memory_moving_changes_nothing_until_the_phone_moves_the_row(lab):
    """ "A connection whose permission is on some categories or topics gets `409 MEMORY_MOVING` … the owner's
    phone is asked to move the row to its own key … Nothing is changed meanwhile.\""""
    writer = lab.pair("writer", READ)
    made, key = make_space(lab, writer)
    sid = made["space"]["id"]
    narrow = lab.pair("narrow", FOOD)
    rid, edit = own_row(narrow, sid, key, FOOD_OBS)
    before = narrow.get(ROWS, params={"space_id": sid}).json()["rows"]
    assert narrow.put(ROWS, edit).json()["code"] == "MEMORY_MOVING"
    assert narrow.get(ROWS, params={"space_id": sid}).json()["rows"] == before, "nothing is changed meanwhile"
    assert lab.stored(rid) is None
    report = lab.share()
    assert lab.state.phone.last_moves.moved == [rid]
    assert [r["id"] for r in narrow.get(ROWS, params={"space_id": sid}).json()["rows"]] == []
    stored = lab.stored(rid)
    assert stored.rev == 1 and stored.author_token == narrow.token_id
    assert report.per_connection.get(narrow.token_id) == 1, "wrapped to the connection its category reaches"
    m = narrow.read(rid)
    assert (m.text, m.categories, m.topic, m.metadata) == ("Allergic to peanuts.", ["food"], None, {"source": "chat"})
    served = narrow.served(rid)
    assert served["created_at"] == before[0]["created_at"], "it keeps when it was first added"
    assert narrow.put(ROWS, edit).status_code == 404, "moved: the legacy route no longer holds it"
    view = lab.view(rid)
    assert view["readable"] and view["kind"] == "memory" and not view["problems"]


def test_a_moved_observation_takes_its_entity_and_link_along(lab):
    """A legacy observation about an entity becomes a memory on the topic of that name: the entity row moves
    along as the topic (same id), with the relation that places it on the Map."""
    narrow = lab.pair("narrow", FOOD)
    made, key = make_space(lab, narrow)
    sid = made["space"]["id"]
    entity = row_body(sid, key, {"entity": {"name": "Home kitchen", "entityType": "place"}})
    link = row_body(sid, key, {"relation": {"from": "default_user", "to": "Home kitchen", "relationType": "cooks in"}})
    narrow.post(ROWS, {"space_id": sid, "rows": [entity, link]})
    obs = {"observation": {"entityName": "Home kitchen", "content": "Gas hob, no oven."}, "categories": ["food"]}
    rid, edit = own_row(narrow, sid, key, obs)
    assert narrow.put(ROWS, edit).json()["code"] == "MEMORY_MOVING"
    lab.share()
    moves = lab.state.phone.last_moves
    assert moves.moved == [rid] and sorted(moves.along) == sorted([entity["id"], link["id"]])
    assert narrow.get(ROWS, params={"space_id": sid}).json()["rows"] == []
    memory_view, topic_view, link_view = (lab.view(i) for i in (rid, entity["id"], link["id"]))
    assert memory_view["topic"]["id"] == f"topic:{entity['id']}" and memory_view["entity_name"] == "Home kitchen"
    assert topic_view["kind"] == "topic" and topic_view["type"] == "place" and not topic_view["problems"]
    assert link_view["endpoints"] == ["user", f"topic:{entity['id']}"] and link_view["relation"] == "cooks in"


def test_rows_delete_moving_asks_the_phone_too(lab):
    """rows/delete: "`moving` (with `retry_after_seconds`) while the owner's phone moves a row to its own key"."""
    narrow = lab.pair("narrow", {"permissions": ["memory.read", "memory.delete"], "datatypes": ["food"]})
    made, key = make_space(lab, narrow)
    sid = made["space"]["id"]
    rid, _ = own_row(narrow, sid, key, FOOD_OBS)
    assert narrow.post(ROWS + "/delete", {"ids": [rid]}).json()["moving"] == [rid]
    lab.share()
    assert lab.stored(rid) is not None
    assert narrow.post("/api/agent/context/memories/delete", {"ids": [rid]}).json()["deleted"] == [rid]

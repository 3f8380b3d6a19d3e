"""PUT memories (edits and key rotation), memory-wraps and memories/delete, over HTTP."""

from __future__ import annotations

import uuid

from decoy_lab import memory
from decoy_lab.recipes import sealing

from support.memories_kit import PUT, WRAPS, key_of, reseal_text, rotation, wraps_body
from support.sandbox_kit import saved

TRAVEL_READ = {"permissions": ["memory.read"], "datatypes": ["travel"]}
TRAVEL_EDIT = {"permissions": ["memory.edit"], "datatypes": ["travel"]}
TRAVEL_DELETE = {"permissions": ["memory.delete"], "datatypes": ["travel"]}


# ── PUT ───────────────────────────────────────────────────────────────────────────────────


def test_author_edits_text_and_rev_moves(lab, alpha):
    """ "update the same memory by id, do not add another"; the answer carries id, rev and updated_at."""
    row = saved(alpha)
    lab.clock.advance(60)
    r = alpha.put(PUT, reseal_text(alpha, row["id"], "Lisbon: Fridays and Tuesdays."))
    assert r.status_code == 200, r.text
    assert r.json()["rev"] == 2 and r.json()["id"] == row["id"] and "kid" not in r.json()
    served = alpha.served(row["id"])
    assert served["rev"] == 2 and served["updated_at"] > served["created_at"]
    assert alpha.read(row["id"]).text == "Lisbon: Fridays and Tuesdays."


def test_memory_py_edit_is_accepted(lab, alpha):
    """editMemoryRow's PUT body is what the server takes."""
    row = saved(alpha, categories=["travel"])
    body = memory.edit_memory_row(alpha.served(row["id"]), {"text": "changed"}, alpha.key, alpha.keys())
    assert alpha.put(PUT, body).status_code == 200
    assert alpha.read(row["id"]).text == "changed"


def test_stale_expected_rev_is_409_with_current_rev(lab, alpha):
    """ "On `409 REV_CONFLICT`, read current content and reconcile rather than overwrite"."""
    row = saved(alpha)
    body = reseal_text(alpha, row["id"], "first")
    assert alpha.put(PUT, body).status_code == 200
    r = alpha.put(PUT, dict(body, ciphertext=reseal_text(alpha, row["id"], "second")["ciphertext"]))
    assert r.status_code == 409 and r.json()["code"] == "REV_CONFLICT" and r.json()["current_rev"] == 2
    assert alpha.read(row["id"]).text == "first"


def test_reader_without_edit_is_403_with_a_request(lab, alpha):
    """PUT "Needs `memory.edit` on this memory"; the 403 names what to ask for."""
    reader = lab.pair("reader", TRAVEL_READ)
    row = saved(alpha, categories=["travel"])
    r = reader.put(PUT, reseal_text(reader, row["id"], "hijack"))
    assert r.status_code == 403 and r.json()["code"] == "INSUFFICIENT_GRANT"
    assert r.json()["permission_request"]["permissions"] == ["memory.edit"]
    assert r.json()["permission_request"]["datatypes"] == ["travel"]
    assert alpha.read(row["id"]).text == "Lisbon: Fridays only."


def test_edit_holder_corrects_text(lab, alpha):
    """ "a matching Read & write grant corrects the text only" — allowed by memory.edit on its reason."""
    editor = lab.pair("editor", TRAVEL_READ, TRAVEL_EDIT)
    row = saved(alpha, categories=["travel"])
    r = editor.put(PUT, reseal_text(editor, row["id"], "Lisbon: corrected by the editor."))
    assert r.status_code == 200
    assert alpha.read(row["id"]).text == "Lisbon: corrected by the editor."


def test_edit_grant_on_another_label_does_not_reach(lab, alpha):
    editor = lab.pair("editor", TRAVEL_READ, {"permissions": ["memory.edit"], "datatypes": ["food"]})
    row = saved(alpha, categories=["travel"])
    assert editor.put(PUT, reseal_text(editor, row["id"], "x")).status_code == 403


def test_someone_elses_invisible_memory_is_404_like_a_missing_one(lab, alpha):
    """ "an id that is not yours → 404, never a confirmation it exists"."""
    row = saved(alpha)
    beta = lab.pair("beta", "memory.save", "memory.edit")  # edits only what it reads: reads nothing of alpha's
    body = reseal_text(alpha, row["id"], "x")
    mine = beta.put(PUT, body)
    missing = beta.put(PUT, dict(body, id=str(uuid.uuid4())))
    assert mine.status_code == missing.status_code == 404
    assert mine.json() == missing.json()


def test_put_validates_like_post(lab, alpha):
    row = saved(alpha)
    body = reseal_text(alpha, row["id"], "x")
    assert alpha.put(PUT, dict(body, expected_rev=0)).status_code == 400
    assert alpha.put(PUT, dict(body, expected_rev=True)).status_code == 400
    assert alpha.put(PUT, dict(body, ciphertext=body["ciphertext"].rstrip("="))).json()["field"] == "ciphertext"
    assert alpha.put(PUT, dict(body, text="plain")).json()["code"] == "PLAINTEXT_REJECTED"
    assert alpha.put(PUT, {k: v for k, v in body.items() if k != "expected_rev"}).status_code == 400


# ── rotation ──────────────────────────────────────────────────────────────────────────────


def test_rotation_removing_a_label_drops_the_reader(lab, alpha):
    """ "When the author removes a label … rotate the key so a connection that only had it through that
    label stops getting it … A rotation removes every wrap of the old key."""
    reader = lab.pair("reader", TRAVEL_READ)
    row = saved(alpha, categories=["travel", "food"])
    assert reader.served(row["id"]) is not None
    body = memory.edit_memory_row(alpha.served(row["id"]), {"categories": ["food"]}, alpha.key, alpha.keys())
    assert body["kid"] != row["kid"]
    r = alpha.put(PUT, body)
    assert r.status_code == 200, r.text
    assert r.json()["kid"] == body["kid"] and r.json()["rev"] == 2
    assert reader.served(row["id"]) is None
    assert {w.kid for w in lab.wraps(row["id"])} == {body["kid"]}
    assert alpha.read(row["id"]).categories == ["food"]
    assert lab.view(row["id"])["categories"] == ["food"]  # the owner's app opens the new key


def test_rotation_missing_a_holder_is_409_holders_missing(lab, alpha):
    """ "`409 HOLDERS_MISSING` lists each connection left out (`token_id`, `public_key`, `via`)"."""
    reader = lab.pair("reader", TRAVEL_READ)
    row = saved(alpha, categories=["travel", "food"])
    body, _ = rotation(alpha, row["id"], lab, removed_reasons=["category:food"])
    r = alpha.put(PUT, body)
    assert r.status_code == 409 and r.json()["code"] == "HOLDERS_MISSING"
    assert r.json()["missing"] == [
        {"token_id": reader.token_id, "public_key": reader.key.public_key_b64, "via": ["category:travel"]}
    ]
    assert r.json()["current_rev"] == 1
    assert lab.stored(row["id"]).kid == row["kid"]  # nothing changed
    body2, new = rotation(
        alpha, row["id"], lab, grantees=[(reader, ["category:travel"])], removed_reasons=["category:food"]
    )
    r = alpha.put(PUT, body2)
    assert r.status_code == 200 and r.json()["grantee_wraps"] == 1
    assert sealing.unwrap_as_agent(reader.served(row["id"])["wrapped_key"], reader.key) == new


def test_rotation_without_removed_reasons_counts_left_out_holders_missing(lab, alpha):
    """ "Without this field, the reasons of the connections left out of `grantee_wraps` that the caller
    writes are taken as removed" — a save-only author writes no grant, so the reader is missing."""
    reader = lab.pair("reader", TRAVEL_READ)
    row = saved(alpha, categories=["travel"])
    body, _ = rotation(alpha, row["id"], lab)
    r = alpha.put(PUT, body)
    assert r.status_code == 409 and [m["token_id"] for m in r.json()["missing"]] == [reader.token_id]


def test_rotation_needs_owner_and_self_wraps(lab, alpha):
    """ "With a new `kid` it also carries `owner_wrap`, `self_wrap`"."""
    row = saved(alpha)
    for k in ("owner_wrap", "self_wrap"):
        body, _ = rotation(alpha, row["id"], lab, drop=[k])
        r = alpha.put(PUT, body)
        assert r.status_code == 400 and r.json()["field"] == k
    body, _ = rotation(alpha, row["id"], lab)
    body["owner_wrap"] = body["self_wrap"]
    lab.state.strict = True  # --strict: a layout fault is refused, not stored
    assert alpha.put(PUT, body).json()["field"] == "owner_wrap"


def test_rotation_is_author_only(lab, alpha):
    """ "agent-initiated rotation is author-only"."""
    editor = lab.pair("editor", TRAVEL_READ, TRAVEL_EDIT)
    row = saved(alpha, categories=["travel"])
    body, _ = rotation(editor, row["id"], lab)
    r = editor.put(PUT, body)
    assert r.status_code == 403 and r.json()["code"] == "AUTHOR_ONLY"
    assert lab.stored(row["id"]).kid == row["kid"]


def test_rotation_keeps_grantee_wraps_only_for_held_reasons(lab, alpha):
    """ "A grantee wrap is kept only for a reason its recipient holds"."""
    reader = lab.pair("reader", TRAVEL_READ)
    other = lab.pair("other", {"permissions": ["memory.read"], "datatypes": ["music"]})
    row = saved(alpha, categories=["travel"])
    body, _ = rotation(alpha, row["id"], lab, grantees=[(reader, ["category:travel"]), (other, ["category:travel"])])
    assert alpha.put(PUT, body).json()["grantee_wraps"] == 1
    assert other.served(row["id"]) is None


# ── memory-wraps ──────────────────────────────────────────────────────────────────────────


def test_share_a_key_to_a_newly_eligible_reader(lab, alpha):
    """ "when labels are only added, keep the key and add wraps with `POST memory-wraps`"."""
    row = saved(alpha, categories=["travel"])
    reader = lab.pair("reader", TRAVEL_READ)  # paired after the save: no wrap yet
    assert reader.served(row["id"]) is None
    key = key_of(alpha, row["id"])
    r = alpha.post(WRAPS, wraps_body(row["id"], row["kid"], key, (reader, ["category:travel"])))
    assert r.status_code == 200 and r.json() == {"added": 1}
    assert memory.read_memory_row(reader.served(row["id"]), reader.key).text == "Lisbon: Fridays only."


def test_share_refuses_reasons_the_recipient_lacks_and_self(lab, alpha):
    row = saved(alpha, categories=["travel"])
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["food"]})
    key = key_of(alpha, row["id"])
    r = alpha.post(WRAPS, wraps_body(row["id"], row["kid"], key, (reader, ["category:travel", "self"])))
    assert r.json() == {"added": 0}
    assert reader.served(row["id"]) is None


def test_share_with_a_stale_kid_is_409_kid_conflict(lab, alpha):
    """ "A stale key in the share endpoint returns `409 KID_CONFLICT`."""
    reader = lab.pair("reader", TRAVEL_READ)
    row = saved(alpha, categories=["travel"])
    body = memory.edit_memory_row(alpha.served(row["id"]), {"categories": []}, alpha.key, alpha.keys())
    assert alpha.put(PUT, body).status_code == 200
    old_key = sealing.unwrap_as_agent(row["self_wrap"], alpha.key)
    r = alpha.post(WRAPS, wraps_body(row["id"], row["kid"], old_key, (reader, ["category:travel"])))
    assert r.status_code == 409 and r.json()["code"] == "KID_CONFLICT" and r.json()["kid"] == body["kid"]


def test_share_needs_edit_and_hides_what_it_cannot_see(lab, alpha):
    """memory-wraps "Needs `memory.edit` on the memory"; a read grant is not permission to reshare."""
    reader = lab.pair("reader", TRAVEL_READ)
    late = lab.pair("late", TRAVEL_READ, key_name="late")
    row = saved(alpha, categories=["travel"])
    key = key_of(reader, row["id"])
    r = reader.post(WRAPS, wraps_body(row["id"], row["kid"], key, (late, ["category:travel"])))
    assert r.status_code == 403 and r.json()["code"] == "INSUFFICIENT_GRANT"
    stranger = lab.pair("stranger", "memory.save", "memory.edit")
    r1 = stranger.post(WRAPS, wraps_body(row["id"], row["kid"], key, (late, ["category:travel"])))
    r2 = stranger.post(WRAPS, wraps_body(str(uuid.uuid4()), row["kid"], key, (late, ["category:travel"])))
    assert r1.status_code == r2.status_code == 404


def test_share_into_a_reason_the_caller_does_not_write_is_dropped(lab, alpha):
    """Each wrap "is kept only for a reason its recipient holds now and the caller holds write on
    (or one the memory already has, or `all`)"."""
    editor = lab.pair("editor", TRAVEL_READ, TRAVEL_EDIT)
    row = saved(alpha, categories=["travel", "music"])
    music = lab.pair("music", {"permissions": ["memory.read"], "datatypes": ["music"]})
    key = key_of(editor, row["id"])
    r = editor.post(WRAPS, wraps_body(row["id"], row["kid"], key, (music, ["category:music"])))
    assert r.json() == {"added": 0}
    travel2 = lab.pair("travel2", TRAVEL_READ)
    r = editor.post(WRAPS, wraps_body(row["id"], row["kid"], key, (travel2, ["category:travel"])))
    assert r.json() == {"added": 1}


# ── delete ────────────────────────────────────────────────────────────────────────────────

DELETE = "/api/agent/context/memories/delete"


def test_author_deletes(lab, alpha):
    """ "`{ids}` → `{deleted,refused}`; author or Full access"."""
    row = saved(alpha)
    r = alpha.post(DELETE, {"ids": [row["id"]]})
    assert r.status_code == 200 and r.json() == {"deleted": [row["id"]], "refused": []}
    assert lab.stored(row["id"]) is None and lab.wraps(row["id"]) == []
    assert alpha.served(row["id"]) is None


def test_delete_refuses_missing_and_ineligible_ids(lab, alpha):
    """ "Missing or ineligible ids are refused" — with a remediation only for what the caller sees."""
    reader = lab.pair("reader", TRAVEL_READ)
    row = saved(alpha, categories=["travel"])
    hidden = saved(alpha, "not shared")
    missing = str(uuid.uuid4())
    r = reader.post(DELETE, {"ids": [row["id"], hidden["id"], missing]})
    assert r.json()["deleted"] == []
    assert r.json()["refused"] == [row["id"], hidden["id"], missing]
    assert set(r.json()["remediation"]) == {row["id"]}
    assert r.json()["remediation"][row["id"]]["permissions"] == ["memory.delete"]
    assert lab.stored(row["id"]) is not None


def test_memory_delete_holder_deletes(lab, alpha):
    deleter = lab.pair("deleter", TRAVEL_READ, TRAVEL_DELETE)
    row = saved(alpha, categories=["travel"])
    assert deleter.post(DELETE, {"ids": [row["id"]]}).json() == {"deleted": [row["id"]], "refused": []}


def test_delete_validates_ids(lab, alpha):
    assert alpha.post(DELETE, {"ids": []}).status_code == 400
    assert alpha.post(DELETE, {"ids": ["nope"]}).status_code == 400
    assert alpha.post(DELETE, {"ids": [str(uuid.uuid4())] * 501}).status_code == 400

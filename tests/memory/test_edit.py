"""Editing: edit_memory_row (re-seal, rotation on label removal, author rules), attach_duplicate,
and is_definite_refusal."""

from __future__ import annotations

import uuid

import pytest

from decoy_lab import memory as M
from decoy_lab.errors import (
    CryptoError,
    MemoryModelError,
    ServerError,
    TransportError,
    UnreadableRow,
    error_from_response,
)
from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire

from support.memory_cast import apply_put, cast, craft, open_plaintext, owner_key_of, serve

GOLF = {"id": f"topic:{uuid.uuid4()}", "name": "Golf club headcovers"}
GOLF_COPY = {"id": f"topic:{uuid.uuid4()}", "name": "golf club headcovers"}
LISBON = {"id": f"topic:{uuid.uuid4()}", "name": "Lisbon trip"}


@pytest.fixture(scope="module")
def c():
    return cast()


@pytest.fixture(scope="module")
def keys(c):
    return c.keys(topics=[GOLF["id"]], self_selectors={"categories": ["sports"]})


def _key(served, c):
    return sealing.unwrap_as_agent(served["wrapped_key"], c.agent)


def _open_body(body, key):
    return sealing.open_json(key, body["ciphertext"])


# -- text corrections -----------------------------------------------------------------------------
def test_text_edit_keeps_key_and_every_other_field(c, keys):
    """Re-seal the whole existing plaintext with only what changed … and send `{id, expected_rev,
    ciphertext}`. Keep every other field, and the id."""
    row_id = str(uuid.uuid4())
    original = {
        "v": 2,
        "row_id": row_id,
        "observation": {"entityName": "Golf club headcovers", "content": "old", "confidence": 0.9},
        "about": [GOLF["id"]],
        "categories": ["sports"],
        "metadata": {"source": "chat"},
        "x_future": {"kept": True},
    }
    served = craft(original, c.agent, row_id=row_id)
    served["rev"] = 3
    body = M.edit_memory_row(served, {"text": "new"}, c.agent, keys)
    assert set(body) == {"id", "expected_rev", "ciphertext"}
    assert (body["id"], body["expected_rev"]) == (row_id, 3)
    after = _open_body(body, _key(served, c))
    assert after == {**original, "observation": {**original["observation"], "content": "new"}}
    assert list(after) == list(original)
    assert M.read_memory_row(apply_put(served, body), c.agent).text == "new"


def test_the_spec_correction_flow(c, keys):
    """The person adds a 5-hybrid. Correct the fit memory by id: same row, topic and categories."""
    fit = M.new_memory_row(
        keys,
        "Needs: covers for a 460cc driver, a 3-wood and a 4-hybrid.",
        topic=GOLF,
        categories=["sports", "user_preferences"],
    )
    current = serve(fit)
    corrected = M.read_memory_row(current, c.agent).text.replace("and a 4-hybrid", "a 4-hybrid and a 5-hybrid")
    body = M.edit_memory_row(current, {"text": corrected}, c.agent, keys)
    m = M.read_memory_row(apply_put(current, body), c.agent)
    assert m.text.endswith("a 4-hybrid and a 5-hybrid.") and m.id == fit["id"]
    assert m.topic == GOLF and m.categories == ["sports", "user_preferences"]


# -- adding labels: no rotation --------------------------------------------------------------------
def test_adding_a_category_keeps_the_key(c, keys):
    """Adding a label needs no rotation."""
    served = serve(M.new_memory_row(keys, "x", categories=["sports"]))
    body = M.edit_memory_row(served, {"categories": ["sports", "fashion", "fashion"]}, c.agent, keys)
    assert "kid" not in body
    assert _open_body(body, _key(served, c))["categories"] == ["sports", "fashion"]


def test_filing_under_a_topic_keeps_the_key(c, keys):
    """An edit that only adds labels (moving from `user` to a topic counts as adding) keeps the key."""
    served = serve(M.new_memory_row(keys, "x"))
    body = M.edit_memory_row(served, {"topic": GOLF}, c.agent, keys)
    assert "kid" not in body
    plain = _open_body(body, _key(served, c))
    assert plain["about"] == [GOLF["id"]] and plain["observation"]["entityName"] == GOLF["name"]


# -- removing labels: rotation ---------------------------------------------------------------------
def test_removing_a_category_rotates_the_key(c, keys):
    """When the author removes a label … rotate the key so a connection that only had it through that label
    stops getting it: a new key and `kid`, with `owner_wrap`, `self_wrap` and `grantee_wraps` for every
    connection the remaining labels still reach."""
    served = serve(M.new_memory_row(keys, "Window seat.", categories=["travel", "sports"]))
    reached = M.new_memory_row(keys, "y", categories=["travel"])["grantee_wraps"]
    assert "tok-travel" in {w["token_id"] for w in reached}  # before the edit, travel reads it
    body = M.edit_memory_row(served, {"categories": ["sports"]}, c.agent, keys)
    assert body["kid"] != served["kid"] and body["removed_reasons"] == ["category:travel"]
    new_key = sealing.unwrap_as_agent(body["self_wrap"], c.agent)
    assert wire.kid(new_key) == body["kid"]
    assert owner_key_of(body, c.owner) == new_key
    assert {w["token_id"]: w["via"] for w in body["grantee_wraps"]} == {"tok-all": ["all"]}
    for w in body["grantee_wraps"]:
        assert sealing.unwrap_as_agent(w["wrapped_key"], c.key_for(w["token_id"])) == new_key
    assert body["self_via"] == ["self", "category:sports"]
    assert _open_body(body, new_key)["categories"] == ["sports"]
    with pytest.raises(CryptoError):
        sealing.open_json(_key(served, c), body["ciphertext"])
    m = M.read_memory_row(apply_put(served, body), c.agent)
    assert m.kid == body["kid"] and m.categories == ["sports"]


def test_removing_every_category_drops_the_field(c, keys):
    served = serve(M.new_memory_row(keys, "x", categories=["travel"]))
    body = M.edit_memory_row(served, {"categories": []}, c.agent, keys)
    assert "categories" not in _open_body(body, sealing.unwrap_as_agent(body["self_wrap"], c.agent))
    assert body["removed_reasons"] == ["category:travel"]


def test_back_to_you_rotates(c, keys):
    """`topic: null` returns it to You. Back to the user: `about: ["user"]` and `observation.entityName:
    "default_user"`."""
    served = serve(M.new_memory_row(keys, "x", topic=GOLF))
    body = M.edit_memory_row(served, {"topic": None}, c.agent, keys)
    assert body["removed_reasons"] == [GOLF["id"]]
    plain = _open_body(body, sealing.unwrap_as_agent(body["self_wrap"], c.agent))
    assert plain["about"] == ["user"] and plain["observation"]["entityName"] == "default_user"
    assert "tok-topic" not in {w["token_id"] for w in body.get("grantee_wraps", [])}


def test_moving_between_topics_rotates(c, keys):
    served = serve(M.new_memory_row(keys, "x", topic=GOLF, categories=["sports"]))
    body = M.edit_memory_row(served, {"topic": LISBON}, c.agent, keys)
    assert body["removed_reasons"] == [GOLF["id"]]
    m = M.read_memory_row(apply_put(served, body), c.agent)
    assert m.topic == LISBON and m.entity_name == "Lisbon trip" and m.categories == ["sports"]


def test_rotation_needs_the_owner_key(c, keys):
    served = serve(M.new_memory_row(keys, "x", categories=["travel"]))
    with pytest.raises(MemoryModelError, match="complete that setup before saving"):
        M.edit_memory_row(served, {"categories": []}, c.agent, c.keys(owner=False))


# -- the current topic, by any spelling -------------------------------------------------------------
@pytest.mark.parametrize(
    "naming",
    [
        GOLF,
        {"id": GOLF_COPY["id"], "name": "  “GOLF club   headcovers”"},
        GOLF_COPY,
        GOLF["id"],
        {"id": GOLF["id"], "name": "Golf club headcovers", "ids": [GOLF["id"], GOLF_COPY["id"]]},
    ],
    ids=["the-entity", "the-copy-respelled", "the-copy", "the-id", "both-ids"],  # stable names: the ids are random
)
def test_naming_the_current_topic_leaves_it_where_it_is(c, keys, naming):
    """Naming the memory's current topic, by any spelling, leaves it where it is rather than moving it to
    the oldest same-name copy."""
    served = serve(M.new_memory_row(keys, "x", topic=GOLF))
    before = open_plaintext(served, c.agent)
    body = M.edit_memory_row(served, {"topic": naming, "text": "y"}, c.agent, keys)
    after = _open_body(body, _key(served, c))
    assert "kid" not in body
    assert after["about"] == before["about"] and after["observation"]["entityName"] == "Golf club headcovers"


# -- who may relabel -------------------------------------------------------------------------------
def test_non_author_may_correct_text_only(c, keys):
    """A connection editing someone else's memory with Read & write may correct its text, and must leave its
    labels byte-identical (`editMemoryRow` refuses otherwise)."""
    served = serve(M.new_memory_row(keys, "x", topic=GOLF, categories=["sports", "fashion"]), mine=False)
    body = M.edit_memory_row(served, {"text": "fixed"}, c.agent, keys)
    before, after = open_plaintext(served, c.agent), _open_body(body, _key(served, c))
    assert after == {**before, "observation": {**before["observation"], "content": "fixed"}}
    # the same labels, even named in another order or spelling, are no change
    M.edit_memory_row(served, {"text": "a", "categories": ["fashion", "sports"], "topic": GOLF_COPY}, c.agent, keys)
    for changes in (
        {"categories": ["sports"]},
        {"categories": ["sports", "fashion", "travel"]},
        {"topic": LISBON},
        {"topic": None},
    ):
        with pytest.raises(MemoryModelError, match="author or the owner"):
            M.edit_memory_row(served, {"text": "fixed", **changes}, c.agent, keys)


def test_owner_written_memory_is_not_relabelled(c, keys):
    served = serve(M.new_memory_row(keys, "x"), mine=False, author_kind="owner")
    with pytest.raises(MemoryModelError, match="author or the owner"):
        M.edit_memory_row(served, {"topic": GOLF}, c.agent, keys)


def test_account_memory_stays_with_its_account(c, keys):
    """A memory about an account stays with that account."""
    account = str(uuid.uuid4())
    served = serve(M.new_memory_row(keys, "Uses squash merges.", account=account))
    with pytest.raises(MemoryModelError, match="stays with that account"):
        M.edit_memory_row(served, {"topic": GOLF}, c.agent, keys)
    body = M.edit_memory_row(served, {"topic": None, "text": "Uses rebase merges."}, c.agent, keys)
    assert "kid" not in body
    assert _open_body(body, _key(served, c))["about"] == [f"account:{account}"]


@pytest.mark.parametrize(
    "changes,match",
    [
        ({"metadata": {"topic": "x"}}, "not metadata"),
        ({"about": ["user"]}, "not about"),
        ({"text": ""}, "non-empty"),
        ({"categories": ["sport"]}, "mem0"),
        ({"topic": "Golf"}, "find_topic"),
        ("text", "mapping"),
    ],
)
def test_bad_changes_refused(c, keys, changes, match):
    served = serve(M.new_memory_row(keys, "x"))
    with pytest.raises(MemoryModelError, match=match):
        M.edit_memory_row(served, changes, c.agent, keys)


def test_edit_needs_a_served_memory(c, keys):
    row = M.new_memory_row(keys, "x")
    with pytest.raises(MemoryModelError, match="rev"):
        M.edit_memory_row(row, {"text": "y"}, c.agent, keys)
    made = M.new_topic_rows(keys, "Golf")
    with pytest.raises(MemoryModelError, match="not a memory"):
        M.edit_memory_row(serve(made.rows[0]), {"text": "y"}, c.agent, keys)
    with pytest.raises(UnreadableRow):
        M.edit_memory_row(serve(row), {"text": "y"}, c.travel, keys)


# -- attach_duplicate ------------------------------------------------------------------------------
def test_attach_own_duplicate_in_place(c, keys):
    """`attachDuplicate(served, {topic, categories})` files it under the topic in place if this connection
    saved it (`mine`) and it has no topic or account yet."""
    served = serve(M.new_memory_row(keys, "Plays Saturdays.", categories=["sports"]))
    body = M.attach_duplicate(served, topic=GOLF, categories=["hobbies", "sports"], agent_key=c.agent, keys=keys)
    assert "kid" not in body and body["id"] == served["id"]
    m = M.read_memory_row(apply_put(served, body), c.agent)
    assert m.topic == GOLF and m.categories == ["sports", "hobbies"]


@pytest.mark.parametrize("how", ["not mine", "on a topic", "about an account", "nothing to add"])
def test_attach_duplicate_leaves_others_alone(c, keys, how):
    """For someone else's memory (another agent's or the owner's) it returns null: report the duplicate and
    leave that memory untouched."""
    if how == "not mine":
        served = serve(M.new_memory_row(keys, "x"), mine=False)
    elif how == "on a topic":
        served = serve(M.new_memory_row(keys, "x", topic=LISBON))
    elif how == "about an account":
        served = serve(M.new_memory_row(keys, "x", account=str(uuid.uuid4())))
    else:
        served = serve(M.new_memory_row(keys, "x", categories=["sports"]))
    topic = None if how == "nothing to add" else GOLF
    assert M.attach_duplicate(served, topic=topic, categories=["sports"], agent_key=c.agent, keys=keys) is None


# -- is_definite_refusal ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "status,body,definite",
    [
        (403, {"code": "INSUFFICIENT_GRANT"}, True),
        (403, {"error": "forbidden"}, True),
        (404, {"code": "NOT_FOUND"}, True),
        (409, {"code": "REV_CONFLICT", "current_rev": 4}, True),
        (409, {"code": "KID_CONFLICT"}, True),
        (409, {"code": "HOLDERS_MISSING", "missing": []}, False),
        (500, {}, False),
        (503, {"code": "UNAVAILABLE"}, False),
        (400, {"code": "BAD_REQUEST"}, False),
    ],
)
def test_is_definite_refusal(status, body, definite):
    """if that PUT is definitely refused (`403`, `404`, `409 REV_CONFLICT` or `KID_CONFLICT`;
    `isDefiniteRefusal`) … After a network error, a timeout or a 5xx the PUT may have committed."""
    assert M.is_definite_refusal(error_from_response(status, body)) is definite


def test_unknown_outcomes_are_not_refusals():
    assert not M.is_definite_refusal(TransportError("connection reset"))
    assert not M.is_definite_refusal(ServerError(502))
    assert not M.is_definite_refusal(TimeoutError())
    assert not M.is_definite_refusal(ValueError("x"))

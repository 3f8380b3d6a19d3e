"""Building rows: new_memory_row and new_topic_rows, their plaintext shapes, wraps and refusals."""

from __future__ import annotations

import re
import uuid

import pytest

from decoy_lab import memory as M
from decoy_lab.errors import MemoryModelError
from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire

from support.memory_cast import open_plaintext, owner_key_of, serve

ACCOUNT = "0b9f4c1e-3d2a-4e5f-8a7b-1c2d3e4f5a6b"


# -- plaintext shapes, quoted from the contract --------------------------------------------------
def test_user_memory_plaintext_is_the_spec_shape(c, keys):
    """about the user: `{"v":2,"row_id":"<the row id>","observation":{"entityName":"default_user",
    "content":"Prefers short answers."},"about":["user"],"categories":["user_preferences"]}`"""
    row = M.new_memory_row(keys, "Prefers short answers.", categories=["user_preferences"])
    plain = open_plaintext(row, c.agent)
    expected = (
        '{{"v":2,"row_id":"{}","observation":{{"entityName":"default_user","content":"Prefers short answers."}},'
        '"about":["user"],"categories":["user_preferences"]}}'.format(row["id"])
    )
    assert sealing.json_bytes(plain).decode() == expected


def test_account_memory_plaintext_is_the_spec_shape(c, keys):
    """about a granted account: `{"v":2,"row_id":"<id>","observation":{"content":"Uses squash merges."},
    "about":["account:<account uuid>"]}` (never the account's name)."""
    row = M.new_memory_row(keys, "Uses squash merges.", account=ACCOUNT)
    plain = open_plaintext(row, c.agent)
    assert sealing.json_bytes(plain).decode() == (
        '{{"v":2,"row_id":"{}","observation":{{"content":"Uses squash merges."}},"about":["account:{}"]}}'.format(
            row["id"], ACCOUNT
        )
    )


def test_topic_memory_plaintext_is_the_spec_shape(c, keys):
    """attached to a topic: `{"v":2,"row_id":"<id>","observation":{"entityName":"Golf club headcovers",
    "content":"..."},"about":["topic:<topic entity row id>"],"categories":["sports","fashion"]}`"""
    tid = f"topic:{uuid.uuid4()}"
    row = M.new_memory_row(
        keys, "...", topic={"id": tid, "name": "Golf club headcovers"}, categories=["sports", "fashion"]
    )
    assert sealing.json_bytes(open_plaintext(row, c.agent)).decode() == (
        '{{"v":2,"row_id":"{}","observation":{{"entityName":"Golf club headcovers","content":"..."}},'
        '"about":["{}"],"categories":["sports","fashion"]}}'.format(row["id"], tid)
    )


def test_topic_rows_are_the_spec_shapes(c, keys):
    """the topic itself is an entity row: `{"v":2,"row_id":"<id>","entity":{"name":"Golf club headcovers",
    "entityType":"product"},"about":[]}` … a new topic gets one relation row: `{"v":2,"row_id":"<id>",
    "relation":{"from":"default_user","to":"Golf club headcovers","relationType":"<the relation>"},
    "endpoints":["user","topic:<topic entity row id>"],"about":[]}`"""
    made = M.new_topic_rows(keys, "Golf club headcovers", type="product", relation_type="is choosing")
    entity, relation = made.rows
    assert made.topic_id == f"topic:{entity['id']}"
    assert made.topic == {"id": made.topic_id, "name": "Golf club headcovers"}
    assert sealing.json_bytes(open_plaintext(entity, c.agent)).decode() == (
        '{{"v":2,"row_id":"{}","entity":{{"name":"Golf club headcovers","entityType":"product"}},"about":[]}}'.format(
            entity["id"]
        )
    )
    assert sealing.json_bytes(open_plaintext(relation, c.agent)).decode() == (
        '{{"v":2,"row_id":"{}","relation":{{"from":"default_user","to":"Golf club headcovers",'
        '"relationType":"is choosing"}},"endpoints":["user","{}"],"about":[]}}'.format(relation["id"], made.topic_id)
    )


def test_relation_defaults_from_you_and_from_a_topic(c, keys):
    """Left out, the helper writes "is interested in" from You and "includes" from a topic
    (`from` its name, first endpoint its `topic:<id>`)."""
    golf = M.new_topic_rows(keys, "Golf")
    rel = open_plaintext(golf.rows[1], c.agent)
    assert rel["relation"]["relationType"] == "is interested in"
    assert open_plaintext(golf.rows[0], c.agent)["entity"]["entityType"] == ""
    child = M.new_topic_rows(keys, "Golf club headcovers", type="product", parent=golf.topic)
    rel = open_plaintext(child.rows[1], c.agent)
    assert rel["relation"] == {"from": "Golf", "to": "Golf club headcovers", "relationType": "includes"}
    assert rel["endpoints"] == [golf.topic_id, child.topic_id]
    named = M.new_topic_rows(keys, "Putters", parent=golf.topic, relation_type="gear includes")
    assert open_plaintext(named.rows[1], c.agent)["relation"]["relationType"] == "gear includes"


# -- row envelope ---------------------------------------------------------------------------------
def test_row_fields_kid_and_wraps(c, keys):
    """`kid` = lowercase hex of the first 8 bytes of SHA-256(key); self_wrap plaintext is the raw key;
    owner_wrap is `[0x01][0x02]` + envelope whose plaintext is the 44-char base64 text of the key."""
    row = M.new_memory_row(keys, "Prefers short answers.")
    assert set(row) == {"id", "kid", "ciphertext", "owner_wrap", "self_wrap", "grantee_wraps"}
    assert uuid.UUID(row["id"]).version == 4
    assert re.fullmatch(r"[0-9a-f]{16}", row["kid"])
    for name in ("ciphertext", "owner_wrap", "self_wrap"):
        assert wire.b64encode(wire.b64decode(row[name])) == row[name]
    key = sealing.unwrap_as_agent(row["self_wrap"], c.agent)
    assert wire.kid(key) == row["kid"]
    assert owner_key_of(row, c.owner) == key  # unwrap_as_owner refuses anything but the base64 text
    assert wire.parse(row["owner_wrap"]).kind == "owner_envelope"
    assert wire.parse(row["ciphertext"], "vault").value("nonce")
    assert M.read_memory_row(serve(row), c.agent).text == "Prefers short answers."


def test_each_memory_has_its_own_key(keys):
    """Each memory has its own random 32-byte key."""
    a, b = M.new_memory_row(keys, "one"), M.new_memory_row(keys, "one")
    assert a["kid"] != b["kid"] and a["id"] != b["id"]


def test_no_grantees_no_grantee_wraps_and_no_self_via(c):
    row = M.new_memory_row(M.RecipientKeys(c.owner.public_key_b64, c.agent.public_key_b64), "x")
    assert set(row) == {"id", "kid", "ciphertext", "owner_wrap", "self_wrap"}


def test_categories_deduped_in_order(c, keys):
    """`categories` (any number of mem0's categories, deduped)"""
    row = M.new_memory_row(keys, "x", categories=["sports", "fashion", "sports", "fashion"])
    assert open_plaintext(row, c.agent)["categories"] == ["sports", "fashion"]


def test_metadata_and_about_hint_kept(c, keys):
    row = M.new_memory_row(keys, "x", metadata={"source": "chat"}, about_hint="the corner bakery")
    plain = open_plaintext(row, c.agent)
    assert plain["metadata"] == {"source": "chat"} and plain["about_hint"] == "the corner bakery"


# -- refusals --------------------------------------------------------------------------------------
@pytest.mark.parametrize("field", ["topic", "topics", "topic_name"])
def test_metadata_topic_refused_with_pointer_to_topic_argument(keys, field):
    """`newMemoryRow` refuses `metadata.topic`, `metadata.topics` and `metadata.topic_name` and points to
    its `topic` argument."""
    with pytest.raises(MemoryModelError, match=r"topic=") as err:
        M.new_memory_row(keys, "x", metadata={field: "Golf"})
    assert f"metadata.{field}" in str(err.value)


def test_owner_key_setup_must_be_finished(c):
    """`owner_public_key` … is null until the owner finishes key setup in the app (complete that setup
    before saving)."""
    keys = c.keys(owner=False)
    with pytest.raises(MemoryModelError, match="complete that setup before saving"):
        M.new_memory_row(keys, "x")
    with pytest.raises(MemoryModelError, match="complete that setup before saving"):
        M.new_topic_rows(keys, "Golf")


def test_exactly_one_about(keys):
    """Exactly one `about` value per memory: the user, one account or one topic."""
    with pytest.raises(MemoryModelError, match="exactly one about"):
        M.new_memory_row(keys, "x", topic={"id": f"topic:{uuid.uuid4()}", "name": "Golf"}, account=ACCOUNT)


@pytest.mark.parametrize("bad", ["GitHub", "account:work laptop", ""])
def test_account_is_a_uuid_never_a_name(keys, bad):
    with pytest.raises(MemoryModelError, match="uuid"):
        M.new_memory_row(keys, "x", account=bad)


@pytest.mark.parametrize("bad", [["sport"], ["travel", "Travel"], [3]])
def test_unknown_category_refused(keys, bad):
    with pytest.raises(MemoryModelError, match="mem0"):
        M.new_memory_row(keys, "x", categories=bad)


@pytest.mark.parametrize("text", ["", "   ", None])
def test_empty_text_refused(keys, text):
    with pytest.raises(MemoryModelError):
        M.new_memory_row(keys, text)


@pytest.mark.parametrize("topic", [{"id": "topic:x"}, {"name": "Golf"}, "Golf", {"id": "", "name": "Golf"}])
def test_topic_argument_needs_id_and_name(keys, topic):
    with pytest.raises(MemoryModelError, match="find_topic"):
        M.new_memory_row(keys, "x", topic=topic)


def test_oversized_row_refused(keys):
    """Maximum decoded size 100 KiB."""
    with pytest.raises(MemoryModelError, match="100 KiB"):
        M.new_memory_row(keys, "x" * (100 * 1024))


@pytest.mark.parametrize("name", ["default_user", "You", " ME ", '"user"', "USER"])
def test_topic_name_is_never_the_user(keys, name):
    """`name` is at most 200 characters and never the user (`default_user`, `you`, `user`, `me`)."""
    with pytest.raises(MemoryModelError, match="names the user"):
        M.new_topic_rows(keys, name)


def test_topic_name_at_most_200_characters(c, keys):
    made = M.new_topic_rows(keys, "n" * 200)
    assert open_plaintext(made.rows[0], c.agent)["entity"]["name"] == "n" * 200
    with pytest.raises(MemoryModelError, match="200"):
        M.new_topic_rows(keys, "n" * 201)
    with pytest.raises(MemoryModelError):
        M.new_topic_rows(keys, "  ")


def test_topic_type_from_the_list(c, keys):
    """`entityType` is one of `device`, … `trip`, or `""` when no type is given."""
    for t in M.ENTITY_TYPES:
        assert open_plaintext(M.new_topic_rows(keys, f"T {t}", type=t).rows[0], c.agent)["entity"]["entityType"] == t
    assert open_plaintext(M.new_topic_rows(keys, "Untyped", type=None).rows[0], c.agent)["entity"]["entityType"] == ""
    with pytest.raises(MemoryModelError, match="unknown topic type"):
        M.new_topic_rows(keys, "Car", type="vehicle")


def test_relation_type_at_most_100_characters(c, keys):
    """`relationType` is free text in active voice, at most 100 characters."""
    made = M.new_topic_rows(keys, "Golf", relation_type="r" * 100)
    assert open_plaintext(made.rows[1], c.agent)["relation"]["relationType"] == "r" * 100
    with pytest.raises(MemoryModelError, match="100"):
        M.new_topic_rows(keys, "Golf", relation_type="r" * 101)
    with pytest.raises(MemoryModelError):
        M.new_topic_rows(keys, "Golf", relation_type="  ")


# -- grantee wraps and via reasons -----------------------------------------------------------------
def _wraps(row):
    return {w["token_id"]: w for w in row.get("grantee_wraps", [])}


def test_grantee_wraps_follow_categories(c, keys):
    """With `grantees` from `memory-grantees`, the helper wraps each new row to them at once; a category
    grant on any of them reaches the memory."""
    row = M.new_memory_row(keys, "Window seat on long flights.", categories=["user_preferences", "travel"])
    wraps = _wraps(row)
    assert {t: w["via"] for t, w in wraps.items()} == {"tok-travel": ["category:travel"], "tok-all": ["all"]}
    key = sealing.unwrap_as_agent(row["self_wrap"], c.agent)
    for token, w in wraps.items():
        assert sealing.unwrap_as_agent(w["wrapped_key"], c.key_for(token)) == key
        m = M.read_memory_row(serve(row, to=token, mine=False), c.key_for(token))
        assert m.text == "Window seat on long flights." and m.via == w["via"]


def test_grantee_wraps_follow_the_topic(c):
    """A topic grant (`about: ["topic:<id>"]`) reaches the entity row, its memories, and a relation whose
    other ends are also granted."""
    tid = f"topic:{uuid.uuid4()}"
    keys = c.keys(topics=[tid])
    row = M.new_memory_row(keys, "x", topic={"id": tid, "name": "Golf"}, categories=["sports"])
    assert {t: w["via"] for t, w in _wraps(row).items()} == {"tok-topic": [tid], "tok-all": ["all"]}


def test_account_memory_reached_only_through_the_account(c):
    """Memories about an account are `acctmem.*` on its `account_id`: a category grant does not reach them."""
    keys = c.keys(accounts=[ACCOUNT])
    row = M.new_memory_row(keys, "Uses squash merges.", account=ACCOUNT, categories=["travel"])
    assert {t: w["via"] for t, w in _wraps(row).items()} == {
        "tok-topic": [f"account:{ACCOUNT}"],
        "tok-all": [f"account:{ACCOUNT}"],
    }


def test_new_topic_rows_wrapped_to_every_memory_grantee_only(c, keys):
    made = M.new_topic_rows(keys, "Lisbon trip", type="trip", relation_type="is planning")
    for row in made.rows:
        assert {t: w["via"] for t, w in _wraps(row).items()} == {"tok-all": ["all"]}
        got = M.read_row(serve(row, to="tok-all", mine=False), c.everything)
        assert isinstance(got, (M.TopicEntity, M.Link))


def test_child_topic_relation_needs_both_ends(c):
    """A relation needs access to every non-user end … an all-of reason such as `and:topic:<a>+account:<b>`."""
    parent = {"id": f"topic:{uuid.uuid4()}", "name": "Golf"}
    made = M.new_topic_rows(c.keys(topics=[parent["id"]]), "Putters", parent=parent)
    assert "tok-topic" not in _wraps(made.rows[1])  # the new topic is not granted to it


def _link(ends):
    row_id = str(uuid.uuid4())
    return M.decode_plaintext(
        {
            "v": 2,
            "row_id": row_id,
            "relation": {"from": "a", "to": "b", "relationType": "r"},
            "endpoints": ends,
            "about": [],
        },
        row_id,
    )


A, B = f"topic:{uuid.uuid4()}", f"topic:{uuid.uuid4()}"


@pytest.mark.parametrize(
    "ends,selectors,via",
    [
        (["user", B], {"topics": [B]}, [B]),
        (["user", B], {"topics": [A]}, []),
        (["user", B], {"all": True}, ["all"]),
        ([A, B], {"topics": [A, B]}, [f"and:{A}+{B}"]),
        ([A, B], {"topics": [A]}, []),
        ([A, B], {"all": True, "topics": [A, B]}, ["all", f"and:{A}+{B}"]),
        ([A, f"account:{ACCOUNT}"], {"topics": [A], "account_ids": [ACCOUNT]}, [f"and:{A}+account:{ACCOUNT}"]),
        ([A, f"account:{ACCOUNT}"], {"all": True}, []),
        ([A, f"account:{ACCOUNT}"], {"all": True, "account_wildcard": True}, [f"and:{A}+account:{ACCOUNT}"]),
        ([A, f"account:{ACCOUNT}"], {"categories": ["travel"], "account_ids": [ACCOUNT]}, []),
    ],
)
def test_link_reasons(ends, selectors, via):
    """A relation needs access to every non-user end; losing either grant invalidates the all-of reason.
    Do not leak an ungranted endpoint through a relation."""
    assert M.reasons_for(selectors, _link(ends)) == via


def test_topic_grants_in_bare_form_are_understood():
    row_id = str(uuid.uuid4())
    topic = M.decode_plaintext(
        {"v": 2, "row_id": row_id, "entity": {"name": "G", "entityType": ""}, "about": []}, row_id
    )
    assert M.reasons_for({"topics": [row_id]}, topic) == [f"topic:{row_id}"]
    assert M.reasons_for({"categories": ["travel"]}, topic) == []


def test_self_via_from_self_selectors(c):
    """Each row may carry `self_via`: the read reasons the saver holds on it now (worked out from the
    labels it chose)."""
    keys = c.keys(self_selectors={"categories": ["travel"]})
    assert M.new_memory_row(keys, "x", categories=["travel"])["self_via"] == ["self", "category:travel"]
    assert M.new_memory_row(keys, "x", categories=["food"])["self_via"] == ["self"]


def test_this_connection_is_never_its_own_grantee(c):
    me = {"token_id": "tok-self", "public_key": c.agent.public_key_b64, "selectors": {"all": True}}
    keys = M.RecipientKeys(c.owner.public_key_b64, c.agent.public_key_b64, [me])
    assert "grantee_wraps" not in M.new_memory_row(keys, "x")


def test_recipient_keys_from_memory_grantees_answer(c):
    body = {
        "owner_public_key": c.owner.public_key_b64,
        "self": {"token_id": "tok-self", "selectors": {"all": False, "categories": ["food"]}},
        "grantees": [
            {
                "token_id": "tok-travel",
                "public_key": c.travel.public_key_b64,
                "connection_id": "con-travel",
                "selectors": {"categories": ["travel"]},
            }
        ],
    }
    keys = M.RecipientKeys.from_response(body, c.agent.public_key_b64)
    assert keys.self_token_id == "tok-self" and keys.grantees[0].selectors.categories == {"travel"}
    assert keys.owner_public_key not in repr(keys) and "grantees=1" in repr(keys)
    row = M.new_memory_row(keys, "x", categories=["food", "travel"])
    assert row["self_via"] == ["self", "category:food"]
    assert [w["via"] for w in row["grantee_wraps"]] == [["category:travel"]]


def test_topic_given_as_any_model(c, keys):
    """`topic` is `{"id", "name"}`; the models that carry one (TopicRows, a listed Topic, a Memory on the
    topic) name the same topic."""
    made = M.new_topic_rows(keys, "Lisbon trip")
    on_topic = M.read_memory_row(serve(M.new_memory_row(keys, "a", topic=made)), c.agent)
    listed = M.Topic(made.topic_id, "Lisbon trip", "", [], [made.topic_id])
    entity = M.read_row(serve(made.rows[0]), c.agent)
    bare = {"id": made.topic_id[len("topic:") :], "name": "Lisbon trip"}
    for given in (made, made.topic, listed, on_topic, entity, bare):
        m = M.read_memory_row(serve(M.new_memory_row(keys, "b", topic=given)), c.agent)
        assert m.topic == made.topic, given


def test_building_records_its_steps_without_the_key(c, keys):
    from decoy_lab.recipes.trace import Trace

    t = Trace("save")
    row = M.new_memory_row(keys, "Prefers short answers.", trace=t)
    names = [s.name for s in t.steps]
    assert names[0] == "JSON encode (UTF-8)" and "AES-256-GCM seal" in names
    assert names.count("RSA-OAEP-SHA256 wrap content key") == 2 + len(row.get("grantee_wraps", []))
    key = sealing.unwrap_as_agent(row["self_wrap"], c.agent)
    for s in t.steps:
        assert key.hex() not in str(s.inputs) and wire.b64encode(key) not in str(s.inputs)
        assert s.output != key or s.secret_output


def test_no_plaintext_outside_ciphertext(c):
    """Never put `text`, `categories` or account names in the HTTP body outside ciphertext."""
    import json

    keys = M.RecipientKeys(c.owner.public_key_b64, c.agent.public_key_b64)
    topic = {"id": f"topic:{uuid.uuid4()}", "name": "Golf club headcovers"}
    rows = [
        M.new_memory_row(
            keys, "Navy or grey covers", topic=topic, categories=["fashion"], metadata={"note": "from chat"}
        ),
        M.new_memory_row(keys, "Uses squash merges", account=ACCOUNT, categories=["technology"]),
        *M.new_topic_rows(keys, "Lisbon trip", type="trip", relation_type="is planning").rows,
    ]
    body = json.dumps({"rows": rows})
    for secret in (
        "Navy",
        "fashion",
        "Golf",
        "from chat",
        "squash",
        ACCOUNT,
        "technology",
        "Lisbon",
        "trip",
        "planning",
        "default_user",
    ):
        assert secret not in body


def test_given_row_ids_are_used_and_checked(keys):
    """A seeded vault passes its own ids; anything but a lowercase hyphenated uuid is refused."""
    rid = "0f8fad5b-d9cb-469f-a165-70867728950e"
    assert M.new_memory_row(keys, "Seeded.", row_id=rid)["id"] == rid
    made = M.new_topic_rows(keys, "Seeded topic", ids=(rid, "7c9e6679-7425-40de-944b-e07fc1f90ae7"))
    assert made.topic_id == f"topic:{rid}" and [r["id"] for r in made.rows][1] == "7c9e6679-7425-40de-944b-e07fc1f90ae7"
    with pytest.raises(MemoryModelError, match="uuid"):
        M.new_memory_row(keys, "Bad id.", row_id="0F8FAD5B-D9CB-469F-A165-70867728950E")

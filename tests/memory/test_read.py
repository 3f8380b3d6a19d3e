"""Reading rows: read_row / read_memory_row, their refusals and traces, read_memory_rows, summaries."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from decoy_lab import memory as M
from decoy_lab.errors import UnreadableRow
from decoy_lab.recipes import sealing
from decoy_lab.recipes.trace import Trace
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

from support.memory_cast import craft, plain_memory, serve


@pytest.fixture(scope="module")
def vault(c, keys):
    """A small served store: a topic with its link and two memories, a memory about You."""
    made = M.new_topic_rows(keys, "Lisbon trip", type="trip", relation_type="is planning")
    flight = M.new_memory_row(keys, "Direct flights on Tuesdays and Fridays.", topic=made.topic, categories=["travel"])
    hotel = M.new_memory_row(keys, "Hotel near Alfama.", topic=made.topic, categories=["travel", "travel"])
    short = M.new_memory_row(keys, "Prefers short answers.", categories=["user_preferences"])
    rows = [serve(r) for r in [*made.rows, flight, hotel, short]]
    return {"made": made, "rows": rows, "ids": [r["id"] for r in rows]}


# -- one row --------------------------------------------------------------------------------------
def test_read_memory_row_returns_the_memory_with_served_metadata(c, vault):
    served = vault["rows"][2]
    m = M.read_memory_row(served, c.agent)
    assert isinstance(m, M.Memory)
    assert (m.id, m.text, m.about, m.entity_name) == (
        served["id"],
        "Direct flights on Tuesdays and Fridays.",
        vault["made"].topic_id,
        "Lisbon trip",
    )
    assert m.topic == vault["made"].topic and m.account is None and m.categories == ["travel"]
    assert (m.rev, m.kid, m.via, m.mine, m.author_kind) == (1, served["kid"], ["self"], True, "agent")
    assert m.created_at == datetime.fromisoformat(served["created_at"].replace("Z", "+00:00"))
    assert m.created_at.tzinfo == UTC and m.metadata == {}


def test_graph_rows_are_not_memories(c, vault):
    """`readMemoryRow` returns null for a graph row, so null never means unreadable."""
    entity, relation = vault["rows"][:2]
    assert M.read_memory_row(entity, c.agent) is None
    assert M.read_memory_row(relation, c.agent) is None
    topic = M.read_row(entity, c.agent)
    assert isinstance(topic, M.TopicEntity)
    assert (topic.topic_id, topic.name, topic.type) == (vault["made"].topic_id, "Lisbon trip", "trip")
    link = M.read_graph_row(relation, c.agent)
    assert isinstance(link, M.Link)
    assert (link.from_, link.to, link.relation_type, link.endpoints) == (
        "default_user",
        "Lisbon trip",
        "is planning",
        ["user", vault["made"].topic_id],
    )


def test_account_memory_reads_its_account(c, keys):
    account = str(uuid.uuid4())
    m = M.read_memory_row(serve(M.new_memory_row(keys, "Uses squash merges.", account=account)), c.agent)
    assert (m.about, m.account, m.topic, m.entity_name) == (f"account:{account}", account, None, None)


def test_a_row_as_built_reads_offline(c, keys):
    """A POST row (self_wrap, no wrapped_key) is this connection's own: readable without a server."""
    m = M.read_memory_row(M.new_memory_row(keys, "offline"), c.agent)
    assert m.text == "offline" and m.mine and m.via == ["self"] and m.rev is None


@pytest.mark.parametrize(
    "stamp,expected",
    [
        ("2026-10-05T08:10:00Z", datetime(2026, 10, 5, 8, 10, tzinfo=UTC)),
        ("2026-10-05T10:10:00.250+02:00", datetime(2026, 10, 5, 8, 10, 0, 250000, tzinfo=UTC)),
        ("2026-10-05T08:10:00", datetime(2026, 10, 5, 8, 10, tzinfo=UTC)),
    ],
)
def test_timestamps_are_utc_datetimes(c, vault, stamp, expected):
    served = dict(vault["rows"][4], created_at=stamp, updated_at=stamp)
    m = M.read_memory_row(served, c.agent)
    assert m.created_at == expected and m.updated_at.utcoffset().total_seconds() == 0


def test_rows_stamped_alike_share_one_time_and_a_bad_time_is_refused_every_time(c, vault):
    """The server stamps to the second, so rows written together serve one text: they read as
    one (immutable) datetime, not one each (~5 MB at 100,000 rows). A text that is no time is
    refused on every row that serves it, never remembered as a time."""
    stamp = "2026-10-05T08:10:00Z"
    a, b = (M.read_memory_row(dict(vault["rows"][i], created_at=stamp, updated_at=stamp), c.agent) for i in (3, 4))
    assert a.created_at == b.created_at == datetime(2026, 10, 5, 8, 10, tzinfo=UTC)
    assert a.created_at is b.created_at and a.updated_at is b.created_at
    for _ in range(2):
        with pytest.raises(UnreadableRow, match="not an ISO 8601 date-time"):
            M.read_row(dict(vault["rows"][4], created_at="last Tuesday"), c.agent)


# -- unreadable rows ------------------------------------------------------------------------------
def test_a_row_wrapped_to_another_key_is_unreadable(c, vault):
    """It throws for an unreadable row: one this connection's key does not open."""
    with pytest.raises(UnreadableRow, match="does not open wrapped_key") as err:
        M.read_memory_row(vault["rows"][2], c.travel)
    assert err.value.row_id == vault["rows"][2]["id"]


def test_kid_must_match_the_unwrapped_key(c):
    """Check `kid` against it."""
    served = craft(plain_memory("r1"), c.agent, row_id="r1", kid="00" * 8)
    with pytest.raises(UnreadableRow, match="kid check failed"):
        M.read_memory_row(served, c.agent)


def test_ciphertext_under_another_key_is_unreadable(c):
    served = craft(plain_memory("r1"), c.agent, row_id="r1")
    other = random_key()
    served["ciphertext"] = wire.b64encode(sealing.seal_json(other, plain_memory("r1")))
    with pytest.raises(UnreadableRow, match="GCM tag mismatch"):
        M.read_memory_row(served, c.agent)


def test_altered_ciphertext_is_unreadable(c, vault):
    served = dict(vault["rows"][4])
    raw = bytearray(wire.b64decode(served["ciphertext"]))
    raw[20] ^= 1
    served["ciphertext"] = wire.b64encode(bytes(raw))
    with pytest.raises(UnreadableRow, match="GCM"):
        M.read_memory_row(served, c.agent)


@pytest.mark.parametrize(
    "obj,reason",
    [
        (lambda i: plain_memory(i, v=1), "v is 1, not 2"),
        (lambda i: plain_memory(i, v="2"), "not 2"),
        (lambda i: plain_memory(i, v=True), "not 2"),
        (lambda i: {k: v for k, v in plain_memory(i).items() if k != "v"}, "v is None"),
        (lambda i: plain_memory("another-row"), "bound to row_id 'another-row'"),
        (lambda i: [1, 2], "not a JSON object"),
        (lambda i: plain_memory(i, observation={"content": 5}), "observation.content must be str"),
        (lambda i: plain_memory(i, observation={"entityName": "x"}), "observation.content is missing"),
        (lambda i: plain_memory(i, observation="text"), "observation must be an object"),
        (lambda i: plain_memory(i, about="user"), "about must be a list of strings"),
        (lambda i: plain_memory(i, about=["user", "topic:t"]), "exactly one about"),
        (lambda i: plain_memory(i, about=["Lisbon"]), "not user, topic:<id> or account:<id>"),
        (lambda i: plain_memory(i, about=["topic:"]), "not user, topic:<id> or account:<id>"),
        (lambda i: plain_memory(i, categories="travel"), "categories must be a list"),
        (lambda i: plain_memory(i, categories=[1]), "categories must be a list of strings"),
        (lambda i: plain_memory(i, metadata=["x"]), "metadata must be dict"),
        (lambda i: {"v": 2, "row_id": i, "entity": {"name": 7}, "about": []}, "entity.name must be str"),
        (
            lambda i: {"v": 2, "row_id": i, "relation": {"from": "a", "to": "b"}, "about": []},
            "relation.relationType is missing",
        ),
        (
            lambda i: {
                "v": 2,
                "row_id": i,
                "relation": {"from": "a", "to": "b", "relationType": "r"},
                "endpoints": "a",
            },
            "endpoints must be a list",
        ),
    ],
)
def test_unbound_or_mistyped_plaintext_is_unreadable(c, obj, reason):
    """… or one that opens and is not bound to its id or has a field of the wrong type. Check the
    plaintext's `v` is 2 and `row_id` equals the served `id`."""
    served = craft(obj("r1"), c.agent, row_id="r1")
    with pytest.raises(UnreadableRow, match=reason.replace("(", r"\(").replace("<", "<")):
        M.read_row(served, c.agent)


@pytest.mark.parametrize("served", [None, "row", {}, {"id": "r1", "kid": "00" * 8}, {"id": "r1"}])
def test_malformed_served_rows_are_unreadable(c, served):
    with pytest.raises(UnreadableRow):
        M.read_row(served, c.agent)


def test_not_json_is_unreadable(c):
    key = random_key()
    served = craft({}, c.agent, row_id="r1", key=key)
    served["ciphertext"] = wire.b64encode(sealing.seal_vault(key, b"not json"))
    with pytest.raises(UnreadableRow, match="not JSON"):
        M.read_row(served, c.agent)


def test_a_v2_row_of_no_known_kind_is_other(c):
    served = craft({"v": 2, "row_id": "r1", "about": []}, c.agent, row_id="r1")
    assert M.read_row(served, c.agent) is None and M.read_memory_row(served, c.agent) is None
    assert M.summarize_rows([served], c.agent).other == 1


def test_decode_plaintext_classifies_with_labels():
    """Rows whose plaintext has `entity` or `relation` instead of `observation` are graph rows."""
    p = M.decode_plaintext(plain_memory("r1", about=["topic:t1"], categories=["travel"]), "r1")
    assert (p.kind, p.labels, p.topic_id, p.text) == ("memory", ["category:travel", "topic:t1"], "topic:t1", "x")
    p = M.decode_plaintext({"v": 2, "row_id": "e", "entity": {"name": "G", "entityType": ""}, "about": []}, "e")
    assert (p.kind, p.labels, p.name) == ("topic", ["topic:e"], "G")
    p = M.decode_plaintext(
        {
            "v": 2,
            "row_id": "l",
            "relation": {"from": "a", "to": "b", "relationType": "r"},
            "endpoints": ["user", "topic:e"],
            "about": [],
        },
        "l",
    )
    assert (p.kind, p.labels) == ("link", ["topic:e"])


# -- traces ---------------------------------------------------------------------------------------
def test_a_read_records_every_step(c, vault):
    t = Trace("read")
    M.read_memory_row(vault["rows"][2], c.agent, trace=t)
    names = [s.name for s in t.steps]
    for name in (
        "RSA-OAEP-SHA256 unwrap",
        "kid check",
        "AES-256-GCM open",
        "bind check: v == 2 and row_id == id",
        "field types",
    ):
        assert name in names
    assert names.index("kid check") < names.index("AES-256-GCM open") < names.index("field types")
    assert t.ok and t.failed is None


def test_a_failed_read_keeps_the_steps_before_it(c):
    t = Trace("read")
    with pytest.raises(UnreadableRow):
        M.read_memory_row(craft(plain_memory("r1"), c.agent, row_id="r1", kid="ab" * 8), c.agent, trace=t)
    assert t.failed.name == "kid check" and "kid check failed" in t.failed.reason
    assert all(s.ok for s in t.steps[: t.steps.index(t.failed)])
    t = Trace("read")
    with pytest.raises(UnreadableRow):
        M.read_memory_row(craft(plain_memory("other"), c.agent, row_id="r1"), c.agent, trace=t)
    assert t.failed.name == "bind check: v == 2 and row_id == id" and "'other'" in t.failed.reason
    t = Trace("read")
    with pytest.raises(UnreadableRow):
        M.read_memory_row(craft(plain_memory("r1", categories=5), c.agent, row_id="r1"), c.agent, trace=t)
    assert t.failed.name == "field types"


def test_trace_never_holds_the_memory_key_unmarked(c, vault):
    t = Trace("read")
    M.read_memory_row(vault["rows"][2], c.agent, trace=t)
    key = sealing.unwrap_as_agent(vault["rows"][2]["wrapped_key"], c.agent)
    for s in t.steps:
        if s.output == key:
            assert s.secret_output, s.name
        assert key.hex() not in str(s.inputs) and wire.b64encode(key) not in str(s.inputs)
    shown = t.to_text() + t.to_html()
    assert key.hex() not in shown and wire.b64encode(key) not in shown
    assert " ".join(f"{b:02x}" for b in key[:8]) not in shown


# -- key cache ------------------------------------------------------------------------------------
def test_key_cache_skips_rsa_on_reload(c, vault, monkeypatch):
    """`key_cache` is kid → key, so a reload of unchanged rows costs no RSA work."""
    cache = M.KeyCache()
    first = M.read_memory_rows(vault["rows"], c.agent, key_cache=cache)
    assert set(cache) == {r["kid"] for r in vault["rows"]}
    calls = []
    real = sealing.unwrap_as_agent
    monkeypatch.setattr(sealing, "unwrap_as_agent", lambda *a, **k: calls.append(1) or real(*a, **k))
    again = M.read_memory_rows(vault["rows"], c.agent, key_cache=cache)
    assert calls == [] and [m.text for m in again] == [m.text for m in first]
    t = Trace()
    M.read_memory_row(vault["rows"][2], c.agent, trace=t, key_cache=cache)
    assert t.steps[0].name == "key cache"
    for key in cache.values():
        assert key.hex() not in repr(cache) and wire.b64encode(key) not in repr(cache)


def test_key_cache_entries_are_only_checked_keys(c):
    cache = {}
    with pytest.raises(UnreadableRow):
        M.read_row(craft(plain_memory("r1"), c.agent, row_id="r1", kid="cd" * 8), c.agent, key_cache=cache)
    assert cache == {}


# -- many rows ------------------------------------------------------------------------------------
def test_read_memory_rows_skips_graph_and_unreadable_rows(c, vault):
    """`readMemoryRows(memories, privateKey)` returns the memories and skips every other row."""
    broken = craft(plain_memory("r9"), c.agent, row_id="r9", kid="ef" * 8)
    rows = [broken, *vault["rows"]]
    serial = M.read_memory_rows(rows, c.agent, workers=1)
    parallel = M.read_memory_rows(rows, c.agent, workers=4)
    assert [m.id for m in serial] == [m.id for m in parallel] == vault["ids"][2:]
    assert [m.text for m in parallel] == [m.text for m in serial]
    assert parallel[1].categories == ["travel"]


def test_read_memory_rows_names_topics_from_the_listing(c, keys):
    made = M.new_topic_rows(keys, "Lisbon trip")
    stale = M.new_memory_row(keys, "x", topic={"id": made.topic_id, "name": "lisbon TRIP (old)"})
    rows = [serve(r) for r in [*made.rows, stale]]
    topics = M.list_topics(rows, c.agent)
    (m,) = M.read_memory_rows(rows, c.agent, topics)
    assert m.topic == {"id": made.topic_id, "name": "Lisbon trip"}


def test_summarize_rows_counts_every_kind(c, vault):
    """`summarizeRows(memories, privateKey)` returns `{memories, topics, links, unreadable, other,
    unreadableIds, text}`; print `text` first … e.g. "72 memories, 8 topics, 8 links, 0 unreadable"."""
    s = M.summarize_rows(vault["rows"], c.agent)
    assert (s.memories, s.topics, s.links, s.unreadable, s.other) == (3, 1, 1, 0, 0)
    assert s.text == "3 memories, 1 topic, 1 link, 0 unreadable"
    broken = craft(plain_memory("r9"), c.agent, row_id="r9", kid="ef" * 8)
    foreign = serve(M.new_memory_row(M.RecipientKeys(c.owner.public_key_b64, c.travel.public_key_b64), "x"))
    s = M.summarize_rows([*vault["rows"], broken, foreign, *vault["rows"][:2]], c.agent)
    assert s.text == "3 memories, 2 topics, 2 links, 2 unreadable"
    assert s.unreadable_ids == ["r9", foreign["id"]]
    assert "kid check failed" in s.unreadable_reasons["r9"]


def test_summary_of_nothing(c):
    assert M.summarize_rows([], c.agent).text == "0 memories, 0 topics, 0 links, 0 unreadable"

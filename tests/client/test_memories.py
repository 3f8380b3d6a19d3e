"""Reading and writing memories through Connection against the sandbox over real HTTP, checked
through the owner's app-view (what the owner's phone can open)."""

from __future__ import annotations

import uuid

import pytest

from decoy_lab import memory
from decoy_lab.client.connection import Connection
from decoy_lab.errors import HoldersMissing, InsufficientGrant, MemoryModelError
from decoy_lab.wire.crypto import AgentKey


@pytest.fixture(scope="module")
def keys3() -> list[AgentKey]:
    return [AgentKey.generate() for _ in range(3)]


def connect(sb, key, permissions=None, name="Memory test") -> Connection:
    return Connection.pair(
        sb.url,
        name=name,
        permissions=permissions,
        profile=None,
        agent_key=key,
        client_id=f"mem-{uuid.uuid4().hex[:8]}",
        on_link=lambda *a: None,
        backoff=0,
    )


@pytest.fixture(scope="module")
def writer(sb, keys3) -> Connection:
    return connect(sb, keys3[0], ["memory.read", "memory.edit", "memory.delete", "memory.save"], name="Writer")


def view(sb) -> dict[str, dict]:
    return {r["id"]: r for r in sb.owner.app_view()}


def test_save_creates_topic_relation_and_memory_in_one_post_and_the_owner_reads_them(sb, writer):
    """ "Otherwise create the entity, its relation and the first memories in **one** POST"."""
    mid = writer.save(
        "Direct morning flights run on Tuesdays and Fridays.",
        topic="Lisbon trip",
        topic_type="trip",
        link="is planning",
        categories=["travel"],
    )
    v = writer.load()
    mem = v.memory(mid)
    assert mem.text.startswith("Direct morning") and mem.categories == ["travel"] and mem.mine
    topics = v.topics
    lisbon = topics[topics["name"] == "Lisbon trip"].iloc[0]
    assert lisbon["type"] == "trip" and lisbon["memories"] == 1 and mem.topic["id"] == lisbon["id"]
    assert (v.links["relation_type"] == "is planning").any()
    seen = view(sb)
    assert seen[mid]["readable"] and seen[mid]["text"] == mem.text and not seen[mid]["problems"]
    assert seen[lisbon["row_id"]]["readable"] and not seen[lisbon["row_id"]]["problems"]


def test_a_topic_is_reused_by_normalized_name(writer):
    """ "An exact normalized match reuses the oldest topic"."""
    a = writer.save("Wants a hotel near Alfama.", topic="  “lisbon   TRIP” ", categories=["travel"])
    v = writer.load()
    assert (v.topics["name"].str.lower() == "lisbon trip").sum() == 1
    assert v.memory(a).topic["name"] == "Lisbon trip"


def test_vault_frames_are_typed(writer):
    writer.save("Prefers short answers.", categories=["user_preferences"])
    df = writer.load().memories
    assert str(df["created_at"].dt.tz) == "UTC" and str(df["rev"].dtype) == "Int64"
    assert all(isinstance(c, list) for c in df["categories"])
    assert df.loc[df["text"] == "Prefers short answers.", "topic"].isna().all()


def test_edit_keeps_the_id_and_bumps_rev_and_removing_a_label_rotates_the_key(sb, writer):
    mid = writer.save("Seat: aisle.", categories=["travel", "user_preferences"])
    first = writer.load().memory(mid)
    ans = writer.edit(mid, text="Seat: window.")
    assert ans["rev"] == first.rev + 1 and "kid" not in ans, "a text edit keeps the key"
    ans = writer.edit(mid, categories=["user_preferences"])
    after = writer.load().memory(mid)
    assert ans["kid"] != first.kid and after.kid == ans["kid"], "removing a label rotates the key"
    assert after.text == "Seat: window." and after.categories == ["user_preferences"]
    assert view(sb)[mid]["readable"] and view(sb)[mid]["categories"] == ["user_preferences"]


def test_edit_moves_a_memory_to_a_new_topic_and_back_to_you(sb, writer):
    mid = writer.save("Compare knit and leather headcovers.", categories=["sports"])
    writer.edit(mid, topic="Golf club headcovers", topic_type="product")
    v = writer.load()
    assert v.memory(mid).topic["name"] == "Golf club headcovers"
    writer.edit(mid, topic=None)
    v = writer.load()
    assert v.memory(mid).topic is None and v.memory(mid).about == "user"
    assert view(sb)[mid]["about"] == "user"


def test_rev_conflict_rereads_and_reapplies(writer, monkeypatch):
    """ "`409 REV_CONFLICT` means it changed since you read it: re-read, re-apply, retry."""
    mid = writer.save("Budget: 2000 EUR.", categories=["travel"])
    stale = dict(writer.session.served_row(mid))
    writer.edit(mid, categories=["travel", "misc"])  # someone else's change lands first
    real = writer.session.served_row
    calls = []

    def served(row_id):
        calls.append(row_id)
        return stale if len(calls) == 1 else real(row_id)

    monkeypatch.setattr(writer.session, "served_row", served)
    writer.edit(mid, text="Budget: 2500 EUR.")
    monkeypatch.undo()
    m = writer.load().memory(mid)
    assert m.text == "Budget: 2500 EUR." and m.categories == ["travel", "misc"], "the other change is kept"
    assert len(calls) >= 2


def test_holders_missing_wraps_to_the_listed_holders_and_sends_again(sb, writer, keys3, monkeypatch):
    """ "`409 HOLDERS_MISSING` lists each connection left out …: wrap the new key to them and send it again"."""
    reader = connect(sb, keys3[1], ["memory.read"], name="Reader")
    mid = writer.save("Gate code is on the booking.", categories=["travel", "misc"])
    sb.owner.share()
    assert reader.load().memory(mid) is not None
    real_keys = writer.session.keys

    def keys_without_grantees():
        k = real_keys()
        return memory.RecipientKeys(k.owner_public_key, k.agent_public_key, (), k.self_selectors, k.self_token_id)

    monkeypatch.setattr(writer.session, "keys", keys_without_grantees)
    seen = []
    real_put = writer.session.send

    def spy(method, path, body, *rest):
        try:
            return real_put(method, path, body, *rest)
        except HoldersMissing as exc:
            seen.append(exc.missing)
            raise

    monkeypatch.setattr(writer.session, "send", spy)
    writer.edit(mid, categories=["travel"])  # a rotation that forgot the reader
    monkeypatch.undo()
    assert seen and seen[0][0]["token_id"] == reader.token_id
    assert reader.load().memory(mid).categories == ["travel"], "the reader still reads the rotated memory"


def test_delete_reports_deleted_and_refused(sb, writer):
    mid = writer.save("Temporary note.")
    other = str(uuid.uuid4())
    res = writer.delete([mid, other])
    assert res.deleted == [mid] and res.refused == [other]
    assert mid not in view(sb)


def test_two_grants_see_exactly_what_they_allow_and_a_category_grant_reaches_a_new_memory(sb, writer, keys3):
    """A category grant reaches the memories in that category once the owner's phone shares them."""
    food = connect(sb, keys3[2], [{"permissions": ["memory.read"], "datatypes": ["food"]}], name="Food reader")
    everything = connect(sb, keys3[1], ["memory.read"], name="All reader")
    before = food.load()
    assert before.memories.empty
    assert before.notes and all("missing" not in n.lower() and "pair again" not in n.lower() for n in before.notes)
    f1 = writer.save("Loves pastel de nata.", categories=["food"])
    t1 = writer.save("Takes the train to Porto.", categories=["travel"])
    sb.owner.share()
    got = set(food.load().memories["id"])
    assert f1 in got and t1 not in got
    assert all("food" in c for c in food.load().memories["categories"])
    seen_all = set(everything.load().memories["id"])
    assert {f1, t1} <= seen_all
    f2 = writer.save("Allergic to peanuts.", categories=["food", "health"])
    sb.owner.share()
    assert f2 in set(food.load().memories["id"])


def test_without_memory_save_the_refusal_asks_and_the_grant_arrives(sb, keys3):
    """ "Send `permission_request` as the body of `grant-request`, unchanged, then retry the call."""
    reader = connect(sb, keys3[2], ["memory.read"], name="Asks to save")
    with pytest.raises(InsufficientGrant) as info:
        reader.save("Should not land yet.")
    req = info.value.request(reader)
    assert req.request_id
    req.wait(timeout=5, interval=0)
    assert req.granted and reader.access().can_save
    mid = reader.save("Lands after approval.")
    assert reader.load().memory(mid) is not None


def test_request_access_by_topic_name(sb, writer, keys3):
    asker = connect(sb, keys3[1], ["memory.save"], name="Topic asker")
    writer.save("Booked the hotel in Alfama.", topic="Porto trip", categories=["travel"])
    tid = writer.load().find_topic("Porto trip").id
    req = asker.request_access(["memory.read"], about=tid, reason="Plan the Porto trip")
    assert req.status in ("pending", "approved")
    req.wait(timeout=5, interval=0)
    assert any(r.get("about") for r in asker.access().frame["row"])
    sb.owner.share()  # the owner's phone wraps the topic's rows to the asker
    asker.load()  # the topic is readable now: what the connection holds names it, not its id
    acc = asker.access()
    assert "1 topic (Porto trip)" in acc.summary and tid not in acc.summary
    assert "about=Porto trip" in set(acc.frame["selection"]) and tid not in str(acc)


def test_unseal_steps_through_one_row(writer):
    mid = writer.save("Unseal me.")
    writer.load()
    t = writer.unseal(mid)
    names = [s.name for s in t.steps]
    for step in (
        "base64 decode",
        "parse agent envelope",
        "RSA-OAEP-SHA256 unwrap",
        "kid check",
        "AES-256-GCM open",
        "bind check: v == 2 and row_id == id",
    ):
        assert step in names
    assert t.ok


def test_unseal_takes_a_topic_id_as_the_topics_frame_shows_it(writer):
    """Spec: a topic is named `topic:<entity row id>` in `about`; the topics frame lists that id,
    so unseal opens the topic's entity row from it."""
    writer.save("Filed under a topic.", topic="Unseal topic", categories=["misc"])
    tid = writer.load().topics.set_index("name").loc["Unseal topic", "id"]
    assert tid.startswith("topic:")
    t = writer.unseal(tid)
    assert t.ok and t.steps[0].inputs["id"] == tid.removeprefix("topic:")


def test_unseal_names_the_failing_step_for_a_tampered_row(sb, writer):
    """The server's stored ciphertext has one bit flipped; the row as served (and as the load kept
    it) is that tampered text, so the step-through fails where the tag is checked."""
    import base64

    mid = writer.save("Tamper with me.")
    row = writer.load().served_row(mid)
    raw = bytearray(base64.b64decode(row["ciphertext"]))
    raw[-1] ^= 1

    def stored(ciphertext: str) -> None:
        with sb.state.store.tx() as con:
            con.execute("UPDATE memories SET ciphertext=? WHERE id=?", (ciphertext, mid))

    stored(base64.b64encode(bytes(raw)).decode())
    try:
        assert writer.load().served_row(mid)["ciphertext"] != row["ciphertext"]
        t = writer.unseal(mid)
    finally:
        stored(row["ciphertext"])  # the sandbox is shared by this module's tests
    assert not t.ok and t.failed.name == "AES-256-GCM open" and "tag" in t.failed.reason


def test_seal_preview_seals_without_sending(sb, writer):
    before = len(sb.owner.rows())
    row, trace = writer.seal_preview("Just looking.", topic="Lisbon trip", categories=["travel"])
    assert trace.ok and row["id"] and len(sb.owner.rows()) == before
    assert any(s.name == "AES-256-GCM seal" for s in trace.steps)


def test_sync_follows_the_cursor_and_reloads_on_410(sb, writer, keys3):
    other = connect(sb, keys3[1], ["memory.read", "memory.save"], name="Syncer")
    first = other.sync()
    assert first.full_reload and other.cursor is not None
    quiet = other.sync()
    assert quiet.changed == 0 and not quiet.full_reload
    mid = writer.save("Synced fact.", categories=["misc"])
    sb.owner.share()
    res = other.sync()
    assert mid in res.created + res.updated and res.vault.memory(mid) is not None
    assert other.load().read == 0, "rows unchanged since the last load are not opened again"
    from decoy_lab.sandbox.stores import memstore

    writer.save("One more change before the prune.")
    with sb.state.store.tx() as con:
        floor = memstore.prune(con, memstore.head(con))
    assert floor > 1
    other.cursor = str(floor - 1)  # a cursor from before the pruned floor
    res = other.sync()
    assert res.full_reload and "410" in res.reason


def test_every_row_written_is_readable_by_the_owner(sb):
    bad = [r for r in sb.owner.app_view() if not r["readable"]]
    assert bad == []


def test_bad_input_is_a_typed_error(writer):
    with pytest.raises(MemoryModelError):
        writer.save("x", categories=["not-a-category"])
    with pytest.raises(MemoryModelError):
        writer.edit(str(uuid.uuid4()))


def test_share_wraps_the_key_to_a_connection_granted_after_the_save(sb, writer):
    """`memory-wraps`: "the writer wraps it to the newly eligible connections"; no owner pass needed."""
    mid = writer.save("Prefers the 7:40 train.", categories=["health", "travel"])
    late = connect(
        sb, AgentKey.generate(), [{"permissions": ["memory.read"], "datatypes": ["health"]}], name="Late reader"
    )
    assert late.load().memory(mid) is None
    assert writer.share(mid) == 1
    got = late.load().memory(mid)
    assert got is not None and got.via == ["category:health"]
    assert writer.share(mid) == 0, "nothing left to share"

"""The owner's phone: the sharing pass, the app view, and what a read says while keys are owed."""

from __future__ import annotations

import uuid

from decoy_lab import memory
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.phone import appview
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

from support.node import requires_node, run_node
from support.sandbox_kit import Lab, saved, sealed_row

DAY = 86400
ALL_READ = {"permissions": ["memory.read"]}


# ── the schedule a read reports ───────────────────────────────────────────────────────────


def test_others_memories_are_preparing_then_failed_on_schedule(lab, alpha):
    """ "5 during the first 15 minutes, 60 during the first hour, 300 during the first 4 hours, then 3600";
    "Decoy asks for 7 days … After that the memory is listed under `failed` (`recovery: "stopped_asking"`)"."""
    reader = lab.pair("reader", ALL_READ)
    saved(alpha, grantees=False)
    body = reader.memories()
    assert body["memories"] == []
    assert body["preparing"] == [] and body["preparing_others"] == 1
    assert body["retry_after_seconds"] == 5 and body["waiting_on"] == "owner_phone"
    assert body["recovery"] == "read_again_later" and body["do_not"] == ["pair_again", "report_missing"]
    for advance, retry in ((20 * 60, 60), (2 * 3600 - 20 * 60, 300), (3 * 3600, 3600)):
        lab.clock.advance(advance)
        assert reader.memories()["retry_after_seconds"] == retry
    lab.clock.advance(7 * DAY)
    body = reader.memories()
    assert body["failed_others"] == 1 and body["failed"] == [] and body["recovery"] == "stopped_asking"
    assert "retry_after_seconds" not in body and "waiting_on" not in body and "preparing" not in body
    assert body["recovery_description"]


def test_a_late_read_asks_once_more_at_most_once_a_day(lab, alpha):
    """ "Reading again later may ask the phone once more, at most once a day; the read that asks lists the
    memory under `preparing` with a short retry time" (30)."""
    reader = lab.pair("reader", ALL_READ)
    saved(alpha, grantees=False)
    lab.clock.advance(8 * DAY + 3600)
    first = reader.memories()
    assert first["preparing_others"] == 1 and first["retry_after_seconds"] == 30
    second = reader.memories()
    assert second["failed_others"] == 1 and second["recovery"] == "stopped_asking"
    lab.clock.advance(DAY)
    assert reader.memories()["retry_after_seconds"] == 30


def test_own_memories_after_a_reconnect_with_a_new_key(lab, alpha):
    """ "With a new key the connection keeps authorship, but its earlier memories … are reported as
    `preparing` with `waiting_on: "owner_phone"`" until the owner's app shares their keys again."""
    row = saved(alpha)
    lab.clock.advance(60)
    again = lab.pair("alpha", "memory.save", key_name="alpha-new-key")
    assert again.token_id == alpha.token_id
    body = again.memories()
    assert body["memories"] == [] and body["preparing"] == [row["id"]] and body["preparing_others"] == 0
    assert body["do_not"] == ["pair_again", "report_missing"]
    report = lab.share()
    assert report.per_connection == {again.token_id: 1}
    served = again.served(row["id"])
    assert served["via"] == ["self"] and served["mine"] is True
    assert memory.read_memory_row(served, again.key).text == "Lisbon: Fridays only."
    assert "preparing" not in again.memories()


def test_preparing_unknown_then_failed_unknown(lab):
    """ "`preparing_unknown: true` with no IDs during the first day of asks, then `failed_unknown: true` with
    `recovery: "stopped_asking"`; neither says whether matching memories exist."""
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["food"]})
    body = reader.memories()
    assert body["preparing_unknown"] is True and "preparing" not in body and "preparing_others" not in body
    assert body["retry_after_seconds"] == 5 and body["do_not"] == ["pair_again"]
    assert body["recovery"] == "read_again_later"
    lab.clock.advance(DAY + 1)
    body = reader.memories()
    assert body["failed_unknown"] is True and body["recovery"] == "stopped_asking"
    assert "preparing_unknown" not in body and "retry_after_seconds" not in body


def test_shared_complete_after_a_pass(lab):
    """ "`shared_complete: true` takes the place of both when the owner's device has reported that it finished
    sharing memories with this connection after its newest grant"."""
    reader = lab.pair("reader", {"permissions": ["memory.read"], "about": [f"topic:{uuid.uuid4()}"]})
    lab.clock.advance(10)
    lab.share()
    body = reader.memories()
    assert body["shared_complete"] is True and body["shared_complete_at"].endswith("Z")
    assert "preparing_unknown" not in body and "failed_unknown" not in body
    lab.clock.advance(10)
    lab.ask(reader, {"permissions": ["memory.read"], "datatypes": ["music"], "reason": "playlists"})
    assert reader.memories().get("preparing_unknown") is True  # a newer grant: not complete for it yet


def test_unknown_state_ends_once_something_is_shared(lab, alpha):
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["food"]})
    saved(alpha, "Loves ramen", categories=["food"])
    body = reader.memories()
    assert len(body["memories"]) == 1 and "preparing_unknown" not in body and "failed_unknown" not in body


def test_the_phone_answers_a_read_after_the_first_retry():
    """ "Decoy asks the owner's phone … at once on the first read": with the phone on, a read after
    `retry_after_seconds` finds the key shared."""
    lab = Lab(auto_share_after=5)
    alpha = lab.pair("alpha", "memory.save")
    reader = lab.pair("reader", ALL_READ)
    row = saved(alpha, grantees=False)
    assert reader.memories()["preparing_others"] == 1  # never shared inside the save
    lab.clock.advance(5)
    body = reader.memories()
    assert [m["id"] for m in body["memories"]] == [row["id"]] and "preparing_others" not in body


# ── the pass: who gets which key, for which reason ────────────────────────────────────────


def test_pass_wraps_by_category_topic_relation_and_account(lab, alpha):
    """A topic grant "reaches the entity row, its memories, and a relation whose other ends are also
    granted"; a category grant reaches memories with that category; an account grant its memories."""
    keys = alpha.keys(grantees=False)
    trip = memory.new_topic_rows(keys, "Lisbon trip", type="trip")
    flights = memory.new_topic_rows(keys, "Flights", parent={"id": trip.topic_id, "name": "Lisbon trip"})
    in_trip = memory.new_memory_row(
        keys, "Hotel near the river.", topic={"id": trip.topic_id, "name": "Lisbon trip"}, categories=["travel"]
    )
    in_flights = memory.new_memory_row(keys, "Friday 08:10 direct.", topic={"id": flights.topic_id, "name": "Flights"})
    food = memory.new_memory_row(keys, "Loves ramen.", categories=["food"])
    account = str(uuid.uuid4())
    acct = memory.new_memory_row(keys, "Uses squash merges.", account=account)
    rows = [*trip.rows, *flights.rows, in_trip, in_flights, food, acct]
    assert alpha.save(rows).status_code == 201
    tid = lambda t: t.topic_id if t.topic_id.startswith("topic:") else f"topic:{t.topic_id}"  # noqa: E731
    trip_reader = lab.pair("trip", {"permissions": ["memory.read"], "about": [tid(trip)]})
    both = lab.pair("both", {"permissions": ["memory.read"], "about": [tid(trip), tid(flights)]})
    foodie = lab.pair("foodie", {"permissions": ["memory.read"], "datatypes": ["food"]})
    accountant = lab.pair("accountant", {"permissions": ["acctmem.read"], "account_id": account})
    report = lab.share()
    assert report.unreadable == [] and report.opened == len(rows)

    def via(peer):
        return {m["id"]: m["via"] for m in peer.memories()["memories"]}

    trip_entity, trip_link = trip.rows[0]["id"], trip.rows[1]["id"]
    fl_entity, fl_link = flights.rows[0]["id"], flights.rows[1]["id"]
    assert via(trip_reader) == {trip_entity: [tid(trip)], trip_link: [tid(trip)], in_trip["id"]: [tid(trip)]}
    got = via(both)
    assert got[fl_link] == [f"and:{tid(trip)}+{tid(flights)}"]
    assert got[in_flights["id"]] == [tid(flights)] and got[fl_entity] == [tid(flights)]
    assert via(foodie) == {food["id"]: ["category:food"]}
    assert via(accountant) == {acct["id"]: [f"account:{account}"]}
    assert lab.share().shared == 0  # a second pass has nothing left to do


def test_pass_reaches_a_new_grant_and_records_via(lab, alpha):
    row = saved(alpha, categories=["travel", "food"], grantees=False)
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["food"]})
    assert reader.served(row["id"]) is None
    lab.share()
    assert reader.served(row["id"])["via"] == ["category:food"]
    assert memory.read_memory_row(reader.served(row["id"]), reader.key).categories == ["travel", "food"]


# ── rows the owner's app cannot open ──────────────────────────────────────────────────────


def bad_rows(keys):
    good_key = random_key()
    rid = str(uuid.uuid4())

    def plain(row_id, **kw):
        return {
            "v": 2,
            "row_id": row_id,
            "observation": {
                "entityName": "default_user",
                "content": "x",
            },
            "about": ["user"],
            **kw,
        }

    raw_owner = sealed_row(keys, plain(rid), row_id=rid, key_bytes=good_key, owner_payload=good_key)
    kid_id = str(uuid.uuid4())
    kid_row = sealed_row(keys, plain(kid_id), row_id=kid_id)
    kid_row["kid"] = "00" * 8
    moved_id = str(uuid.uuid4())
    moved = sealed_row(keys, plain(str(uuid.uuid4())), row_id=moved_id)
    v1_id = str(uuid.uuid4())
    v1 = sealed_row(keys, plain(v1_id, v=1), row_id=v1_id)
    k = random_key()
    junk = {
        "id": str(uuid.uuid4()),
        "kid": wire.kid(k),
        "ciphertext": wire.b64encode(sealing.seal_vault(k, b"{not json")),
        "owner_wrap": wire.b64encode(sealing.wrap_to_owner(k, keys.owner_public_key)),
        "self_wrap": wire.b64encode(sealing.wrap_to_agent(k, keys.agent_public_key)),
    }
    return {"owner_wrap": raw_owner, "kid_mismatch": kid_row, "binding": moved, "version": v1, "json": junk}


def test_rows_the_app_cannot_open_are_reported_with_the_reason(lab, alpha):
    """ "The server never decrypts, so it accepts a wrongly sealed row and the app silently can't read it" —
    the owner's phone reports each such row and why (bad owner wrap, kid mismatch, not bound, bad JSON, v)."""
    reader = lab.pair("reader", ALL_READ)
    rows = bad_rows(alpha.keys(grantees=False))
    assert alpha.save(list(rows.values())).status_code == 201  # the server cannot tell
    report = lab.share()
    got = {u.id: u.problem for u in report.unreadable}
    assert got == {row["id"]: problem for problem, row in rows.items()}
    assert "44-character" in next(u.reason for u in report.unreadable if u.problem == "owner_wrap")
    assert report.shared == 0
    assert reader.memories()["preparing_others"] == len(rows)  # the phone can never share them
    view = {e["id"]: e for e in appview.app_view(lab.state)}
    for problem, row in rows.items():
        assert view[row["id"]]["readable"] is False and view[row["id"]]["problem"] == problem
        assert view[row["id"]]["reason"]
    assert "CANNOT OPEN" in appview.render(appview.app_view(lab.state))


# ── the owner's app view ──────────────────────────────────────────────────────────────────


def test_app_view_shows_text_labels_topic_and_author(lab, alpha):
    """app_view: every row as the owner's app sees it (text, categories, topic name, about, kind, author)."""
    keys = alpha.keys(grantees=False)
    trip = memory.new_topic_rows(keys, "Lisbon trip", type="trip", relation_type="is planning")
    m = memory.new_memory_row(
        keys, "Hotel near the river.", topic={"id": trip.topic_id, "name": "Lisbon trip"}, categories=["travel", "food"]
    )
    alpha.save([*trip.rows, m])
    view = {e["id"]: e for e in appview.app_view(lab.state)}
    mem = view[m["id"]]
    assert mem["kind"] == "memory" and mem["readable"] and mem["text"] == "Hotel near the river."
    assert mem["categories"] == ["travel", "food"] and mem["topic"]["name"] == "Lisbon trip"
    assert mem["author"] == "alpha" and mem["author_kind"] == "agent" and mem["problems"] == []
    ent = view[trip.rows[0]["id"]]
    assert ent["kind"] == "topic" and ent["name"] == "Lisbon trip" and ent["type"] == "trip" and ent["problems"] == []
    link = view[trip.rows[1]["id"]]
    assert link["kind"] == "link" and link["relation"] == "is planning" and link["from"] == "default_user"
    text = appview.render(appview.app_view(lab.state))
    assert "Hotel near the river." in text and "Lisbon trip" in text


def test_app_view_flags_what_looks_wrong_to_the_app(lab, alpha):
    """A topic with no link and no memories, a memory filed under a missing topic, a stale entityName."""
    keys = alpha.keys(grantees=False)
    lonely = memory.new_topic_rows(keys, "Golf", type="hobby")
    ghost = f"topic:{uuid.uuid4()}"
    orphan = memory.new_memory_row(keys, "Filed nowhere.", topic={"id": ghost, "name": "Ghost"})
    stale = memory.new_memory_row(keys, "Old name.", topic={"id": lonely.topic_id, "name": "Golf clubs"})
    alpha.save([lonely.rows[0], orphan, stale])
    view = {e["id"]: e for e in appview.app_view(lab.state)}
    assert any("no link" in p for p in view[lonely.rows[0]["id"]]["problems"])
    assert any("no topic row" in p for p in view[orphan["id"]]["problems"])
    assert any("entityName" in p for p in view[stale["id"]]["problems"])


def test_stored_rows_are_served_as_stored(lab, alpha):
    row = saved(alpha)
    stored = {r["id"]: r for r in appview.stored_rows(lab.state)}[row["id"]]
    assert stored["ciphertext"] == row["ciphertext"] and stored["owner_wrap"] == row["owner_wrap"]
    assert stored["self_wrap"] == row["self_wrap"] and stored["rev"] == 1 and stored["author"] == "alpha"


# ── an independent implementation ─────────────────────────────────────────────────────────


@requires_node
def test_node_sealed_rows_are_accepted_and_opened_by_the_owner(lab, alpha):
    """Rows sealed by the Node implementation (written from the spec on WebCrypto) are POSTed, opened by
    the owner's sharing pass, and shared with a reader that opens them with decoy_lab.memory."""
    reader = lab.pair("reader", ALL_READ)
    g = alpha.grantees()
    keys = {"ownerPublicKey": g["owner_public_key"], "agentPublicKey": alpha.key.public_key_b64, "grantees": []}
    topic = run_node(
        {
            "op": "newTopicRows",
            "name": "Golf club headcovers",
            "type": "product",
            "link": {"relationType": "is choosing"},
            "keys": keys,
        }
    )
    mem = run_node(
        {
            "op": "newMemoryRow",
            "text": "Navy or grey, no large logos.",
            "topic": {"id": topic["topicId"], "name": "Golf club headcovers"},
            "categories": ["sports", "fashion"],
            "keys": keys,
        }
    )["row"]
    rows = [*topic["rows"], mem]
    r = alpha.save(rows)
    assert r.status_code == 201 and sorted(r.json()["created"]) == sorted(x["id"] for x in rows)
    report = lab.share()
    assert report.unreadable == [] and report.per_connection[reader.token_id] == 3
    view = {e["id"]: e for e in appview.app_view(lab.state)}
    assert view[mem["id"]]["text"] == "Navy or grey, no large logos."
    assert view[mem["id"]]["topic"]["name"] == "Golf club headcovers"
    assert view[mem["id"]]["categories"] == ["sports", "fashion"]
    m = memory.read_memory_row(reader.served(mem["id"]), reader.key)
    assert m.text == "Navy or grey, no large logos." and m.via == ["all"]
    # and the author reads its own Node-sealed row back with decoy_lab.memory
    assert alpha.read(mem["id"]).categories == ["sports", "fashion"]


def test_labels_changed_by_a_non_author_do_not_decide_sharing(lab, alpha):
    """ "Only author- or owner-approved labels may determine new sharing": a Read & write connection that
    relabels someone else's memory is shown to the owner, and the phone shares by the approved labels."""
    editor = lab.pair(
        "editor",
        {"permissions": ["memory.read"], "datatypes": ["travel"]},
        {"permissions": ["memory.edit"], "datatypes": ["travel"]},
    )
    music = lab.pair("music", {"permissions": ["memory.read"], "datatypes": ["music"]})
    row = saved(alpha, "Fado night in Alfama.", categories=["travel"])
    lab.share()
    served = editor.served(row["id"])
    key = sealing.unwrap_as_agent(served["wrapped_key"], editor.key)
    plain = sealing.open_json(key, served["ciphertext"])
    plain["categories"] = ["travel", "music"]
    r = editor.put(
        "/api/agent/context/memories",
        {"id": row["id"], "expected_rev": 1, "ciphertext": wire.b64encode(sealing.seal_json(key, plain))},
    )
    assert r.status_code == 200  # the server cannot see labels
    report = lab.share()
    assert [u["id"] for u in report.unapproved] == [row["id"]]
    assert music.served(row["id"]) is None
    entry = lab.view(row["id"])
    assert entry["edited_by"] == "editor" and any("not the author" in p for p in entry["problems"])
    # the author adding the same label is approved
    body = memory.edit_memory_row(alpha.served(row["id"]), {"categories": ["travel", "music"]}, alpha.key, alpha.keys())
    assert alpha.put("/api/agent/context/memories", body).status_code == 200
    assert lab.share().unapproved == []
    assert music.served(row["id"])["via"] == ["category:music"]


def test_check_row_before_sending(lab, alpha):
    """An owner's-eye check of a row not yet sent: would the app open it, and what would it show?"""
    from decoy_lab.recipes.trace import Trace

    good = alpha.new_row("Prefers short answers.", categories=["user_preferences"])
    t = Trace("owner opens")
    entry = appview.check_row(lab.state, good, trace=t)
    assert entry["readable"] and entry["text"] == "Prefers short answers."
    assert t.ok and any("kid check" in s.name for s in t.steps)
    bad = bad_rows(alpha.keys(grantees=False))["owner_wrap"]
    t = Trace("owner opens")
    entry = appview.check_row(lab.state, bad, trace=t)
    assert entry["readable"] is False and entry["problem"] == "owner_wrap"
    assert not t.ok and t.failed is not None


def test_check_row_of_a_relation_finds_its_topic_saved_in_the_same_post(lab, alpha):
    """A relation's topic end that the same POST stored is a topic that opens: the check says
    nothing against it (it used to say "is not a topic row that opens" of every new relation)."""
    made = memory.new_topic_rows(alpha.keys(), "Lisbon trip", type="trip")
    first = memory.new_memory_row(alpha.keys(), "Direct flights on Tuesdays.", topic=made.topic)
    assert alpha.save([*made.rows, first]).status_code == 201
    link = made.rows[1]
    entry = appview.check_row(lab.state, link)
    assert entry["readable"] and entry["kind"] == "link" and entry["problems"] == []
    orphan = memory.new_topic_rows(alpha.keys(), "Never sent").rows[1]  # its topic was never stored
    assert any("is not a topic row that opens" in p for p in appview.check_row(lab.state, orphan)["problems"])


def test_own_memories_fail_after_seven_days_without_the_phone(lab, alpha):
    """`failed`: "The ids of the memories THIS connection saved that have no key yet and that Decoy has
    stopped asking the owner's phone for on its own"."""
    row = saved(alpha)
    again = lab.pair("alpha", "memory.save", key_name="alpha-other-key")
    assert again.memories()["preparing"] == [row["id"]]
    lab.clock.advance(7 * DAY + 60)
    body = again.memories()
    assert body["failed"] == [row["id"]] and body["failed_others"] == 0 and body["recovery"] == "stopped_asking"
    assert "preparing" not in body and "do_not" not in body


def test_app_view_flags_leaks_and_twins(lab, alpha):
    """ "never the account's name"; same-name topics "are listed once, as the app shows them"."""
    keys = alpha.keys(grantees=False)
    account = str(uuid.uuid4())
    rid = str(uuid.uuid4())
    leak = sealed_row(
        keys,
        {
            "v": 2,
            "row_id": rid,
            "observation": {"entityName": "GitHub", "content": "x"},
            "about": [f"account:{account}"],
        },
        row_id=rid,
    )
    a = memory.new_topic_rows(keys, "Golf", type="hobby")
    b = memory.new_topic_rows(keys, " golf ", type="hobby")
    alpha.save([leak, *a.rows, *b.rows])
    view = {e["id"]: e for e in appview.app_view(lab.state)}
    assert any("account's name" in p for p in view[rid]["problems"])
    assert any("same name" in p for p in view[a.rows[0]["id"]]["problems"])
    assert any("same name" in p for p in view[b.rows[0]["id"]]["problems"])


def test_the_spec_example_row_is_accepted_but_the_owner_cannot_open_it(lab, alpha):
    """ "The example contains synthetic ciphertext and wraps for a discarded test key … Do not submit these
    fixture wraps for a real user": the server takes them (it cannot tell), the owner's app cannot open them."""
    from support.spec_examples import EXAMPLE_CIPHERTEXT, EXAMPLE_KID, EXAMPLE_OWNER_WRAP, EXAMPLE_SELF_WRAP

    row = {
        "id": "11111111-1111-4111-8111-111111111111",
        "kid": EXAMPLE_KID,
        "ciphertext": EXAMPLE_CIPHERTEXT,
        "owner_wrap": EXAMPLE_OWNER_WRAP,
        "self_wrap": EXAMPLE_SELF_WRAP,
    }
    assert alpha.save([row]).status_code == 201
    (bad,) = lab.share().unreadable
    assert bad.id == row["id"] and bad.problem == "owner_wrap"
    assert lab.view(row["id"])["readable"] is False

"""Spec rules the other sandbox tests leave out, each checked over HTTP against the sandbox.

Every test quotes the sentence of the spec it checks; a lenient sandbox would fail it.
"""

from __future__ import annotations

import pytest

from support.sandbox_kit import Lab

# ── pairing ───────────────────────────────────────────────────────────────────────────────


def test_par_scope_naming_only_webhook_read_is_nothing_to_approve(lab):
    """ "A request that names ONLY `webhook.read` (in `scopes`, `scope` or a PAR `scope`) and
    carries no `authorization_details` is refused with `400 NOTHING_TO_APPROVE`"."""
    par = lab.client.post("/oauth/par", json={"client_id": "w", "authorization_details": [], "scope": "webhook.read"})
    assert par.status_code == 201, par.text
    r = lab.client.post("/oauth/device", json={"client_id": "w", "name": "W", "request_uri": par.json()["request_uri"]})
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "NOTHING_TO_APPROVE"
    # Named beside a real scope, webhook.read is ignored and the request stands.
    par = lab.client.post(
        "/oauth/par", json={"client_id": "w", "authorization_details": [], "scope": "webhook.read decoy.read"}
    )
    r = lab.client.post("/oauth/device", json={"client_id": "w", "name": "W", "request_uri": par.json()["request_uri"]})
    assert r.status_code == 200, r.text


def test_an_expired_refresh_token_is_not_answered_as_token_expired(lab):
    """ "`401`: `recovery: refresh` (`TOKEN_EXPIRED`, `TOKEN_REPLACED`) → `POST /oauth/token` with
    `grant_type=refresh_token`": a refresh that fails because the refresh token itself expired
    must not carry a code the spec pairs with `refresh`, or a client refreshes forever."""
    peer = lab.pair("alpha", "memory.save")
    lab.clock.advance(lab.state.refresh_ttl + 1)
    r = lab.client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": peer.refresh_token})
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    assert r.json()["recovery"] == "re_pair"
    assert r.json()["code"] not in ("TOKEN_EXPIRED", "TOKEN_REPLACED")


def test_a_reconnect_is_the_same_client_id_whatever_the_name(lab):
    """401 recovery: "with no registered browser, reconnect with the same `client_id`"; a Reconnect
    "with the same `client_id`" keeps the connection ("its access unchanged"), so a new display
    name does not make a new connection: it keeps its token id, its grants and its authorship."""
    from decoy_lab.sandbox.testing import pair_agent

    from support.sandbox_kit import key

    first = pair_agent(
        lab.client, key("alpha"), [{"permissions": ["memory.save"]}], name="Alpha", client_id="alpha-agent"
    )
    again = pair_agent(lab.client, key("alpha"), [], name="Alpha (renamed)", client_id="alpha-agent")
    assert again["token_id"] == first["token_id"]
    pol = lab.client.get("/api/agent/policies", headers={"Authorization": f"Bearer {again['access_token']}"}).json()
    assert pol["access"]["memories"]["save"] is True and pol["token"]["name"] == "Alpha (renamed)"
    other = pair_agent(lab.client, key("alpha"), [], name="Alpha", client_id="another-agent")
    assert other["token_id"] != first["token_id"]


# ── grant-request ─────────────────────────────────────────────────────────────────────────


def test_grant_request_without_a_token_is_401_whatever_the_body(lab):
    """grant-request: "security: agentAuth" and "x-permissions: any live agent token" — a call
    without one is `401` with its `recovery`, as on every other agent route, even with a bad body."""
    for body in (b"not json", b"[]", b'{"permissions": ["nope"]}'):
        r = lab.client.post("/api/agent/grant-request", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 401, (body, r.text)
        assert r.json()["recovery"]


# ── memories: preparing / failed ─────────────────────────────────────────────────────────


def test_a_vault_key_holder_is_failed_unknown_at_once(lab):
    """ "For a connection that holds the vault key there is no first day of asks: its answer
    carries `failed_unknown: true` at once." (`everything` is the whole-vault key.)"""
    body = lab.pair("vault", "everything").memories()
    assert body.get("failed_unknown") is True, body
    assert "preparing_unknown" not in body
    assert body.get("recovery") == "stopped_asking"
    assert "retry_after_seconds" not in body and "waiting_on" not in body
    # A category grant still gets its first day of asks.
    cat = lab.pair("cat", {"permissions": ["memory.read"], "datatypes": ["food"]}).memories()
    assert cat.get("preparing_unknown") is True and "failed_unknown" not in cat


def test_a_failed_unknown_read_asks_the_phone_at_most_once_a_day(lab):
    """`failed_unknown`: "Two things still ask the phone for it: a reconnect itself sends one push,
    and a read may ask once more, at most once a day per owner." The phone is off at first, so
    every push is lost (`state.phone.nudged_at` is the push waiting for it); then it is switched on."""
    from decoy_lab.sandbox.phone import schedule

    from support.sandbox_kit import saved

    def asked() -> bool:  # the push waiting for the phone, taken (a phone that is off loses it)
        took, lab.state.phone.nudged_at = lab.state.phone.nudged_at, None
        return took is not None

    alpha = lab.pair("alpha", "memory.save")
    foodie = lab.pair("foodie", {"permissions": ["memory.read"], "datatypes": ["food"]})
    fan = lab.pair("fan", {"permissions": ["memory.read"], "datatypes": ["music"]})
    ramen = saved(alpha, "Loves ramen.", categories=["food"], grantees=False)
    jazz = saved(alpha, "Listens to jazz.", categories=["music"], grantees=False)
    asked()
    lab.clock.advance(2 * 86400)
    assert foodie.memories().get("failed_unknown") is True and asked()  # this read asks the phone
    lab.clock.advance(3600)
    assert fan.memories().get("failed_unknown") is True and not asked()  # the owner was asked today
    lab.clock.advance(86400)
    assert fan.memories().get("failed_unknown") is True  # a day later a read asks again …
    schedule.configure(lab.state, auto_share_after=5)  # … and this time the phone is on to answer
    lab.clock.advance(10)
    assert fan.served(jazz["id"])["via"] == ["category:music"]
    assert foodie.served(ramen["id"])["via"] == ["category:food"]


def test_a_reconnect_sends_the_phone_one_push():
    """ "Two things still ask the phone for it: a reconnect itself sends one push, …" — a
    connection with only a category grant reconnects with a new key; the phone answers that push,
    so what it reads is shared to the new key without waiting for a day's ask."""
    from support.sandbox_kit import saved

    lab = Lab(auto_share_after=5)
    alpha = lab.pair("alpha", "memory.save")
    foodie = lab.pair("foodie", {"permissions": ["memory.read"], "datatypes": ["food"]})
    ramen = saved(alpha, "Loves ramen.", categories=["food"], grantees=False)
    lab.clock.advance(10)
    assert foodie.served(ramen["id"]) is not None  # the save's push was answered
    lab.clock.advance(2 * 86400)
    again = lab.pair("foodie", {"permissions": ["memory.read"], "datatypes": ["food"]}, key_name="foodie-new-key")
    assert again.token_id == foodie.token_id
    lab.clock.advance(10)
    assert again.served(ramen["id"])["via"] == ["category:food"]


def test_preparing_unknown_asks_the_phone_on_the_first_day_schedule():
    """`preparing_unknown`: "Decoy asks the owner's phone for it during the first day after this
    connection's approval or newest grant (about 1, 16 and 46 minutes and 4 hours after it)" —
    so a category grant approved after the memory was saved is shared once the phone is asked."""
    from support.sandbox_kit import saved

    lab = Lab(auto_share_after=5)
    alpha = lab.pair("alpha", "memory.save")
    ramen = saved(alpha, "Loves ramen.", categories=["food"], grantees=False)
    lab.clock.advance(10)
    alpha.memories()  # the phone answers the save's push: nothing else is pending
    foodie = lab.pair("foodie", {"permissions": ["memory.read"], "datatypes": ["food"]})
    assert foodie.memories()["preparing_unknown"] is True
    lab.clock.advance(30)
    assert foodie.served(ramen["id"]) is None  # reading more often does not ask more often
    lab.clock.advance(31)  # about a minute after the approval the phone is asked
    assert foodie.memories()["preparing_unknown"] is True
    lab.clock.advance(10)
    assert foodie.served(ramen["id"])["via"] == ["category:food"]


def test_after_failed_only_the_daily_read_asks_the_phone(lab):
    """ "After that the memory is listed under `failed` (`recovery: "stopped_asking"`): Decoy has
    stopped asking on its own. Reading again later may ask the phone once more, at most once a
    day; the read that asks lists the memory under `preparing` with a short retry time." The
    phone is off for a week (its pushes are lost), then on: a `failed` read does not ask it."""
    from decoy_lab.sandbox.phone import schedule

    from support.sandbox_kit import saved

    alpha = lab.pair("alpha", "memory.save")
    reader = lab.pair("reader", "memory.read")
    row = saved(alpha, grantees=False)
    assert reader.memories()["preparing_others"] == 1
    lab.clock.advance(7 * 86400 + 3600)
    lab.state.phone.nudged_at = None  # every push so far went to a phone that was off
    schedule.configure(lab.state, auto_share_after=5)
    assert reader.memories()["failed_others"] == 1
    lab.clock.advance(10)
    assert reader.memories()["failed_others"] == 1 and reader.served(row["id"]) is None
    lab.clock.advance(86400)
    assert reader.memories()["retry_after_seconds"] == 30  # the daily read that asks
    lab.clock.advance(10)
    assert reader.served(row["id"]) is not None


# ── memories: plaintext ───────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "key, value",
    [
        ("topics", ["Lisbon trip"]),
        ("topic_id", "topic:0f0e"),
        ("datatypes", ["food"]),
        ("tags", ["travel"]),
        ("relation_type", "is planning"),
        ("entity_type", "trip"),
        ("account", "Netflix"),
        ("service_name", "Netflix"),
        ("username", "alex"),
        ("password", "hunter2"),
        ("email", "a@example.com"),
        ("domain", "netflix.com"),
    ],
)
def test_labels_account_names_and_credentials_are_plaintext_rejected(lab, key, value):
    """ "Never put `text`, `categories` or account names in the HTTP body outside ciphertext";
    "Categories/topics/account labels stay encrypted"; "Keep credentials out of this memory
    store" — a row carrying one beside its ciphertext is 400 PLAINTEXT_REJECTED and not stored."""
    alpha = lab.pair("alpha", "memory.save")
    row = alpha.new_row("Prefers aisle seats.")
    r = alpha.save([dict(row, **{key: value})])
    assert r.status_code == 400 and r.json()["code"] == "PLAINTEXT_REJECTED", r.text
    assert lab.stored(row["id"]) is None


# ── memories: rotation ───────────────────────────────────────────────────────────────────


def test_a_rotation_cannot_remove_all_or_self(lab):
    """PUT: "The new key must be wrapped to every connection that reads the memory now, except
    those that read it only by a label the edit removes"; `removed_reasons`: "The labels
    (`category:…`, `topic:…`, `account:…`) the edit removes". `all` is no label: a reader of
    every memory cannot be cut off by naming it."""
    from support.memories_kit import PUT, rotation
    from support.sandbox_kit import saved

    alpha = lab.pair("alpha", "memory.save", "memory.edit")
    reader = lab.pair("reader", "memory.read")
    row = saved(alpha)
    assert reader.served(row["id"])["via"] == ["all"]
    for removed in (["all"], ["self"], ["and:topic:a+topic:b"]):
        body, _ = rotation(alpha, row["id"], lab, removed_reasons=removed)
        r = alpha.put(PUT, body)
        assert r.status_code == 400 and r.json()["field"] == "removed_reasons", (removed, r.text)
    body, _ = rotation(alpha, row["id"], lab)  # without removed_reasons: `all` is not taken as removed
    r = alpha.put(PUT, body)
    assert r.status_code == 409 and r.json()["code"] == "HOLDERS_MISSING", r.text
    assert [m["token_id"] for m in r.json()["missing"]] == [reader.token_id]
    assert lab.stored(row["id"]).kid == row["kid"] and reader.served(row["id"]) is not None


def test_its_own_memory_after_save_ended_is_grant_expired_not_404(lab):
    """ "After it ends, calls answer `403 GRANT_EXPIRED` with `permission_request`: send it and the
    owner is asked"; "An owned-but-ungranted resource answers `403 INSUFFICIENT_GRANT`". A
    memory its author saved is no secret to it, so an edit after `memory.save` ended is not 404."""
    from support.memories_kit import PUT
    from support.sandbox_kit import saved

    alpha = lab.pair("alpha", "memory.save")
    row = saved(alpha)
    served = alpha.served(row["id"])
    lab.owner.expire(alpha.token_id)
    r = alpha.put(PUT, {"id": row["id"], "expected_rev": 1, "ciphertext": served["ciphertext"]})
    assert r.status_code == 403, r.text
    assert r.json()["code"] == "GRANT_EXPIRED" and r.json()["permission_request"] == {"permissions": ["memory.save"]}
    r = alpha.post("/api/agent/context/memory-wraps", {"row_id": row["id"], "kid": row["kid"], "wraps": []})
    assert r.status_code == 403 and r.json()["code"] == "GRANT_EXPIRED", r.text
    assert lab.stored(row["id"]).rev == 1  # nothing changed
    # Someone else's memory it cannot see stays a plain 404.
    other = lab.pair("other", "memory.save")
    r = other.put(PUT, {"id": row["id"], "expected_rev": 1, "ciphertext": served["ciphertext"]})
    assert r.status_code == 404


# ── sync ──────────────────────────────────────────────────────────────────────────────────


def test_a_cursor_past_any_issued_state_is_400_not_a_server_error(lab):
    """sync `cursor`: "Client-held change-log cursor" (`^\\d+$`), answered `200`, `400` or `410` —
    a cursor too large for any state this server issued is a `400`, never a 5xx."""
    peer = lab.pair("alpha", "memory.save")
    r = peer.get("/api/agent/sync", params={"cursor": "9" * 30})
    assert r.status_code == 400 and r.json()["code"] == "INVALID_CURSOR", r.text


def test_a_memory_shared_later_reaches_the_sync_feed(lab):
    """sync: "the SAME JMAP-shaped change-log cursor feed …, so a full-access surface … refreshes in
    O(changed rows) and its durable cache converges cheaply", "narrowed to what this token may
    see": a memory that becomes readable to a connection (the owner's phone, or its author with
    memory-wraps, shares the key) shows up in that connection's feed after its cursor."""
    from support.memories_kit import WRAPS, key_of, wraps_body
    from support.sandbox_kit import saved

    alpha = lab.pair("alpha", "memory.save")
    reader = lab.pair("reader", "memory.read")
    late = lab.pair("late", "memory.read")
    row = saved(alpha, grantees=False)
    state = reader.get("/api/agent/sync", params={"cursor": "0"}).json()
    assert state["changes"] == {}  # not readable yet
    lab.share()
    r = reader.get("/api/agent/sync", params={"cursor": state["state"]}).json()
    assert row["id"] in r["changes"]["context_memory"]["updated"], r
    # A key shared by its author reaches the feed the same way.
    other = saved(alpha, "Tuesdays too.", grantees=False)
    cursor = late.get("/api/agent/sync/head").json()["head"]
    assert late.served(other["id"]) is None  # the phone has not shared this one
    key = key_of(alpha, other["id"])
    assert alpha.post(WRAPS, wraps_body(other["id"], other["kid"], key, (late, ["all"]))).json() == {"added": 1}
    r = late.get("/api/agent/sync", params={"cursor": cursor}).json()
    assert other["id"] in r["changes"]["context_memory"]["updated"], r


# ── legacy space rows ─────────────────────────────────────────────────────────────────────


def test_a_legacy_row_the_owner_edited_is_404_to_a_put(lab):
    """PUT rows: "A row the owner has edited belongs to the owner and is `404` to you.\""""
    from decoy_lab.recipes import sealing
    from decoy_lab.wire import layouts as wire

    from support.spaces_kit import EDIT, OBS, READ, ROWS, make_space, row_body

    writer = lab.pair("writer", READ, EDIT)
    made, key = make_space(lab, writer)
    sid = made["space"]["id"]
    body = row_body(sid, key, OBS)
    assert writer.post(ROWS, {"space_id": sid, "rows": [body]}).status_code == 201
    with lab.state.store.tx() as con:  # the owner edits the row on a device
        con.execute("UPDATE space_rows SET owner_edited=1 WHERE id=?", (body["id"],))
    ct = wire.b64encode(sealing.seal_space_row(key, OBS, space_id=sid, row_id=body["id"]))
    r = writer.put(ROWS, {"id": body["id"], "expected_rev": 1, "ciphertext": ct})
    assert r.status_code == 404, r.text
    assert r.json()["code"] == "NOT_FOUND"

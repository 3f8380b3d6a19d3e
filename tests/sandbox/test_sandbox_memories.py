"""POST / GET /api/agent/context/memories, memory-grantees and public-key, over HTTP."""

from __future__ import annotations

import base64
import uuid

import pytest

from decoy_lab import memory
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.wire import layouts as wire

from support.node import requires_node, run_node
from support.sandbox_kit import reseal


def test_public_key_is_the_owner_key(lab, alpha):
    """`GET /api/agent/public-key` returns the owner's RSA public key (base64 SPKI)."""
    r = alpha.get("/api/agent/public-key")
    assert r.status_code == 200
    assert r.json() == {"public_key": lab.owner.public_key_b64}
    assert lab.client.get("/api/agent/public-key").status_code == 401


def test_memory_grantees_shape(lab, alpha):
    """memory-grantees: owner key, `self` {token_id, selectors, write_selectors}, and eligible live
    connections with token_id, public_key, connection_id and selectors (never itself)."""
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["travel"]})
    lab.pair("nothing", "memory.save")  # reads nothing: not eligible
    g = alpha.grantees()
    assert g["owner_public_key"] == lab.owner.public_key_b64
    assert g["self"]["token_id"] == alpha.token_id
    assert set(g["self"]) == {"token_id", "selectors", "write_selectors"}
    assert [x["token_id"] for x in g["grantees"]] == [reader.token_id]
    one = g["grantees"][0]
    assert one["public_key"] == reader.key.public_key_b64 and one["connection_id"]
    assert one["selectors"]["categories"] == ["travel"] and one["selectors"]["all"] is False


def test_save_needs_memory_save(lab):
    """ "Without it, `POST /api/agent/context/memories` returns `403 INSUFFICIENT_GRANT`."""
    reader = lab.pair("reader", "memory.read")
    row = memory.new_memory_row(reader.keys(), "x")
    r = reader.save([row])
    assert r.status_code == 403
    body = r.json()
    assert body["code"] == "INSUFFICIENT_GRANT"
    assert body["permission_request"] == {"permissions": ["memory.save"]}
    assert body["recovery"] == "request_access"
    assert lab.stored(row["id"]) is None


def test_save_and_read_back(lab, alpha):
    """Read serves id, kid, rev, ciphertext, wrapped_key, via, mine, author_kind and timestamps."""
    row = alpha.new_row("Prefers short answers.", categories=["user_preferences"])
    r = alpha.save([row])
    assert r.status_code == 201
    assert r.json() == {"created": [row["id"]], "existing": [], "grantee_wraps": {row["id"]: 0}}
    served = alpha.served(row["id"])
    assert set(served) == {
        "id",
        "kid",
        "rev",
        "ciphertext",
        "wrapped_key",
        "via",
        "mine",
        "author_kind",
        "created_at",
        "updated_at",
    }
    assert served["kid"] == row["kid"] and served["rev"] == 1 and served["ciphertext"] == row["ciphertext"]
    assert served["via"] == ["self"] and served["mine"] is True and served["author_kind"] == "agent"
    assert served["created_at"].endswith("Z")
    m = alpha.read(row["id"])
    assert m.text == "Prefers short answers." and m.categories == ["user_preferences"]
    assert "owner_wrap" not in served  # "No owner wraps are returned."


def test_resend_is_existing_and_fills_missing_wraps(lab, alpha):
    """ "When its author resends the same rows (same id and key), they come back under `existing`
    and any missing wrap is filled in"."""
    row = alpha.new_row("Lisbon flight: Fridays only.", categories=["travel"])
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["travel"]})
    first = {k: v for k, v in row.items() if k != "grantee_wraps"}  # the first attempt carried no grantee wrap
    assert alpha.save([first]).status_code == 201
    assert reader.served(row["id"]) is None
    # the resend carries a wrap for the grantee: same id, same key
    from decoy_lab.recipes import sealing

    key = sealing.unwrap_as_agent(first["self_wrap"], alpha.key)
    resend = dict(
        first,
        grantee_wraps=[
            {
                "token_id": reader.token_id,
                "via": ["category:travel"],
                "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, reader.key.public_key_b64)),
            }
        ],
    )
    r = alpha.save([resend])
    assert r.status_code == 201 and r.json()["existing"] == [row["id"]] and r.json()["created"] == []
    assert reader.served(row["id"])["via"] == ["category:travel"]
    assert memory.read_memory_row(reader.served(row["id"]), reader.key).text == "Lisbon flight: Fridays only."
    # a lost self wrap is filled in too
    with lab.state.store.tx() as con:
        con.execute("DELETE FROM memory_wraps WHERE memory_id=? AND token_id=?", (row["id"], alpha.token_id))
    assert alpha.served(row["id"]) is None
    assert alpha.save([resend]).json()["existing"] == [row["id"]]
    assert alpha.served(row["id"]) is not None


def test_resend_writes_nothing_of_the_row_again(lab, alpha):
    """ "an id that already exists appears in existing and nothing of it is written again"."""
    row = alpha.new_row("v1")
    alpha.save([row])
    other = alpha.new_row("a different text")
    resend = dict(other, id=row["id"])  # same id, another key and ciphertext
    r = alpha.save([resend])
    assert r.json()["existing"] == [row["id"]]
    assert lab.stored(row["id"]).ciphertext == row["ciphertext"]
    assert lab.stored(row["id"]).kid == row["kid"]
    assert alpha.read(row["id"]).text == "v1"


def test_another_connections_resend_adds_nothing(lab, alpha):
    """ "anyone else's resend of an id adds nothing"."""
    row = alpha.new_row("mine")
    alpha.save([row])
    beta = lab.pair("beta", "memory.save")
    copy = memory.new_memory_row(beta.keys(), "mine")
    copy = dict(copy, id=row["id"], kid=row["kid"])
    r = beta.save([copy])
    assert r.status_code == 201 and r.json()["existing"] == [row["id"]]
    assert [w.token_id for w in lab.wraps(row["id"])] == [alpha.token_id]
    assert beta.served(row["id"]) is None
    assert lab.stored(row["id"]).author_token == alpha.token_id


def test_batch_is_not_atomic_but_each_row_is(lab, alpha, monkeypatch):
    """ "Each row lands together with its wraps or not at all" and "the batch as a whole is not atomic"."""
    r1, r2 = alpha.new_row("one"), alpha.new_row("two")
    real = ms.put_wrap

    def flaky(con, w):
        if w.memory_id == r2["id"]:
            raise RuntimeError("disk full")
        return real(con, w)

    monkeypatch.setattr(ms, "put_wrap", flaky)
    with pytest.raises(RuntimeError):
        alpha.save([r1, r2])
    monkeypatch.setattr(ms, "put_wrap", real)
    assert lab.stored(r1["id"]) is not None and len(lab.wraps(r1["id"])) == 1
    assert lab.stored(r2["id"]) is None and lab.wraps(r2["id"]) == []
    r = alpha.save([r1, r2])
    assert r.json() == {"created": [r2["id"]], "existing": [r1["id"]], "grantee_wraps": {r2["id"]: 0}}


def test_at_most_200_rows(lab, alpha):
    """`rows` … `maxItems: 200`."""
    row = alpha.new_row("x")
    r = alpha.save([row] * 201)
    assert r.status_code == 400 and r.json()["code"] == "TOO_MANY_ROWS"
    assert lab.stored(row["id"]) is None


def test_ciphertext_at_most_100_kib(lab, alpha):
    """ "Maximum decoded size 100 KiB"."""
    row = alpha.new_row("x")
    big = wire.build("vault", nonce=b"\0" * 12, ciphertext=b"\0" * (100 * 1024 - 29), tag=b"\0" * 16)
    assert len(big) == 100 * 1024 + 1
    r = alpha.save([reseal(row, ciphertext=wire.b64encode(big))])
    assert r.status_code == 400 and r.json()["code"] == "CIPHERTEXT_TOO_LARGE"
    assert r.json()["field"] == "rows[0].ciphertext"
    ok = wire.build("vault", nonce=b"\0" * 12, ciphertext=b"\0" * (100 * 1024 - 30), tag=b"\0" * 16)
    assert alpha.save([reseal(row, ciphertext=wire.b64encode(ok))]).status_code == 201


@pytest.mark.parametrize("kid", ["5E45D83427D094D8", "5e45d83427d094d", "5e45d83427d094d8aa", "zz45d83427d094d8", 12])
def test_kid_is_16_lowercase_hex(lab, alpha, kid):
    """`kid` pattern `^[0-9a-f]{16}$`."""
    r = alpha.save([reseal(alpha.new_row("x"), kid=kid)])
    assert r.status_code == 400 and r.json()["code"] == "INVALID_KID" and r.json()["field"] == "rows[0].kid"


@pytest.mark.parametrize("field", ["ciphertext", "owner_wrap", "self_wrap"])
@pytest.mark.parametrize("spoil", ["urlsafe", "unpadded", "whitespace"])
def test_standard_padded_base64_everywhere(lab, alpha, field, spoil):
    """ "All binary fields are standard padded base64"."""
    row = alpha.new_row("x" * 40)
    raw = base64.b64decode(row[field])
    padded = raw + b"\0" * ((1 - len(raw)) % 3)  # a length that needs "==" padding
    text = {
        "urlsafe": "-_" + row[field][2:],
        "unpadded": base64.b64encode(padded).decode().rstrip("="),
        "whitespace": row[field][:20] + "\n" + row[field][20:],
    }[spoil]
    r = alpha.save([reseal(row, **{field: text})])
    assert r.status_code == 400
    assert r.json()["code"] == "INVALID_BASE64" and r.json()["field"] == f"rows[0].{field}"


def test_self_wrap_must_be_a_headerless_agent_envelope(lab, alpha):
    """`self_wrap` = headerless envelope; an owner ENVELOPE there is refused naming the field."""
    lab.state.strict = True  # --strict: a layout fault is refused, not stored
    row = alpha.new_row("x")
    r = alpha.save([reseal(row, self_wrap=row["owner_wrap"])])
    assert r.status_code == 400 and r.json()["code"] == "INVALID_WRAP"
    assert r.json()["field"] == "rows[0].self_wrap"
    assert lab.stored(row["id"]) is None


def test_owner_wrap_needs_the_0102_header(lab, alpha):
    """ "`owner_wrap` = `[0x01][0x02]` followed by the same envelope"."""
    lab.state.strict = True  # --strict: a layout fault is refused, not stored
    row = alpha.new_row("x")
    r = alpha.save([reseal(row, owner_wrap=row["self_wrap"])])
    assert r.status_code == 400 and r.json()["code"] == "INVALID_WRAP"
    assert r.json()["field"] == "rows[0].owner_wrap"


def test_ciphertext_must_be_a_vault_blob(lab, alpha):
    """`ciphertext` = VAULT SealedBlob `[0x01 version][0x01 mode]…`."""
    lab.state.strict = True  # --strict: a layout fault is refused, not stored
    row = alpha.new_row("x")
    r = alpha.save([reseal(row, ciphertext=row["owner_wrap"])])
    assert r.status_code == 400 and r.json()["code"] == "INVALID_CIPHERTEXT"
    assert r.json()["field"] == "rows[0].ciphertext"


@pytest.mark.parametrize("where", ["row", "top", "grantee"])
@pytest.mark.parametrize("key", ["text", "categories", "content", "name", "label", "value", "observation", "entity"])
def test_plaintext_keys_rejected_anywhere(lab, alpha, where, key):
    """ "Never put `text`, `categories` or account names in the HTTP body outside ciphertext."""
    row = alpha.new_row("x")
    if where == "row":
        body = {"rows": [reseal(row, **{key: "Prefers short answers."})]}
    elif where == "top":
        body = {"rows": [row], key: ["travel"]}
    else:
        body = {
            "rows": [
                reseal(
                    row,
                    grantee_wraps=[
                        {"token_id": alpha.token_id, "via": ["all"], "wrapped_key": row["self_wrap"], key: "x"}
                    ],
                )
            ]
        }
    r = alpha.post("/api/agent/context/memories", body)
    assert r.status_code == 400 and r.json()["code"] == "PLAINTEXT_REJECTED"
    assert lab.stored(row["id"]) is None


def test_both_wraps_required(lab, alpha):
    """ "Both wraps are required." """
    row = alpha.new_row("x")
    for missing in ("owner_wrap", "self_wrap", "kid", "id", "ciphertext"):
        body = {k: v for k, v in row.items() if k != missing}
        r = alpha.save([body])
        assert r.status_code == 400 and r.json()["field"] == f"rows[0].{missing}", missing


def test_id_is_a_uuid(lab, alpha):
    r = alpha.save([reseal(alpha.new_row("x"), id="not-a-uuid")])
    assert r.status_code == 400 and r.json()["code"] == "INVALID_ID"


def test_grantee_wraps_only_for_reasons_the_recipient_holds(lab, alpha):
    """ "It accepts other-recipient wraps only for reasons that recipient holds; `self` cannot be used
    for another connection." """
    travel = lab.pair("travel", {"permissions": ["memory.read"], "datatypes": ["travel"]})
    food = lab.pair("food", {"permissions": ["memory.read"], "datatypes": ["food"]})
    from decoy_lab.recipes import sealing

    row = alpha.new_row("Lisbon", categories=["travel"], grantees=False)
    key = sealing.unwrap_as_agent(row["self_wrap"], alpha.key)

    def wrap_for(peer, via):
        return {
            "token_id": peer.token_id,
            "via": via,
            "wrapped_key": wire.b64encode(sealing.wrap_to_agent(key, peer.key.public_key_b64)),
        }

    row["grantee_wraps"] = [wrap_for(travel, ["category:travel", "category:food"]), wrap_for(food, ["self"])]
    r = alpha.save([row])
    assert r.json()["grantee_wraps"] == {row["id"]: 1}
    assert travel.served(row["id"])["via"] == ["category:travel"]
    assert food.served(row["id"]) is None
    m = memory.read_memory_row(travel.served(row["id"]), travel.key)
    assert m.text == "Lisbon"


def test_memory_py_row_with_grantees_reaches_them_at_once(lab, alpha):
    """ "With `grantees` from `memory-grantees`, the helper wraps each new row to them at once"."""
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["travel"]})
    row = alpha.new_row("Lisbon", categories=["travel"])
    assert alpha.save([row]).json()["grantee_wraps"] == {row["id"]: 1}
    assert memory.read_memory_row(reader.served(row["id"]), reader.key).text == "Lisbon"


def test_via_is_rechecked_against_live_grants(lab, alpha):
    """ "The server rechecks reasons against live grants on every read."""
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["travel"]})
    row = alpha.new_row("Lisbon", categories=["travel"])
    alpha.save([row])
    assert reader.served(row["id"]) is not None
    lab.owner.expire(reader.token_id)
    r = reader.get("/api/agent/context/memories")
    assert r.status_code == 200  # "Any authenticated live agent token"
    assert all(m["id"] != row["id"] for m in r.json()["memories"])


def test_revoked_policy_drops_the_reason(lab, alpha):
    """A reason whose grant is revoked is not served, while the connection's other grants still are."""
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["travel"]})
    lab.ask(reader, {"permissions": ["memory.read"], "datatypes": ["food"], "reason": "recipes"})
    t = alpha.new_row("Lisbon", categories=["travel"])
    f = alpha.new_row("Loves ramen", categories=["food"])
    alpha.save([t, f])
    with lab.state.store.tx() as con:
        pol = [
            r["id"]
            for r in con.execute("SELECT id, rows FROM policies WHERE token_id=?", (reader.token_id,))
            if "travel" in r["rows"]
        ]
    assert pol
    for p in pol:
        lab.owner.revoke(reader.token_id, p)
    ids = [m["id"] for m in reader.memories()["memories"]]
    assert f["id"] in ids and t["id"] not in ids


def test_owner_key_missing_refuses_save(lab, alpha, monkeypatch):
    """owner_public_key "is null until the owner finishes key setup … (complete that setup before saving)"."""
    row = alpha.new_row("x")
    monkeypatch.setattr(type(lab.owner), "public_key_b64", property(lambda self: None))
    assert alpha.grantees()["owner_public_key"] is None
    assert alpha.get("/api/agent/public-key").status_code == 404
    r = alpha.save([row])
    assert r.status_code == 409 and r.json()["code"] == "OWNER_KEY_MISSING"


def test_not_json_and_not_object(lab, alpha):
    r = lab.client.post(
        "/api/agent/context/memories", content=b"{", headers={**alpha.headers, "Content-Type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["code"] == "INVALID_JSON"
    assert alpha.post("/api/agent/context/memories", [1]).status_code == 400
    assert alpha.post("/api/agent/context/memories", {"rows": []}).status_code == 400


def test_unauthenticated_is_401(lab):
    r = lab.client.get("/api/agent/context/memories")
    assert r.status_code == 401
    r = lab.client.post("/api/agent/context/memories", json={"rows": [{"id": str(uuid.uuid4())}]})
    assert r.status_code == 401


def test_self_via_keeps_the_own_wrap_for_held_reasons_only(lab):
    """`self_via`: "its own wrap is kept for these only, and with none it keeps no wrap"; without it the wrap
    is kept "for the reasons the server can see that the saver holds"."""
    saver = lab.pair("saver", "memory.save", {"permissions": ["memory.read"], "datatypes": ["food"]})
    both = saver.new_row("ramen", categories=["food"])
    assert both["self_via"] == ["self", "category:food"]  # decoy_lab.memory works it out from memory-grantees' self
    unheld = dict(saver.new_row("x", categories=["travel"]), self_via=["category:travel"])
    none = dict(saver.new_row("y"), self_via=[])
    bare = {k: v for k, v in saver.new_row("z").items() if k != "self_via"}
    assert saver.save([both, unheld, none, bare]).status_code == 201
    assert saver.served(both["id"])["via"] == ["self", "category:food"]
    assert saver.served(bare["id"])["via"] == ["self"]
    body = saver.memories()
    assert sorted(body["preparing"]) == sorted([unheld["id"], none["id"]])  # no own wrap kept: owed to it
    lab.share()  # the owner's phone shares its own memories back
    assert saver.served(none["id"])["via"] == ["self"]


def test_save_after_the_grant_ended_is_grant_expired(lab, alpha):
    """ "After the end date nothing is held, calls answer `403 GRANT_EXPIRED` with `permission_request`"."""
    row = alpha.new_row("x")
    lab.owner.expire(alpha.token_id)
    lab.clock.advance(1)
    r = alpha.save([row])
    assert r.status_code == 403 and r.json()["code"] == "GRANT_EXPIRED"
    assert r.json()["permission_request"]["permissions"] == ["memory.save"]
    assert lab.stored(row["id"]) is None


@requires_node
def test_node_sealed_rows_with_grantee_wraps_and_a_resend(lab, alpha):
    """A row sealed by the independent Node implementation, wrapped to a grantee from memory-grantees:
    the server admits the wrap, the grantee opens it with decoy_lab.memory, and a resend is `existing`."""
    reader = lab.pair("reader", {"permissions": ["memory.read"], "datatypes": ["food"]})
    g = alpha.grantees()
    keys = {
        "ownerPublicKey": g["owner_public_key"],
        "agentPublicKey": alpha.key.public_key_b64,
        "grantees": g["grantees"],
    }
    row = run_node({"op": "newMemoryRow", "text": "Loves ramen.", "categories": ["food"], "keys": keys})["row"]
    assert row["grantee_wraps"][0]["via"] == ["category:food"]
    r = alpha.save([row])
    assert r.status_code == 201 and r.json()["grantee_wraps"] == {row["id"]: 1}
    m = memory.read_memory_row(reader.served(row["id"]), reader.key)
    assert m.text == "Loves ramen." and m.via == ["category:food"]
    assert alpha.save([row]).json() == {"created": [], "existing": [row["id"]], "grantee_wraps": {}}


def test_a_keyless_connection_cannot_save_and_is_owed_nothing(lab, alpha):
    """Wraps are to a connection's public key: one paired without a key has no self_wrap to give."""
    from decoy_lab.sandbox.testing import pair_agent

    tok = pair_agent(
        lab.client, None, [{"permissions": ["memory.save"]}, {"permissions": ["memory.read"]}], name="keyless"
    )
    headers = {"Authorization": f"Bearer {tok['access_token']}"}
    alpha.save([alpha.new_row("x")])
    body = lab.client.get("/api/agent/context/memories", headers=headers).json()
    assert body == {"memories": []}
    r = lab.client.post("/api/agent/context/memories", json={"rows": [alpha.new_row("y")]}, headers=headers)
    assert r.status_code == 409 and r.json()["code"] == "AGENT_KEY_MISSING"


def test_unsealed_json_in_ciphertext_is_plaintext_rejected(lab, alpha):
    """Text and labels "stay inside ciphertext": base64 of the plaintext JSON itself is refused as plaintext."""
    row = alpha.new_row("x")
    plain = wire.b64encode(b'{"v":2,"row_id":"%s","observation":{"content":"x"}}' % row["id"].encode())
    r = alpha.save([reseal(row, ciphertext=plain)])
    assert r.status_code == 400 and r.json()["code"] == "PLAINTEXT_REJECTED"
    assert r.json()["field"] == "rows[0].ciphertext"

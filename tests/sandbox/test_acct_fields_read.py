"""Reading an account's secret fields: each served with this connection's wrap of its CURRENT key,
the grants re-checked on every read, a deleted account gone — over HTTP against the sandbox.

001, `account_fields_list`: "The encrypted secret fields on this account that this connection may
open: each field it holds a key wrap for, re-checked against its grants on every read." "`preparing`
is present when fields this connection may open have no key for its CURRENT key yet … Those fields
are missing from `fields`, not gone." "`404` … The account was deleted (`ACCOUNT_DELETED`); its
fields are no longer served."

The route reads the fields and this connection's wraps of them in one query (acctstore
`fields_with_wrap`); these pin that each connection is served its own wrap, that a wrap of an older
key is not served, and that nothing of a read is kept for the next one.
"""

from __future__ import annotations

import uuid

from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import random_key

from support.acctfamily_kit import ACCOUNTS, create, delete, field_body, open_field, owner_pk


def _fields(peer, account_id: str):
    return peer.get(f"{ACCOUNTS}/{account_id}/fields")


def _policy_of(peer) -> str:
    [policy] = peer.get("/api/agent/policies").json()["policies"]
    return policy["id"]


def _two_fields_shared(lab):
    """A maker's account with two fields, and a reader (`account.read` on it) the phone shared both with."""
    maker = lab.pair("maker", "account.create")
    made = create(maker)
    bodies = []
    for value in ("sk-a", "sk-b"):
        body, key = field_body(maker, made["id"], value)
        assert maker.post(f"{ACCOUNTS}/{made['id']}/fields", body).status_code == 201
        bodies.append((body, key))
    reader = lab.pair("reader", {"permissions": ["account.read"], "account_id": made["id"]})
    assert lab.client.post("/_sandbox/keep", json={}).json()["field_wraps"] == 2
    return maker, made, reader, bodies


def test_each_connection_is_served_its_own_wrap_of_every_field(lab):
    maker, made, reader, bodies = _two_fields_shared(lab)
    mine, theirs = _fields(maker, made["id"]).json(), _fields(reader, made["id"]).json()
    want = [f["id"] for f in mine["fields"]]  # oldest first; the same for both
    assert sorted(want) == sorted(b["id"] for b, _ in bodies) and [f["id"] for f in theirs["fields"]] == want
    assert "preparing" not in theirs and theirs["fields_rev"] == mine["fields_rev"] == 2
    assert sorted(open_field(reader, f)["value"] for f in theirs["fields"]) == ["sk-a", "sk-b"]
    assert [open_field(maker, f)["value"] for f in mine["fields"]] == [
        open_field(reader, f)["value"] for f in theirs["fields"]
    ]
    assert all(m["wrapped_key"] != t["wrapped_key"] for m, t in zip(mine["fields"], theirs["fields"], strict=True))
    assert [f["written_by_self"] for f in mine["fields"]] == [True, True]
    assert [f["written_by_self"] for f in theirs["fields"]] == [False, False]


def test_a_wrap_of_an_older_key_is_not_served_the_field_is_preparing(lab):
    """The maker rotates the first field's key and wraps the new one to itself only: the reader's
    wrap is of the old key, so that field is missing from its `fields`, counted in `preparing_others`."""
    maker, made, reader, bodies = _two_fields_shared(lab)
    (first, _), (second, _) = bodies
    key = random_key()
    plain = {"id": first["id"], "account_id": made["id"], "fieldType": "concealed-string", "label": "API key"}
    rotated = {
        "expected_rev": 1,
        "kid": wire.kid(key),
        "ciphertext": wire.b64encode(sealing.seal_json(key, {**plain, "value": "sk-a2"})),
        "owner_wrap": wire.b64encode(sealing.wrap_to_owner(key, owner_pk(maker))),
        "self_wrap": wire.b64encode(sealing.wrap_to_agent(key, maker.key.public_key_b64)),
    }
    r = maker.put(f"{ACCOUNTS}/{made['id']}/fields/{first['id']}", rotated)
    assert r.status_code == 200 and r.json()["rotated"] is True, r.text
    theirs = _fields(reader, made["id"]).json()
    assert [f["id"] for f in theirs["fields"]] == [second["id"]]
    assert theirs["preparing"] == [] and theirs["preparing_others"] == 1
    mine = {f["id"]: f for f in _fields(maker, made["id"]).json()["fields"]}
    assert {i: f["kid"] for i, f in mine.items()} == {first["id"]: wire.kid(key), second["id"]: second["kid"]}
    assert open_field(maker, mine[first["id"]])["value"] == "sk-a2"


def test_the_grants_are_checked_again_on_the_next_read(lab):
    """Nothing of one read is kept for the next: once the owner takes the grant away, the very next
    read is refused."""
    maker, made, reader, _ = _two_fields_shared(lab)
    assert len(_fields(reader, made["id"]).json()["fields"]) == 2
    lab.owner.revoke(reader.token_id, _policy_of(reader))
    r = _fields(reader, made["id"])
    assert r.status_code == 403 and r.json()["code"] in ("SCOPE_MISSING", "GRANT_EXPIRED"), r.text
    assert len(_fields(maker, made["id"]).json()["fields"]) == 2, "the maker's own read is untouched"


def test_a_deleted_account_is_account_deleted_and_an_unknown_one_not_found(lab):
    maker = lab.pair("maker", "account.create", "account.delete")
    made = create(maker)
    body, _ = field_body(maker, made["id"])
    assert maker.post(f"{ACCOUNTS}/{made['id']}/fields", body).status_code == 201
    assert delete(maker, f"{ACCOUNTS}/{made['id']}").status_code == 200
    gone = _fields(maker, made["id"])
    assert gone.status_code == 404 and gone.json()["code"] == "ACCOUNT_DELETED", gone.text
    unknown = _fields(maker, str(uuid.uuid4()))
    assert unknown.status_code == 404 and unknown.json()["code"] == "NOT_FOUND", unknown.text

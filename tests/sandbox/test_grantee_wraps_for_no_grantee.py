"""Grantee wraps that name no other live connection are dropped, never a 500, over HTTP.

Spec 001, POST memories: "Other wraps are admitted only for the recipient's current grants; self
never authorizes another connection", and the answer holds the "admitted grantee count per created
row". A token id no live connection holds (made up, or a connection the owner revoked, which
"inherits nothing") has no grants, and the caller itself is no grantee of its own row.
"""

from __future__ import annotations

import uuid

import pytest

from decoy_lab.recipes import sealing
from decoy_lab.wire import layouts as wire

from support.memories_kit import WRAPS
from support.sandbox_kit import LoopbackLab, key

FOOD = {"permissions": ["memory.read"], "datatypes": ["food"]}
MUSIC = {"permissions": ["memory.read"], "datatypes": ["music"]}  # no other test's peer reads it


@pytest.fixture(scope="module")
def lab(sb):
    return LoopbackLab(sb)


def wrap_to(row: dict, author, token_id: str, public_key_b64: str, via: list[str]) -> dict:
    """A grantee wrap of `row`'s key (read back from the author's own wrap) to any key."""
    k = sealing.unwrap_as_agent(row["self_wrap"], author.key)
    return {"token_id": token_id, "via": via, "wrapped_key": wire.b64encode(sealing.wrap_to_agent(k, public_key_b64))}


def test_a_wrap_for_a_revoked_or_made_up_token_is_dropped(lab):
    author = lab.pair("dropper", "memory.save")
    reader = lab.pair("dropper's reader", FOOD)
    gone = lab.pair("dropper's revoked reader", FOOD)
    lab.owner.revoke(gone.token_id)
    row = author.new_row("Allergic to peanuts.", categories=["food"])
    assert [w["token_id"] for w in row["grantee_wraps"]] == [reader.token_id]  # memory-grantees lists the live one
    row["grantee_wraps"] += [
        wrap_to(row, author, gone.token_id, gone.key.public_key_b64, ["category:food"]),
        wrap_to(row, author, str(uuid.uuid4()), key("nobody").public_key_b64, ["category:food"]),
    ]
    r = author.save([row])
    assert r.status_code == 201, r.text
    assert r.json()["grantee_wraps"] == {row["id"]: 1}
    assert reader.read(row["id"]).text == "Allergic to peanuts."
    stored = next(s for s in lab.client.get("/_sandbox/rows").json()["rows"] if s["id"] == row["id"])
    assert [w["token_id"] for w in stored["grantee_wraps"]] == [reader.token_id]
    # the same wraps sent later through memory-wraps add nothing either
    k = sealing.unwrap_as_agent(row["self_wrap"], author.key)
    body = {"row_id": row["id"], "kid": wire.kid(k), "wraps": row["grantee_wraps"][1:]}
    r = author.post(WRAPS, body)
    assert r.status_code == 200 and r.json() == {"added": 0}, r.text


def test_a_wrap_naming_the_caller_itself_is_no_grantee_wrap(lab):
    """Sent without `self_via`, the saver's own wrap keeps "the reasons on its admitted grantee
    wraps": a wrap it addressed to itself is not one, so `category:music` is not added to its own."""
    author = lab.pair("self-addresser", "memory.save", MUSIC)
    row = author.new_row("Plays cello on Sundays.", categories=["music"], grantees=False)
    del row["self_via"]
    row["grantee_wraps"] = [wrap_to(row, author, author.token_id, author.key.public_key_b64, ["category:music"])]
    r = author.save([row])
    assert r.status_code == 201, r.text
    assert r.json()["grantee_wraps"] == {row["id"]: 0}
    assert author.served(row["id"])["via"] == ["self"]

"""Who may change or remove a stored memory, and what the sandbox answers the rest, over HTTP:
a reader is refused `403` with the `permission_request` for the one reason it reads the memory
by; a connection that cannot see a memory is answered `404` as for an id that never existed; the
author whose "Save memories" ended is told so.

Spec 001: "**Memories.** `memory.save` lets you save, and read and edit what you saved while you
hold it. Other memories need `memory.read` (by category or topic); changing them is `memory.edit`
and removing them `memory.delete`. Memories about an account are `acctmem.*` on its `account_id`."
"""

from __future__ import annotations

import uuid

import pytest

from support.memories_kit import PUT, reseal_text
from support.sandbox_kit import saved

DELETE = "/api/agent/context/memories/delete"
ACCOUNT = "4dca4a10-7918-4849-9e44-c731d72e8e13"
TOPIC = "topic:064a510f-9c5c-4492-96b7-7019a2926fde"
EDIT_REFUSAL = "editing this memory needs memory.edit on a reason this connection reads it through"
NOT_VISIBLE = "no memory with this id is visible to this connection"


def edit_by(peer, row_id: str):
    return peer.put(PUT, reseal_text(peer, row_id, "changed"))


@pytest.mark.parametrize(
    "grant, about, ask",
    [
        # by category: memory.edit on that category
        (
            {"permissions": ["memory.read"], "datatypes": ["travel"]},
            {"categories": ["travel"]},
            {"permissions": ["memory.edit"], "datatypes": ["travel"]},
        ),
        # by topic: memory.edit about that topic
        (
            {"permissions": ["memory.read"], "about": [TOPIC]},
            {"topic": {"id": TOPIC, "name": "Lisbon"}},
            {"permissions": ["memory.edit"], "about": [TOPIC]},
        ),
        # about an account: acctmem.edit on its account_id
        (
            {"permissions": ["acctmem.read"], "account_id": ACCOUNT},
            {"account": ACCOUNT},
            {"permissions": ["acctmem.edit"], "account_id": ACCOUNT},
        ),
        # every memory: memory.edit, no selection
        ({"permissions": ["memory.read"]}, {}, {"permissions": ["memory.edit"]}),
    ],
)
def test_a_reader_is_told_what_to_ask_for_the_reason_it_reads_by(lab, alpha, grant, about, ask):
    """ "`403 INSUFFICIENT_GRANT` … carry `required_permission` and `permission_request`. Send
    `permission_request` as the body of `grant-request`, unchanged" (`remediation`: older clients)."""
    reader = lab.pair("reader", grant)
    row = saved(alpha, "Lisbon: Fridays only.", **about)
    assert reader.served(row["id"]) is not None
    r = edit_by(reader, row["id"])
    assert r.status_code == 403, r.text
    body = r.json()
    assert body["code"] == "INSUFFICIENT_GRANT" and body["message"] == EDIT_REFUSAL
    assert body["required_permission"] == ask["permissions"][0]
    assert body["permission_request"] == ask
    assert body["remediation"] == {"tool": "request_access", "args": ask}
    # removing it is memory.delete (acctmem.delete) on the same reason, named per id
    d = reader.post(DELETE, {"ids": [row["id"]]})
    assert d.status_code == 200
    delete_ask = {**ask, "permissions": [ask["permissions"][0].replace(".edit", ".delete")]}
    assert d.json() == {"deleted": [], "refused": [row["id"]], "remediation": {row["id"]: delete_ask}}
    # and sending the permission_request is an ask the owner can answer
    assert lab.ask(reader, body["permission_request"])["status"] in ("approved", "pending")
    assert edit_by(reader, row["id"]).status_code == 200


def test_saving_memories_does_not_make_others_memories_editable(lab, alpha):
    """`memory.save` reaches "what you saved", nothing more: a connection that saves and reads
    travel memories still needs memory.edit to change alpha's."""
    both = lab.pair("both", "memory.save", {"permissions": ["memory.read"], "datatypes": ["travel"]})
    row = saved(alpha, categories=["travel"])
    r = edit_by(both, row["id"])
    assert r.status_code == 403 and r.json()["code"] == "INSUFFICIENT_GRANT"
    assert r.json()["permission_request"] == {"permissions": ["memory.edit"], "datatypes": ["travel"]}
    d = both.post(DELETE, {"ids": [row["id"]]}).json()
    assert d["refused"] == [row["id"]] and d["deleted"] == []


def test_a_memory_out_of_reach_is_404_like_one_that_never_was(lab, alpha):
    """ "A single read of an id you don't own answers `404 NOT_FOUND` — never a confirmation it
    exists." A connection that saves memories of its own is no exception."""
    other = lab.pair("other", "memory.save", {"permissions": ["memory.read"], "datatypes": ["food"]})
    row = saved(alpha, categories=["travel"])
    for row_id in (row["id"], str(uuid.uuid4())):
        r = other.put(PUT, {"id": row_id, "expected_rev": 1, "ciphertext": row["ciphertext"]})
        assert r.status_code == 404, r.text
        assert r.json() == {"error": "NOT_FOUND", "code": "NOT_FOUND", "message": NOT_VISIBLE}
    d = other.post(DELETE, {"ids": [row["id"]]}).json()
    assert d == {"deleted": [], "refused": [row["id"]]}  # no remediation: nothing says it exists


def _policy_of(peer) -> str:
    [policy] = peer.get("/api/agent/policies").json()["policies"]
    return policy["id"]


def test_the_author_whose_save_was_revoked_is_told_what_gives_it_back(lab, alpha):
    """What it saved is its own "while you hold it": once the owner takes "Save memories" away,
    an edit is 403 (no 404: the memory is no secret to its author) with the ask that gives it back."""
    row = saved(alpha)
    body = reseal_text(alpha, row["id"], "changed")
    lab.owner.revoke(alpha.token_id, _policy_of(alpha))
    r = alpha.put(PUT, body)
    assert r.status_code == 403, r.text
    got = r.json()
    assert got["code"] == "INSUFFICIENT_GRANT" and got["required_permission"] == "memory.save"
    assert got["permission_request"] == {"permissions": ["memory.save"]}
    assert got["message"] == (
        'this connection saved this memory, but it no longer holds "Save memories", which makes what it saved its own'
        " to read and edit"
    )


def test_the_author_whose_save_ended_is_answered_grant_expired(lab, alpha):
    """ "After it ends, calls answer `403 GRANT_EXPIRED` with `permission_request`: send it and the
    owner is asked." """
    row = saved(alpha)
    body = reseal_text(alpha, row["id"], "changed")
    lab.owner.expire(alpha.token_id)
    r = alpha.put(PUT, body)
    assert r.status_code == 403 and r.json()["code"] == "GRANT_EXPIRED", r.text
    assert r.json()["permission_request"] == {"permissions": ["memory.save"]}
    assert "no longer holds" in r.json()["message"]
    # deleting stays the author's: "Delete: the author (any time)" (memwrites.py)
    assert alpha.post(DELETE, {"ids": [row["id"]]}).json()["deleted"] == [row["id"]]

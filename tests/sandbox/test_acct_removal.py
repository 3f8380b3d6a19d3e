"""An account deleted, an address changed in place or burned, over HTTP — and what a repeat of each
does, which is what decides whether a client may send it again after a lost answer.

001, `credential_delete` (DELETE /api/agent/accounts/{accountId}): "Soft-delete an account (status
becomes `deleted` and it disappears from reads; reversible server-side). Needs `account.delete` on
the account … The account's own Decoy email goes with it." and "Returns `{ account_id, deleted:
true, burned_decoys, unlinked_decoys }`, or 404 if not found / not owned." `account_fields_list`:
"The account was deleted (`ACCOUNT_DELETED`); its fields are no longer served." `decoy_update`:
"Update a decoy's sealed metadata (name, avatar), label, or status. Only provided fields are
changed, and everything a request asks for is written together or not at all." and "`label`/
`status` changes don't bump `rev`, but are refused the same way when `expected_rev` is stale."
`decoy_burn`: "Permanently delete a decoy and all its data. **Irreversible.** Use `PATCH` with
`status: inactive` for a reversible pause."

001 is silent on the memories filed about a deleted account (`about: ["account:<id>"]`); the
sandbox keeps them (docs/architecture.md): removing a memory is its own permission ("Delete
memories about all accounts: Removed for good"), which `account.delete` does not hold.
"""

from __future__ import annotations

from support.acctfamily_kit import ACCOUNTS, delete, patch
from support.sandbox_kit import saved

DECOYS = "/api/agent/decoys"
MEMORIES = "/api/agent/context/memories"


def _with_address(peer) -> dict:
    r = peer.post(DECOYS, {"service_name": "Acme", "label": "acme"})
    assert r.status_code == 201, r.text
    return r.json()


def test_a_deleted_account_takes_its_address_and_fields_and_a_repeat_finds_nothing(lab):
    agent = lab.pair("maker", "account.create", "account.delete")
    made = _with_address(agent)
    account = made["account_id"]
    r = delete(agent, f"{ACCOUNTS}/{account}")
    assert r.status_code == 200, r.text
    assert r.json() == {"account_id": account, "deleted": True, "burned_decoys": 1, "unlinked_decoys": 0}
    assert agent.get(f"{ACCOUNTS}/{account}").status_code == 404, "it disappears from reads"
    assert agent.get(f"{DECOYS}/{made['id']}").status_code == 404, "its own Decoy email goes with it"
    fields = agent.get(f"{ACCOUNTS}/{account}/fields")
    assert fields.status_code == 404 and fields.json()["code"] == "ACCOUNT_DELETED", fields.text
    again = delete(agent, f"{ACCOUNTS}/{account}")
    assert again.status_code == 404, "a repeat deletes nothing more: the account is not found"
    listed = agent.get(DECOYS, params={"status": "all"}).json()["decoys"]
    assert made["id"] not in [d["id"] for d in listed]


def test_memories_filed_about_a_deleted_account_stay_with_their_about(lab):
    """The sandbox's choice where 001 is silent: a memory is removed only by a memory delete."""
    maker = lab.pair("maker", "account.create", "account.delete")
    account = _with_address(maker)["account_id"]
    reader = lab.pair("reader", {"permissions": ["acctmem.read"], "account_id": account})
    author = lab.pair("author", "memory.save")
    row = saved(author, "Uses the work card for this shop.", account=account)
    lab.share()  # the owner's phone wraps the memory's key to the grant on the account
    assert reader.served(row["id"]) is not None
    assert delete(maker, f"{ACCOUNTS}/{account}").status_code == 200
    assert author.read(row["id"]).about == f"account:{account}", "kept, still filed about the account"
    assert reader.served(row["id"]) is not None, "and still served to the grant on that account"


def test_an_address_label_and_status_change_together_or_not_at_all_and_a_repeat_changes_nothing(lab):
    agent = lab.pair("maker", "account.create")
    made = _with_address(agent)
    path = f"{DECOYS}/{made['id']}"
    body = {"label": "shopping", "status": "inactive", "expected_rev": made["rev"]}
    first = patch(agent, path, body)
    assert first.status_code == 200 and first.json() == {"decoy_id": made["id"], "updated": True, "rev": made["rev"]}
    assert patch(agent, path, body).json() == first.json(), "the same body again: the same state, rev unmoved"
    served = agent.get(path).json()
    assert (served["label"], served["status"], served["rev"]) == ("shopping", "inactive", made["rev"])
    r = patch(agent, path, {"label": "other", "status": "burned"})
    assert r.status_code == 400, r.text
    assert agent.get(path).json()["label"] == "shopping", "a refused status writes no label either"
    cleared = patch(agent, path, {"label": None, "status": "active"})
    assert cleared.status_code == 200, cleared.text
    assert (agent.get(path).json()["label"], agent.get(path).json()["status"]) == (None, "active")


def test_an_address_label_is_text_or_null_and_a_refused_one_writes_nothing(lab):
    """001, `decoy_create`: "`label` is plain text in every form"; `decoy_update`: `label: { type:
    string, nullable: true }` — and a refused request writes none of what it asked."""
    agent = lab.pair("maker", "account.create")
    made = _with_address(agent)
    path = f"{DECOYS}/{made['id']}"
    for label in (7, ["a"], "x" * 201):
        r = patch(agent, path, {"label": label, "status": "inactive"})
        assert r.status_code == 400 and r.json()["field"] == "label", r.text
    served = agent.get(path).json()
    assert (served["label"], served["status"]) == ("acme", "active")

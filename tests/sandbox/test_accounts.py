"""`GET /api/agent/accounts` checks its scope and serves only what the permissions cover.

The operation: "List Accounts … x-scope: account.read". The reference: "A scope with no matching
permission authorizes nothing: scopes say which kind of thing a token may ever touch, permissions
say which accounts, aliases and records. List endpoints return only what the permissions cover.",
and "`403 INSUFFICIENT_GRANT`, `403 GRANT_EXPIRED` and `403 SCOPE_MISSING` … carry
`required_permission` and `permission_request`. Send `permission_request` as the body of
`grant-request`, unchanged, then retry the call." The memory contract names what the list is for:
"An account end in a relation carries endpoint `account:<id>` with an empty name; resolve its
name from the authorized account list."
"""

from __future__ import annotations

import pytest

LIST = "/api/agent/accounts"


@pytest.fixture
def accounts(lab):
    """Three accounts the owner added: (netflix, bank, mail)."""
    return tuple(lab.owner.add_account(n)["id"] for n in ("Netflix", "Bank", "Mail"))


def _listed(peer) -> dict[str, str]:
    r = peer.get(LIST)
    assert r.status_code == 200, r.text
    return {a["id"]: a["service_name"] for a in r.json()["accounts"]}


def test_a_token_without_the_scope_is_refused_with_what_to_ask(lab, accounts):
    """No permission of this connection carries `account.read` (memories have no scope: "no scope
    covers memories"), so the list is `403 SCOPE_MISSING` naming the scope and the ask."""
    netflix = accounts[0]
    alpha = lab.pair("alpha", "memory.save", {"permissions": ["acctmem.read"], "account_id": netflix})
    r = alpha.get(LIST)
    assert r.status_code == 403, r.text
    body = r.json()
    assert body["code"] == "SCOPE_MISSING" and body["required_scope"] == "account.read"
    assert body["recovery"] == "request_access" and body["required_permission"] == "account.read"
    assert body["permission_request"] == {"permissions": ["account.read"]}
    assert "Netflix" not in r.text, "a refusal names no account"
    # sending permission_request unchanged (auto-approved here), then retrying, lists the accounts
    lab.ask(alpha, {**body["permission_request"], "reason": "name the accounts my memories are about"})
    assert _listed(alpha) == {a["id"]: a["service_name"] for a in lab.owner.accounts()}


def test_the_list_holds_only_the_accounts_the_permissions_cover(lab, accounts):
    netflix, bank, mail = accounts
    one = lab.pair("one", {"permissions": ["account.read", "acctmem.read"], "account_id": netflix})
    assert _listed(one) == {netflix: "Netflix"}
    every = lab.pair("every", "account.read")
    assert _listed(every) == {netflix: "Netflix", bank: "Bank", mail: "Mail"}
    everything = lab.pair("everything", "everything")
    assert set(_listed(everything)) == {netflix, bank, mail}
    # `account.create` carries the scope and covers only what the connection created: nothing here
    creator = lab.pair("creator", "account.create")
    assert _listed(creator) == {}


def test_mail_or_memory_rows_on_an_account_do_not_bring_its_details(lab, accounts):
    """ "An account's details do not bring its email or its memories": with the scope held through
    another account's `account.read`, an `acctmail` or `acctmem` row names no further account."""
    netflix, bank, _ = accounts
    alpha = lab.pair(
        "alpha",
        {"permissions": ["account.read"], "account_id": netflix},
        {"permissions": ["acctmail.read", "acctmem.read"], "account_id": bank},
    )
    assert _listed(alpha) == {netflix: "Netflix"}


def test_a_scope_whose_grant_ended_is_grant_expired(lab, accounts):
    """ "After it ends, calls answer `403 GRANT_EXPIRED` with `permission_request`"."""
    alpha = lab.pair("alpha", "account.read")
    assert len(_listed(alpha)) == 3
    lab.owner.expire(alpha.token_id)
    r = alpha.get(LIST)
    assert r.status_code == 403 and r.json()["code"] == "GRANT_EXPIRED", r.text
    assert r.json()["permission_request"] == {"permissions": ["account.read"]}

"""What a connection reads back about its own grant, over HTTP: each approved row in
`GET /api/agent/policies` (its `type`, `kind`, names and selection), the token's scopes, and
whether an ask for something it holds already is `200 already_granted` or goes to the owner.

Spec 001 (recipe "Read email"): "After approval, check what is actually enforced —
`GET /api/agent/policies` reports the approved grant, never your request:
`{ "kind": "message", "account_id": "…", "permissions": ["acctmail.read"], "named": true }`".
"""

from __future__ import annotations

import itertools
import warnings

import pytest

from decoy_lab.sandbox import FakeClock, create_app
from decoy_lab.sandbox.testing import bearer, pair_agent

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

ACCOUNT = "3f1c2a4e-0000-4000-8000-000000000001"
OTHER_ACCOUNT = "3f1c2a4e-0000-4000-8000-0000000000ff"
PERSONAL = "7a1b2c3d-0000-4000-8000-000000000003"
TOPIC_A = "topic:8b0c5a9e-1111-4000-8000-000000000002"
TOPIC_B = "topic:8b0c5a9e-2222-4000-8000-000000000003"
UNLOCK_TYPE = "https://decoys.me/oauth/types/unlock"

_names = itertools.count()  # one connection per name: the same name would reconnect it


@pytest.fixture(scope="module")
def client(owner_pem) -> TestClient:
    """Asks stay pending (the owner answers nothing by itself); pairings are approved through the
    owner surface by `pair_agent`."""
    app = create_app(":memory:", owner_key=owner_pem, approve="manual", seed="none", clock=FakeClock(1_800_000_000.0))
    return TestClient(app)


def held(client: TestClient, *rows: dict) -> dict:
    return pair_agent(client, None, list(rows), name=f"Agent {next(_names)}")


def policies(client: TestClient, tok: dict) -> dict:
    r = client.get("/api/agent/policies", headers=bearer(tok))
    assert r.status_code == 200, r.text
    return r.json()


# ── each approved row as policies serves it ────────────────────────────────────────────────


def test_each_row_names_its_kind_as_the_specs_examples_do(client):
    """The recipe's example row reads `"kind": "message"` for `acctmail.read` on one account and
    carries `"named": true`; rows may carry `type: "https://decoys.me/oauth/types/unlock"`."""
    tok = held(
        client,
        {"permissions": ["account.read"], "account_id": ACCOUNT},
        {"permissions": ["acctmail.read"], "account_id": ACCOUNT},
        {"permissions": ["alias.read"]},
        {"permissions": ["acctmem.read"], "account_id": ACCOUNT},
        {"permissions": ["personal.read"], "record_type": "cards"},
        {"permissions": ["memory.read"], "datatypes": ["food"]},
        {"permissions": ["everything"]},
    )
    [policy] = policies(client, tok)["policies"]
    assert policy["permissions"] == [
        {"type": UNLOCK_TYPE, "kind": "account", "permissions": ["account.read"], "account_id": ACCOUNT, "named": True},
        {
            "type": UNLOCK_TYPE,
            "kind": "message",
            "permissions": ["acctmail.read"],
            "account_id": ACCOUNT,
            "named": True,
        },
        {"type": UNLOCK_TYPE, "kind": "message", "permissions": ["alias.read"], "named": True},
        {"type": UNLOCK_TYPE, "kind": "memory", "permissions": ["acctmem.read"], "account_id": ACCOUNT, "named": True},
        {
            "type": UNLOCK_TYPE,
            "kind": "personal",
            "permissions": ["personal.read"],
            "record_type": "cards",
            "named": True,
        },
        {"type": UNLOCK_TYPE, "kind": "memory", "permissions": ["memory.read"], "datatypes": ["food"], "named": True},
        {"type": UNLOCK_TYPE, "kind": "everything", "permissions": ["everything"], "named": True},
    ]


# ── scopes follow the permissions ──────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "row, scopes",
    [
        # the spec's own example: "permissions: [acctmail.read, acctmail.send]
        #   requested_scopes: [decoy.read, forwarding.read, message.read, message.unlock, message.write]"
        (
            {"permissions": ["acctmail.send"], "account_id": ACCOUNT},
            ["decoy.read", "forwarding.read", "message.read", "message.unlock", "message.write"],
        ),
        ({"permissions": ["personal.read"]}, ["personal.read", "personal.unlock"]),
        # memories have no scope: "no scope covers memories"
        ({"permissions": ["memory.edit"]}, []),
    ],
)
def test_the_permissions_set_the_tokens_scopes(client, row, scopes):
    """ "Sending `authorization_details` alone is enough: the permissions set the token's scopes"."""
    tok = held(client, row)
    pol = policies(client, tok)
    assert pol["scopes"] == scopes and pol["token"]["scopes"] == scopes


# ── already held: never asked again ────────────────────────────────────────────────────────


def ask(client: TestClient, tok: dict, body: dict):
    return client.post("/api/agent/grant-request", json=body, headers=bearer(tok))


@pytest.mark.parametrize(
    "holding, asked, already",
    [
        # all memories hold every category; one category does not hold all memories
        ({"permissions": ["memory.read"]}, {"permissions": ["memory.read"], "datatypes": ["food"]}, True),
        ({"permissions": ["memory.read"], "datatypes": ["food"]}, {"permissions": ["memory.read"]}, False),
        # categories: a subset is held, one more is not
        (
            {"permissions": ["memory.read"], "datatypes": ["food", "travel"]},
            {"permissions": ["memory.read"], "datatypes": ["travel"]},
            True,
        ),
        (
            {"permissions": ["memory.read"], "datatypes": ["food"]},
            {"permissions": ["memory.read"], "datatypes": ["food", "travel"]},
            False,
        ),
        # topics alike
        (
            {"permissions": ["memory.read"], "about": [TOPIC_A, TOPIC_B]},
            {"permissions": ["memory.read"], "about": [TOPIC_B]},
            True,
        ),
        (
            {"permissions": ["memory.read"], "about": [TOPIC_A]},
            {"permissions": ["memory.read"], "about": [TOPIC_A, TOPIC_B]},
            False,
        ),
        (
            {"permissions": ["memory.read"], "about": [TOPIC_A, TOPIC_B]},
            {"permissions": ["memory.read"], "about": [TOPIC_B, TOPIC_A]},
            True,
        ),
        # a category grant does not hold a topic, nor a topic grant a category
        (
            {"permissions": ["memory.read"], "datatypes": ["food"]},
            {"permissions": ["memory.read"], "about": [TOPIC_A]},
            False,
        ),
        (
            {"permissions": ["memory.read"], "about": [TOPIC_A]},
            {"permissions": ["memory.read"], "datatypes": ["food"]},
            False,
        ),
        # one kind of personal info holds one record of that kind asked by type and id
        (
            {"permissions": ["personal.read"], "record_type": "cards"},
            {"permissions": ["personal.read"], "record_type": "cards", "personal_id": PERSONAL},
            True,
        ),
        (
            {"permissions": ["personal.read"], "record_type": "cards"},
            {"permissions": ["personal.read"], "record_type": "emails", "personal_id": PERSONAL},
            False,
        ),
        # one account is that account only
        (
            {"permissions": ["account.read"], "account_id": ACCOUNT},
            {"permissions": ["account.read"], "account_id": ACCOUNT},
            True,
        ),
        (
            {"permissions": ["account.read"], "account_id": ACCOUNT},
            {"permissions": ["account.read"], "account_id": OTHER_ACCOUNT},
            False,
        ),
        # needs count: edit brings read, so read is held
        ({"permissions": ["memory.edit"]}, {"permissions": ["memory.read"]}, True),
        ({"permissions": ["memory.read"]}, {"permissions": ["memory.edit"]}, False),
        # everything holds any named permission
        ({"permissions": ["everything"]}, {"permissions": ["alias.burn"]}, True),
    ],
)
def test_an_ask_for_what_is_held_is_already_granted(client, holding, asked, already):
    """ "When the connection already holds what you named, nothing is stored and nothing reaches the
    owner: `200 { "status": "already_granted", … }`"; anything more is `201 pending`."""
    tok = held(client, holding)
    r = ask(client, tok, {**asked, "reason": "check"})
    if already:
        assert r.status_code == 200 and r.json()["status"] == "already_granted", r.text
    else:
        assert r.status_code == 201 and r.json()["status"] == "pending", r.text


def test_a_pairing_that_asks_for_nothing_holds_the_read_only_default_scopes(client):
    """ "A request with nothing in it gets a small read-only default **and a `warnings[]` entry**"; the
    scopes are held by the connection itself (no policy row grants them), and policies lists them."""
    tok = pair_agent(client, None, [], name="Asks nothing")
    pol = policies(client, tok)
    assert pol["policies"] == []
    assert pol["scopes"] == ["account.read", "decoy.read", "message.read", "profile.read"]
    assert pol["token"]["name"] == "Asks nothing" and pol["token"]["token_id"] == tok["token_id"]

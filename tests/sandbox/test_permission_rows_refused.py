"""How the sandbox answers a permission row it will not store, over HTTP: `POST /oauth/par`
refuses with `400 invalid_authorization_details`, the rule's `code` and a message that says what
to send instead; a row it takes comes back in `authorization_details` as the owner will see it.

Spec 001, `POST /oauth/par`: "One row per selection: `permissions` plus at most one of
`account_id`, `domain`, `namespace_id`, `record_type` / `personal_id`, `datatypes` or `about`.
… Unknown keys are refused here with `400 invalid_authorization_details`. A row may carry
`type: "https://decoys.me/oauth/types/unlock"`, which is also the default. … Older row forms
(`level`, `kind` with `actions`) are still accepted for existing clients."
"""

from __future__ import annotations

import warnings

import pytest

from decoy_lab.sandbox import FakeClock, create_app
from decoy_lab.sandbox.testing import bearer, pair_agent
from decoy_lab.vocab import CATEGORIES

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

ACCOUNT = "3f1c2a4e-0000-4000-8000-000000000001"
UNLOCK_TYPE = "https://decoys.me/oauth/types/unlock"
BY_NAME = ' is not accepted by the sandbox; ask by permission name: {"permissions": [...]}'
DATATYPES_LIST = "`datatypes` must be a non-empty list of categories"
ABOUT_LIST = '`about` must be a non-empty list of "topic:<id>"'


@pytest.fixture(scope="module")
def client(owner_pem) -> TestClient:
    app = create_app(":memory:", owner_key=owner_pem, approve="auto", seed="none", clock=FakeClock(1_800_000_000.0))
    return TestClient(app)


def par(client: TestClient, details):
    return client.post("/oauth/par", json={"authorization_details": details})


def refused(client: TestClient, row) -> tuple[str, str]:
    """The code and message of a refused row; nothing is stored for it."""
    r = par(client, [row])
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["error"] == "invalid_authorization_details"
    assert body["error_description"] == body["message"]
    return body["code"], body["message"]


@pytest.mark.parametrize(
    "row, code, message",
    [
        # not a row at all
        ("memory.read", "INVALID_ROW", "each row must be an object with `permissions`"),
        ({}, "INVALID_ROW", "a row needs `permissions` (a list of permission names)"),
        ({"permissions": "memory.read"}, "INVALID_ROW", "`permissions` must be a list of permission names"),
        ({"permissions": ["memory.read", 7]}, "INVALID_ROW", "`permissions` must be a list of permission names"),
        ({"permissions": []}, "EMPTY_PERMISSIONS", "`permissions` names nothing to ask for"),
        # webhook.read is held by every connection, so a row of it alone asks for nothing
        ({"permissions": ["webhook.read"]}, "EMPTY_PERMISSIONS", "`permissions` names nothing to ask for"),
        (
            {"permissions": ["memory.fly"]},
            "UNKNOWN_PERMISSION",
            "unknown permission name(s) ['memory.fly']; see \"Access: named permissions\"",
        ),
        # "Unknown keys are refused: never send `resource_id`, `kind` or `level` with `permissions`."
        (
            {"permissions": ["memory.read"], "resource_id": ACCOUNT},
            "UNKNOWN_KEY",
            "unknown key(s) ['resource_id'] (never send resource_id, kind or level with permissions)",
        ),
        ({"permissions": ["memory.read"], "colour": "red"}, "UNKNOWN_KEY", "unknown key(s) ['colour']"),
        (
            {"permissions": ["memory.read"], "type": "https://example.com/t"},
            "INVALID_ROW",
            f"`type` must be {UNLOCK_TYPE!r} when sent",
        ),
        # the older forms: by name only, or kind with actions
        ({"level": "read", "select": "all"}, "NAMED_PERMISSIONS_REQUIRED", "the older form (level, select)" + BY_NAME),
        (
            {"kind": "alias", "actions": ["read"]},
            "NAMED_PERMISSIONS_REQUIRED",
            "older form with kind 'alias'" + BY_NAME,
        ),
        (
            {"kind": ["memory"], "actions": ["read"]},
            "NAMED_PERMISSIONS_REQUIRED",
            "older form with kind ['memory']" + BY_NAME,
        ),
        ({"kind": "memory", "actions": []}, "INVALID_ROW", "the older form needs `actions` (a list) or `action`"),
        ({"kind": "memory", "actions": [5]}, "INVALID_ROW", "the older form needs `actions` (a list) or `action`"),
        ({"kind": "memory", "action": 5}, "INVALID_ROW", "the older form needs `actions` (a list) or `action`"),
        (
            {"kind": "memory", "actions": ["read", "fly"]},
            "UNKNOWN_PERMISSION",
            "unknown memory action(s) ['fly']; known: ['create', 'destroy', 'read', 'read_metadata',"
            " 'unlock_content', 'write']",
        ),
        # selections
        (
            {"permissions": ["account.read"], "account_id": "nope"},
            "INVALID_SELECTION",
            "`account_id` must be a UUID string, got 'nope'",
        ),
        (
            {"permissions": ["account.read"], "account_id": 7},
            "INVALID_SELECTION",
            "`account_id` must be a UUID string, got 7",
        ),
        (
            {"permissions": ["alias.read"], "namespace_id": "n-1"},
            "INVALID_SELECTION",
            "`namespace_id` must be a UUID string, got 'n-1'",
        ),
        (
            {"permissions": ["account.read"], "domain": "https://x.com"},
            "INVALID_SELECTION",
            "`domain` must be a site's host name, got 'https://x.com'",
        ),
        (
            {"permissions": ["account.read"], "domain": 7},
            "INVALID_SELECTION",
            "`domain` must be a site's host name, got 7",
        ),
        (
            {"permissions": ["personal.read"], "record_type": "passports"},
            "INVALID_SELECTION",
            "`record_type` must be one of identities, emails, cards",
        ),
        ({"permissions": ["memory.read"], "datatypes": []}, "INVALID_SELECTION", DATATYPES_LIST),
        ({"permissions": ["memory.read"], "datatypes": "food"}, "INVALID_SELECTION", DATATYPES_LIST),
        ({"permissions": ["memory.read"], "datatypes": ["food", 1]}, "INVALID_SELECTION", DATATYPES_LIST),
        (
            {"permissions": ["memory.read"], "datatypes": ["snacks"]},
            "INVALID_SELECTION",
            "unknown categories ['snacks']; `datatypes` takes: " + ", ".join(CATEGORIES),
        ),
        ({"permissions": ["memory.read"], "about": []}, "INVALID_SELECTION", ABOUT_LIST),
        ({"permissions": ["memory.read"], "about": [3]}, "INVALID_SELECTION", ABOUT_LIST),
        (
            {"permissions": ["memory.read"], "about": ["topic:"]},
            "INVALID_SELECTION",
            "`about` takes only \"topic:<id>\" values, got ['topic:']",
        ),
        (
            {"permissions": ["memory.read"], "about": ["food"]},
            "INVALID_SELECTION",
            "`about` takes only \"topic:<id>\" values, got ['food']",
        ),
        (
            {"permissions": ["memory.read"], "datatypes": ["food"], "about": ["topic:x1"]},
            "ONE_SELECTION",
            "one selection per row, got ['about', 'datatypes']",
        ),
        (
            {"permissions": ["memory.read"], "account_id": ACCOUNT},
            "SELECTION_NOT_TAKEN",
            "['memory.read'] do not take `account_id`",
        ),
        (
            {"permissions": ["memory.save", "memory.read"]},
            "ASK_ALONE",
            "memory.save is asked alone: no other permission, no selection",
        ),
        (
            {"permissions": ["everything"], "datatypes": ["food"]},
            "ASK_ALONE",
            "everything is asked alone: no other permission, no selection",
        ),
    ],
)
def test_a_row_the_spec_refuses_says_why(client, row, code, message):
    assert refused(client, row) == (code, message)


def test_authorization_details_must_be_a_list(client):
    r = par(client, {"permissions": ["memory.read"]})
    assert r.status_code == 400 and r.json()["code"] == "INVALID_ROW"
    assert r.json()["message"] == "`authorization_details` must be a list of rows"


@pytest.mark.parametrize(
    "row, stored",
    [
        # needs are added, in the spec's table order
        ({"permissions": ["memory.delete"]}, {"permissions": ["memory.read", "memory.edit", "memory.delete"]}),
        ({"permissions": ["alias.burn"]}, {"permissions": ["alias.read", "alias.edit", "alias.burn"]}),
        # the default type may be sent; webhook.read beside others is dropped (held by every connection)
        ({"type": UNLOCK_TYPE, "permissions": ["webhook.read", "memory.read"]}, {"permissions": ["memory.read"]}),
        # a site is matched by its host name, whatever its case and spacing
        (
            {"permissions": ["account.read"], "domain": " Netflix.COM "},
            {"permissions": ["account.read"], "domain": "netflix.com"},
        ),
        # ids are compared lower case
        (
            {"permissions": ["account.read"], "account_id": ACCOUNT.upper()},
            {"permissions": ["account.read"], "account_id": ACCOUNT},
        ),
        # record_type and personal_id together are one selection
        (
            {"permissions": ["personal.read"], "record_type": "cards", "personal_id": ACCOUNT},
            {"permissions": ["personal.read"], "personal_id": ACCOUNT, "record_type": "cards"},
        ),
        # categories and topics: sorted, each once
        (
            {"permissions": ["memory.read"], "datatypes": ["travel", "food", "travel"]},
            {"permissions": ["memory.read"], "datatypes": ["food", "travel"]},
        ),
        (
            {"permissions": ["memory.read"], "about": ["topic:b", "topic:a", "topic:b"]},
            {"permissions": ["memory.read"], "about": ["topic:a", "topic:b"]},
        ),
        # the older form: one action, as a string
        ({"kind": "personal", "action": "write"}, {"permissions": ["personal.read", "personal.edit"]}),
        (
            {"kind": "message", "actions": ["destroy"], "account_id": ACCOUNT},
            {"permissions": ["acctmail.read", "acctmail.delete"], "account_id": ACCOUNT},
        ),
    ],
)
def test_a_row_taken_comes_back_as_the_owner_will_see_it(client, row, stored):
    """ "Needs are added for you: … the list in the answer is exactly what the owner sees"."""
    r = par(client, [row])
    assert r.status_code == 201, r.text
    assert r.json()["authorization_details"] == [stored]


def test_the_same_row_twice_is_stored_once(client):
    r = par(client, [{"permissions": ["memory.read"]}, {"permissions": ["memory.read"]}])
    assert r.status_code == 201 and r.json()["authorization_details"] == [{"permissions": ["memory.read"]}]


def test_grant_request_refuses_with_the_same_code_and_words(client):
    """A paired connection's ask is checked by the same rules ("The ask was refused and nothing was
    stored"), answered `400` with the rule's code."""
    tok = pair_agent(client, None, [{"permissions": ["memory.save"]}], name="Asker")
    r = client.post("/api/agent/grant-request", json={"kind": "memory", "actions": "fly"}, headers=bearer(tok))
    assert r.status_code == 400 and r.json()["code"] == "UNKNOWN_PERMISSION"
    assert "unknown memory action(s) ['fly']" in r.json()["message"]

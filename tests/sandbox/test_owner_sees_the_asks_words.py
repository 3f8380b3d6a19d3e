"""What the owner reads for an ask, over HTTP: `/_sandbox/pending` lists each pairing's
`headlines`, one line per permission in the phone's words, worded for the row's selection.

Spec 001, "Access: named permissions": "'The owner sees' is the headline and line the phone shows
for the whole-vault form of the row (for one account it reads, for example, "Read details from
this account"). Sensitive rows carry a marker on the phone."
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
NAMESPACE = "5b8d0c2e-0000-4000-8000-000000000002"
PERSONAL = "7a1b2c3d-0000-4000-8000-000000000003"
TOPIC_A = "topic:8b0c5a9e-1111-4000-8000-000000000002"
TOPIC_B = "topic:8b0c5a9e-2222-4000-8000-000000000003"

_names = itertools.count()


@pytest.fixture(scope="module")
def client(owner_pem) -> TestClient:
    """One sandbox whose owner answers nothing, so every ask stays pending and listed."""
    app = create_app(":memory:", owner_key=owner_pem, approve="manual", seed="none", clock=FakeClock(1_800_000_000.0))
    return TestClient(app)


def headlines(client: TestClient, row: dict) -> list[str]:
    """Start a pairing that asks for `row` and read back what the owner is shown for it."""
    name = f"Agent {next(_names)}"
    r = client.post("/oauth/device", json={"client_id": name.lower(), "name": name, "authorization_details": [row]})
    assert r.status_code == 200, r.text
    [item] = [p for p in client.get("/_sandbox/pending").json()["pending"] if p.get("name") == name]
    return item["headlines"]


@pytest.mark.parametrize(
    "row, words",
    [
        # the whole-vault form: the table's own words
        ({"permissions": ["memory.read"]}, ["Read all memories"]),
        ({"permissions": ["account.read"]}, ["Read details from all accounts"]),
        ({"permissions": ["acctmail.read"]}, ["Read all accounts' email"]),
        ({"permissions": ["personal.read"]}, ["Read all personal info"]),
        ({"permissions": ["alias.read"]}, ["Read email"]),
        ({"permissions": ["memory.save"]}, ["Save new memories"]),
        # one account, by id or by site
        (
            {"permissions": ["account.read", "acctmail.read"], "account_id": ACCOUNT},
            ["Read details from this account", "Read this account's email"],
        ),
        ({"permissions": ["account.read"], "domain": "netflix.com"}, ["Read details from this account"]),
        (
            {"permissions": ["acctmem.edit"], "account_id": ACCOUNT},
            ["Read memories about this account", "Edit memories about this account"],
        ),
        # memories by category or by topic
        ({"permissions": ["memory.read"], "datatypes": ["travel", "food"]}, ["Read memories in food, travel"]),
        ({"permissions": ["memory.read"], "about": [TOPIC_A]}, ["Read memories about this topic"]),
        ({"permissions": ["memory.read"], "about": [TOPIC_A, TOPIC_B]}, ["Read memories about 2 topics"]),
        # one kind of personal info, or one record
        ({"permissions": ["personal.read"], "record_type": "cards"}, ["Read this personal info"]),
        ({"permissions": ["personal.read"], "personal_id": PERSONAL}, ["Read this personal info"]),
        # one Personal Alias
        (
            {"permissions": ["alias.send"], "namespace_id": NAMESPACE},
            ["Read email (one Personal Alias)", "Send and reply (one Personal Alias)"],
        ),
    ],
)
def test_each_line_is_worded_for_the_rows_selection(client, row, words):
    """ "for one account it reads, for example, 'Read details from this account'"."""
    assert headlines(client, row) == words


def test_sensitive_permissions_carry_a_marker_and_the_others_do_not(client):
    """ "Sensitive rows carry a marker on the phone": account.delete and everything are sensitive
    in the spec's table; the needs they bring (account.read, account.edit) are not."""
    assert headlines(client, {"permissions": ["account.delete"], "account_id": ACCOUNT}) == [
        "Read details from this account",
        "Edit this account",
        "Delete this account [sensitive]",
    ]
    assert headlines(client, {"permissions": ["everything"]}) == ["Everything in your Decoy [sensitive]"]
    assert headlines(client, {"permissions": ["memory.delete"]}) == [
        "Read all memories",
        "Edit all memories",
        "Delete all memories",  # "memory.delete … Sensitive: no"
    ]


@pytest.mark.parametrize(
    "reason, shown",
    [
        ("Plan\u2028dinners\u2029you\tlike", "Plan dinners you like"),  # line and paragraph separators, tab
        ("  Plan \r\n  dinners  ", "Plan dinners"),  # runs of spaces become one; the ends are trimmed
        ("Plan\u200bdin\u2060ners", "Plandinners"),  # invisibles go and leave nothing in their place
        ("x" * 600, "x" * 500),  # one line, at most 500 characters
        ("Export the XML", "Export the XML"),  # printable text is kept as sent
    ],
)
def test_the_reason_reaches_the_owner_as_one_line(client, reason, shown):
    """`grant-request`: "`reason` is shown to the owner as one line: line breaks and control
    characters in it are replaced by a space, and invisible characters are removed."""
    name = f"Agent {next(_names)}"
    tok = pair_agent(client, None, [{"permissions": ["memory.save"]}], name=name)
    r = client.post(
        "/api/agent/grant-request", json={"permissions": ["memory.read"], "reason": reason}, headers=bearer(tok)
    )
    assert r.status_code == 201, r.text
    [item] = [p for p in client.get("/_sandbox/pending").json()["pending"] if p.get("name") == name]
    assert item["reasons"] == [shown]


def test_a_reason_that_is_not_text_is_refused(client):
    tok = pair_agent(client, None, [{"permissions": ["memory.save"]}], name=f"Agent {next(_names)}")
    r = client.post("/api/agent/grant-request", json={"permissions": ["memory.read"], "reason": 7}, headers=bearer(tok))
    assert r.status_code == 400
    assert (r.json()["code"], r.json()["message"]) == ("INVALID_REASON", "`reason` must be a string")


def test_an_ask_without_a_reason_shows_the_owner_none(client):
    name = f"Agent {next(_names)}"
    tok = pair_agent(client, None, [{"permissions": ["memory.save"]}], name=name)
    r = client.post("/api/agent/grant-request", json={"permissions": ["memory.read"]}, headers=bearer(tok))
    assert r.status_code == 201, r.text
    [item] = [p for p in client.get("/_sandbox/pending").json()["pending"] if p.get("name") == name]
    assert item["reasons"] == []

"""GET /api/agent/policies and the grant-request loop against the sandbox, over HTTP."""

from __future__ import annotations

import warnings

import pytest

from decoy_lab.errors import InsufficientGrant, error_from_response
from decoy_lab.sandbox import FakeClock, create_app
from decoy_lab.sandbox.checks import grants, grantstore, selectors
from decoy_lab.sandbox.testing import bearer, pair_agent

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

T0 = 1_800_000_000.0
DAY = 86400
ACCOUNT = "3f1c2a4e-0000-4000-8000-000000000001"
TOPIC = "topic:8b0c5a9e-1111-4000-8000-000000000002"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def _client(owner_pem, clock, approve) -> TestClient:
    return TestClient(create_app(":memory:", owner_key=owner_pem, approve=approve, seed="none", clock=clock))


@pytest.fixture
def auto(owner_pem, clock) -> TestClient:
    return _client(owner_pem, clock, "auto")


@pytest.fixture
def manual(owner_pem, clock) -> TestClient:
    return _client(owner_pem, clock, "manual")


def ask(client, tok, body):
    return client.post("/api/agent/grant-request", json=body, headers=bearer(tok))


def status(client, tok, rid):
    return client.get("/api/agent/grant-request", params={"id": rid}, headers=bearer(tok)).json()["status"]


def policies(client, tok):
    return client.get("/api/agent/policies", headers=bearer(tok)).json()


# ── policies ──────────────────────────────────────────────────────────────────────────────


def test_policies_access_first_then_token_scopes_policies(auto, agent_key):
    """Read `access`, then the names in policies[].permissions[].permissions — not scopes."""
    tok = pair_agent(
        auto,
        agent_key,
        [
            {"permissions": ["memory.edit"], "datatypes": ["food", "travel"]},
            {"permissions": ["acctmem.read"], "account_id": ACCOUNT},
            {"permissions": ["acctmail.send"], "account_id": ACCOUNT},
        ],
    )
    body = policies(auto, tok)
    assert next(iter(body)) == "access"
    mem = body["access"]["memories"]
    assert mem["save"] is False
    assert mem["read"] == {
        "all": False,
        "categories": ["food", "travel"],
        "topics": [],
        "account_ids": [ACCOUNT],
        "account_wildcard": False,
    }
    assert mem["write"]["categories"] == ["food", "travel"] and mem["write"]["account_ids"] == []
    assert mem["delete"]["categories"] == [] and "food" in mem["summary"]
    assert body["access"]["version"] == body["access_version"] == tok["access_version"]
    assert body["access"]["mail"]["send"]["account_ids"] == [ACCOUNT]
    names = [r["permissions"] for p in body["policies"] for r in p["permissions"]]
    assert ["memory.read", "memory.edit"] in names and ["acctmail.read", "acctmail.send"] in names
    assert all("expires_at" in p for p in body["policies"])
    # no scope for memories; the mail row brings its scopes
    assert "message.write" in body["scopes"] and not any(s.startswith("memory") for s in body["scopes"])
    assert body["token"]["key_registered"] is True and body["token"]["expires_in"] == 365 * 86400  # "about a year"
    assert body["implicit_scopes"] == ["webhook.read"]


def test_everything_reaches_all_memories_and_save(auto, agent_key):
    tok = pair_agent(auto, agent_key, [{"permissions": ["everything"]}])
    mem = policies(auto, tok)["access"]["memories"]
    assert mem["save"] and mem["read"]["all"] and mem["read"]["account_wildcard"] and mem["delete"]["all"]


# ── grant-request ─────────────────────────────────────────────────────────────────────────


def test_new_request_is_201_pending_then_approved(manual, agent_key):
    """201 with status: pending and a request_id … status is pending, approved, …"""
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.save"]}])
    r = ask(manual, tok, {"permissions": ["memory.edit"], "about": [TOPIC], "reason": "File the trip"})
    assert r.status_code == 201
    body = r.json()
    assert body["status"] == "pending" and body["permissions"] == ["memory.read", "memory.edit"]
    assert body["expires_in"] == 600 and "combined" not in body
    assert status(manual, tok, body["request_id"]) == "pending"
    v0 = policies(manual, tok)["access_version"]
    manual.post("/_sandbox/approve", json={"ref": body["request_id"]})
    assert status(manual, tok, body["request_id"]) == "approved"
    pol = policies(manual, tok)
    assert pol["access"]["memories"]["write"]["topics"] == [TOPIC]
    assert pol["access_version"] > v0


def test_auto_approve_grants_exactly_what_was_asked(auto, agent_key):
    tok = pair_agent(auto, agent_key, [{"permissions": ["memory.save"]}])
    r = ask(auto, tok, {"permissions": ["memory.read"], "datatypes": ["food"]})
    assert r.status_code == 201
    assert status(auto, tok, r.json()["request_id"]) == "approved"
    read = policies(auto, tok)["access"]["memories"]["read"]
    assert read["categories"] == ["food"] and read["all"] is False


def test_asks_join_the_open_request_with_combined(manual, agent_key):
    """If this connection already has a pending request, the new ask is added to it: the answer is still
    201 with status: pending, the SAME request_id, and combined: true."""
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.save"]}])
    first = ask(manual, tok, {"permissions": ["memory.read"], "datatypes": ["food"]}).json()
    second = ask(manual, tok, {"permissions": ["acctmem.read"], "account_id": ACCOUNT})
    assert second.status_code == 201
    assert second.json()["request_id"] == first["request_id"] and second.json()["combined"] is True
    assert second.json()["permissions"] == ["acctmem.read", "memory.read"]
    manual.post("/_sandbox/approve", json={"ref": first["request_id"]})
    read = policies(manual, tok)["access"]["memories"]["read"]
    assert read["categories"] == ["food"] and read["account_ids"] == [ACCOUNT]


def test_reason_reaches_the_owner_as_one_line(manual, agent_key):
    """reason is shown to the owner as one line: line breaks and control characters in it are replaced by a
    space, and invisible characters are removed."""
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.save"]}])
    ask(manual, tok, {"permissions": ["memory.read"], "reason": "Plan\ndinners\x07you\u200b like"})
    [item] = manual.get("/_sandbox/pending").json()["pending"]
    assert item["kind"] == "grant" and item["reasons"] == ["Plan dinners you like"]


def test_same_ask_while_pending_is_409_with_request_id(manual, agent_key):
    """Sending the same ask again is 409 GRANT_ALREADY_REQUESTED (wait on its request_id)."""
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.save"]}])
    first = ask(manual, tok, {"permissions": ["memory.read"], "datatypes": ["food"]}).json()
    r = ask(manual, tok, {"permissions": ["memory.read"], "datatypes": ["food"]})
    assert r.status_code == 409
    assert r.json()["code"] == "GRANT_ALREADY_REQUESTED" and r.json()["request_id"] == first["request_id"]


def test_held_access_is_200_already_granted(auto, agent_key):
    """When the connection already holds what you named … 200 { "status": "already_granted", "ends_at": … }."""
    tok = pair_agent(auto, agent_key, [{"permissions": ["memory.edit"]}])
    r = ask(auto, tok, {"permissions": ["memory.read"], "datatypes": ["food"]})
    assert r.status_code == 200
    assert r.json() == {"status": "already_granted", "permissions": ["memory.read"], "ends_at": None}
    wh = ask(auto, tok, {"permissions": ["webhook.read"]})
    assert wh.status_code == 200 and wh.json()["status"] == "already_granted"


def test_rate_limit_past_ten_a_minute(manual, clock, agent_key):
    """At most 10 asks a minute per connection (429 RATE_LIMITED, wait retry_after_seconds)."""
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.save"]}])
    cats = list(grants.CATEGORIES)
    for i in range(10):
        assert ask(manual, tok, {"permissions": ["memory.read"], "datatypes": [cats[i]]}).status_code == 201
        clock.advance(1)
    r = ask(manual, tok, {"permissions": ["memory.read"], "datatypes": [cats[10]]})
    assert r.status_code == 429 and r.json()["code"] == "RATE_LIMITED"
    assert r.json()["retry_after_seconds"] == 50
    clock.advance(50)
    assert ask(manual, tok, {"permissions": ["memory.read"], "datatypes": [cats[10]]}).status_code == 201


@pytest.mark.parametrize(
    "body, code",
    [
        ({"permissions": ["memory.read"], "kind": "memory"}, "UNKNOWN_KEY"),
        ({"permissions": ["memory.read"], "resource_id": ACCOUNT}, "UNKNOWN_KEY"),
        ({"permissions": ["memory.teleport"]}, "UNKNOWN_PERMISSION"),
        ({"permissions": ["memory.save"], "datatypes": ["food"]}, "ASK_ALONE"),
        ({"permissions": ["account.create", "account.read"]}, "ASK_ALONE"),
        ({"permissions": ["everything", "memory.read"]}, "ASK_ALONE"),
        ({"permissions": ["memory.read"], "datatypes": ["food"], "about": [TOPIC]}, "ONE_SELECTION"),
    ],
)
def test_bad_asks_are_400_and_store_nothing(manual, agent_key, body, code):
    """The ask was refused and nothing was stored: an unknown permission, a selection the permission does
    not take, a key that does not belong with permissions."""
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.save"]}])
    r = ask(manual, tok, body)
    assert r.status_code == 400 and r.json()["code"] == code
    assert manual.get("/_sandbox/pending").json()["pending"] == []


def test_denied_request_changes_nothing(manual, agent_key):
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.save"]}])
    rid = ask(manual, tok, {"permissions": ["memory.delete"]}).json()["request_id"]
    v = policies(manual, tok)["access_version"]
    manual.post("/_sandbox/deny", json={"ref": rid})
    assert status(manual, tok, rid) == "denied"
    pol = policies(manual, tok)
    assert pol["access"]["memories"]["delete"]["all"] is False and pol["access_version"] == v


def test_narrowed_approval_reads_resolved(manual, agent_key):
    """resolved (answered with changes: the request is gone and the owner's edited grant stands)."""
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.save"]}])
    rid = ask(manual, tok, {"permissions": ["memory.read"]}).json()["request_id"]
    manual.post(
        "/_sandbox/approve", json={"ref": rid, "narrow": [{"permissions": ["memory.read"], "datatypes": ["music"]}]}
    )
    assert status(manual, tok, rid) == "resolved"
    read = policies(manual, tok)["access"]["memories"]["read"]
    assert read["all"] is False and read["categories"] == ["music"]


def test_revoked_and_expired_request_status(manual, clock, agent_key):
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.save"]}])
    rid = ask(manual, tok, {"permissions": ["memory.read"]}).json()["request_id"]
    approved = manual.post("/_sandbox/approve", json={"ref": rid}).json()
    manual.post("/_sandbox/revoke", json={"token_id": tok["token_id"], "policy_id": approved["policy_id"]})
    assert status(manual, tok, rid) == "revoked"
    rid2 = ask(manual, tok, {"permissions": ["memory.read"], "datatypes": ["food"]}).json()["request_id"]
    manual.post("/_sandbox/approve", json={"ref": rid2, "expires_in_hours": 1})
    assert status(manual, tok, rid2) == "approved"
    clock.advance(3600)
    tok = manual.post(
        "/oauth/token", data={"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]}
    ).json()
    assert status(manual, tok, rid2) == "expired"


def test_another_tokens_request_reads_resolved_and_unknown_is_404(auto, agent_key):
    """Another token's request reads as resolved."""
    a = pair_agent(auto, agent_key, [{"permissions": ["memory.save"]}], name="A")
    b = pair_agent(auto, agent_key, [{"permissions": ["memory.save"]}], name="B")
    rid = ask(auto, a, {"permissions": ["memory.read"]}).json()["request_id"]
    assert status(auto, b, rid) == "resolved"
    r = auto.get("/api/agent/grant-request", params={"id": "00000000-0000-4000-8000-000000000000"}, headers=bearer(a))
    assert r.status_code == 404
    assert auto.get("/api/agent/grant-request", headers=bearer(a)).status_code == 400


# ── expiry and renewal ────────────────────────────────────────────────────────────────────


def test_renewal_only_inside_the_last_seven_days(manual, clock, agent_key):
    """Earlier than 7 days, the same ask answers 200 already_granted (with ends_at and permissions) …
    In the last 7 days … 201 with status: pending, renewal: true and ends_at … a repeat answers the same
    body with 200."""
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.save"]}])
    rid = ask(manual, tok, {"permissions": ["memory.read"]}).json()["request_id"]
    manual.post("/_sandbox/approve", json={"ref": rid, "expires_in_hours": 10 * 24})
    early = ask(manual, tok, {"permissions": ["memory.read"]})
    assert early.status_code == 200 and early.json()["status"] == "already_granted"
    ends = early.json()["ends_at"]
    assert ends is not None and early.json()["permissions"] == ["memory.read"]
    clock.advance(3 * DAY + 60)  # now 7 days minus a minute before the end
    tok = manual.post(
        "/oauth/token", data={"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]}
    ).json()
    renew = ask(manual, tok, {"permissions": ["memory.read"]})
    assert renew.status_code == 201
    body = renew.json()
    assert body["status"] == "pending" and body["renewal"] is True and body["ends_at"] == ends
    assert body["expires_in"] == 600 and body["request_id"]
    repeat = ask(manual, tok, {"permissions": ["memory.read"]})
    assert repeat.status_code == 200 and repeat.json() == body
    manual.post("/_sandbox/approve", json={"ref": body["request_id"], "expires_in_hours": 30 * 24})
    after = policies(manual, tok)
    assert all(p["expires_at"] > ends for p in after["policies"])


def test_expire_then_calls_need_a_new_request(manual, agent_key):
    """After the end date nothing is held … and an ask is a new request."""
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.read"]}])
    v = policies(manual, tok)["access_version"]
    manual.post("/_sandbox/expire", json={"token_id": tok["token_id"]})
    pol = policies(manual, tok)
    assert pol["access"]["memories"]["read"]["all"] is False and pol["access_version"] == v + 1
    assert pol["policies"][0]["status"] == "expired"
    r = ask(manual, tok, {"permissions": ["memory.read"]})
    assert r.status_code == 201 and r.json()["status"] == "pending" and "renewal" not in r.json()


# ── refusals ──────────────────────────────────────────────────────────────────────────────


def test_insufficient_body_round_trips_to_grant_request(manual, agent_key):
    """Send permission_request as the body of grant-request, unchanged."""
    problem = grantstore.insufficient("memory.edit", {"about": [TOPIC]})
    assert problem.status == 403
    body = problem.body()
    assert body["code"] == "INSUFFICIENT_GRANT" and body["required_permission"] == "memory.edit"
    err = error_from_response(403, body)
    assert isinstance(err, InsufficientGrant) and err.permission_request == body["permission_request"]
    tok = pair_agent(manual, agent_key, [{"permissions": ["memory.save"]}])
    r = ask(manual, tok, body["permission_request"])
    assert r.status_code == 201 and r.json()["permissions"] == ["memory.read", "memory.edit"]


def test_refusal_says_grant_expired_after_the_end_date(auto, agent_key):
    """403 GRANT_EXPIRED (a grant that has ended) carries required_permission and permission_request."""
    tok = pair_agent(auto, agent_key, [{"permissions": ["memory.read"], "datatypes": ["food"]}])
    state = auto.app.state.sb
    with state.store.tx() as con:
        assert (
            grantstore.refusal(con, tok["token_id"], state.now(), "memory.read", {"datatypes": ["food"]}).code
            == "INSUFFICIENT_GRANT"
        )  # held: a refusal for it would not be about expiry
    state.owner.expire(tok["token_id"])
    with state.store.tx() as con:
        p = grantstore.refusal(con, tok["token_id"], state.now(), "memory.read", {"datatypes": ["food"]})
        q = grantstore.refusal(con, tok["token_id"], state.now(), "memory.delete")
    assert p.code == "GRANT_EXPIRED" and p.extra["permission_request"]["datatypes"] == ["food"]
    assert q.code == "INSUFFICIENT_GRANT"


def test_selector_allows_via():
    """`via` records the access reason: self, all, category:<c>, topic:<id>, account:<id>, or an all-of reason."""
    sel = selectors.Selector(categories=frozenset({"food"}), topics=frozenset({TOPIC}), accounts=frozenset({ACCOUNT}))
    assert sel.allows_via("category:food") and not sel.allows_via("category:music")
    assert sel.allows_via(TOPIC) and sel.allows_via(f"account:{ACCOUNT}")
    assert not sel.allows_via("self") and not sel.allows_via("all")
    assert sel.allows_via(f"and:{TOPIC}+account:{ACCOUNT}")
    assert not sel.allows_via(f"and:{TOPIC}+account:00000000-0000-4000-8000-000000000009")
    everything = selectors.Selector(all=True)
    assert everything.allows_via("category:music") and not everything.allows_via(f"account:{ACCOUNT}")
    assert selectors.Selector().is_empty() and not sel.is_empty()

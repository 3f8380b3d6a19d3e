"""Pairing against the sandbox over HTTP: discovery, PAR, device authorization, token grants."""

from __future__ import annotations

import warnings

import pytest

from decoy_lab.sandbox import FakeClock, create_app
from decoy_lab.sandbox.routes.oauth import REFRESH_REPLAY_SECONDS
from decoy_lab.sandbox.testing import DEVICE_GRANT, bearer, pair_agent
from decoy_lab.wire.crypto import AgentKey

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

T0 = 1_800_000_000.0
YEAR = 365 * 86400  # "the token (`token.expires_at`, about a year, renewable with the refresh token)"
ACCOUNT = "3f1c2a4e-0000-4000-8000-000000000001"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def make(owner_pem: str, clock: FakeClock, approve: str = "auto") -> TestClient:
    app = create_app(":memory:", owner_key=owner_pem, approve=approve, seed="none", clock=clock)
    return TestClient(app)


@pytest.fixture
def client(owner_pem, clock) -> TestClient:
    return make(owner_pem, clock)


@pytest.fixture
def manual(owner_pem, clock) -> TestClient:
    return make(owner_pem, clock, approve="manual")


def device(client: TestClient, key: AgentKey | None, rows=None, **extra):
    body = {"client_id": "my-agent", "name": "My Agent", **extra}
    if rows is not None:
        body["authorization_details"] = rows
    if key is not None:
        body["agent_public_key"] = key.public_key_b64
    return client.post("/oauth/device", json=body)


def poll(client: TestClient, device_code: str, client_id: str = "my-agent"):
    return client.post(
        "/oauth/token", data={"grant_type": DEVICE_GRANT, "device_code": device_code, "client_id": client_id}
    )


# ── discovery ─────────────────────────────────────────────────────────────────────────────


def test_discovery_documents_point_at_the_endpoints(client):
    """Discovery at /.well-known/oauth-authorization-server and /.well-known/oauth-protected-resource."""
    a = client.get("/.well-known/oauth-authorization-server").json()
    assert a["device_authorization_endpoint"].endswith("/oauth/device")
    assert a["token_endpoint"].endswith("/oauth/token")
    assert a["pushed_authorization_request_endpoint"].endswith("/oauth/par")
    assert DEVICE_GRANT in a["grant_types_supported"] and "refresh_token" in a["grant_types_supported"]
    r = client.get("/.well-known/oauth-protected-resource").json()
    assert r["authorization_servers"] == [a["issuer"]]
    assert r["bearer_methods_supported"] == ["header"]


# ── PAR ───────────────────────────────────────────────────────────────────────────────────


def test_par_adds_needs_and_device_uses_the_request_uri(client, agent_key):
    """Needs are added for you: ask for acctmail.send and the answer's permissions lists acctmail.read too."""
    r = client.post(
        "/oauth/par",
        json={
            "client_id": "my-agent",
            "authorization_details": [
                {"permissions": ["acctmail.send"], "account_id": ACCOUNT},
                {"permissions": ["memory.delete"]},
            ],
        },
    )
    assert r.status_code == 201, r.text
    rows = r.json()["authorization_details"]
    assert rows[0]["permissions"] == ["acctmail.read", "acctmail.send"]
    assert rows[1]["permissions"] == ["memory.read", "memory.edit", "memory.delete"]
    d = client.post(
        "/oauth/device",
        json={
            "client_id": "my-agent",
            "name": "A",
            "request_uri": r.json()["request_uri"],
            "agent_public_key": agent_key.public_key_b64,
        },
    )
    assert d.status_code == 200
    assert d.json()["authorization_details"] == rows
    tok = poll(client, d.json()["device_code"]).json()
    assert tok["authorization_details"] == rows
    # a request_uri is single-use
    again = client.post("/oauth/device", json={"client_id": "my-agent", "request_uri": r.json()["request_uri"]})
    assert again.status_code == 400 and again.json()["error"] == "invalid_request_uri"


@pytest.mark.parametrize(
    "row, code",
    [
        ({"permissions": ["memory.read"], "resource_id": ACCOUNT}, "UNKNOWN_KEY"),
        ({"permissions": ["memory.read"], "level": "read"}, "UNKNOWN_KEY"),
        ({"permissions": ["memory.fly"]}, "UNKNOWN_PERMISSION"),
        ({"permissions": ["memory.read"], "datatypes": ["food"], "about": ["topic:x1"]}, "ONE_SELECTION"),
        ({"permissions": ["memory.read"], "account_id": ACCOUNT}, "SELECTION_NOT_TAKEN"),
        ({"permissions": ["acctmail.read"], "domain": "netflix.com"}, "SELECTION_NOT_TAKEN"),
        ({"permissions": ["memory.save", "memory.read"]}, "ASK_ALONE"),
        ({"permissions": ["everything"], "account_id": ACCOUNT}, "ASK_ALONE"),
        ({"permissions": ["memory.read"], "datatypes": ["snacks"]}, "INVALID_SELECTION"),
        ({"level": "read"}, "NAMED_PERMISSIONS_REQUIRED"),
        ({"kind": "alias", "actions": ["read_metadata"]}, "NAMED_PERMISSIONS_REQUIRED"),
        ({"kind": "memory", "actions": ["create", "read"]}, "ASK_ALONE"),
    ],
)
def test_par_refuses_what_the_spec_refuses(client, row, code):
    """Unknown keys are refused here with 400 invalid_authorization_details; one selection per row;
    account.create, memory.save and everything are asked alone."""
    r = client.post("/oauth/par", json={"authorization_details": [row]})
    assert r.status_code == 400
    assert r.json()["error"] == "invalid_authorization_details"
    assert r.json()["code"] == code


def test_older_kind_actions_rows_are_translated(client):
    """Older row forms (level, kind with actions) are still accepted for existing clients."""
    r = client.post(
        "/oauth/par",
        json={
            "authorization_details": [
                {"kind": "memory", "actions": ["create"]},
                {"kind": "memory", "action": "write", "datatypes": ["food"]},
            ]
        },
    )
    assert r.status_code == 201
    assert r.json()["authorization_details"] == [
        {"permissions": ["memory.save"]},
        {"permissions": ["memory.read", "memory.edit"], "datatypes": ["food"]},
    ]


def test_par_refuses_unknown_top_level_keys(client):
    r = client.post("/oauth/par", json={"authorization_details": [], "scopes_please": True})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"


def test_account_rows_may_mix_families_on_one_account(client):
    """One row may mix account.*, acctmail.* and acctmem.* on one account_id."""
    r = client.post(
        "/oauth/par",
        json={
            "authorization_details": [
                {"permissions": ["account.read", "acctmail.read", "acctmem.edit"], "account_id": ACCOUNT}
            ]
        },
    )
    assert r.status_code == 201
    assert r.json()["authorization_details"][0]["permissions"] == [
        "account.read",
        "acctmail.read",
        "acctmem.read",
        "acctmem.edit",
    ]


# ── device authorization ──────────────────────────────────────────────────────────────────


def test_device_answer_has_the_rfc8628_fields(client, agent_key):
    """POST /oauth/device answers device_code, user_code, verification_uri(_complete), expires_in 600, interval."""
    d = device(client, agent_key, [{"permissions": ["memory.save"]}]).json()
    assert d["expires_in"] == 600 and d["interval"] == 5
    assert d["verification_uri_complete"] == f"{d['verification_uri']}?code={d['user_code']}"
    assert len(d["user_code"].replace("-", "")) == 8
    assert "warnings" not in d


def test_device_with_nothing_asked_warns_and_gets_read_only_default(client, agent_key):
    """A request with neither is given a small read-only default (decoy.read, message.read, profile.read,
    account.read) and a no_scopes_requested warning."""
    d = device(client, agent_key).json()
    assert any(w.startswith("no_scopes_requested") for w in d["warnings"])
    tok = poll(client, d["device_code"]).json()
    assert tok["scope"].split() == ["account.read", "decoy.read", "message.read", "profile.read"]
    pol = client.get("/api/agent/policies", headers=bearer(tok)).json()
    assert pol["policies"] == []  # scopes alone authorize nothing
    assert pol["access"]["memories"]["read"]["all"] is False


@pytest.mark.parametrize(
    "uri, ignored",
    [
        ("https://agent.example.com", False),
        ("http://agent.example.com", True),
        ("https://127.0.0.1", True),
        ("https://localhost", True),
        ("https://agent.example.com:8443", True),
        ("https://u:p@agent.example.com", True),
    ],
)
def test_client_uri_must_be_a_public_https_site(client, uri, ignored):
    """The host must be a public domain name: no IP address, localhost or internal name, no port and no
    credentials; any other value is ignored and the answer's warnings carries client_uri_ignored."""
    d = client.post(
        "/oauth/device",
        json={"client_id": "a", "client_uri": uri, "authorization_details": [{"permissions": ["memory.save"]}]},
    ).json()
    assert any(w.startswith("client_uri_ignored") for w in d.get("warnings", [])) is ignored
    p = client.post(
        "/oauth/par",
        json={
            "client_uri": uri,
            "logo_uri": "https://x.example.com/l.png",
            "authorization_details": [{"permissions": ["memory.save"]}],
        },
    ).json()
    assert any(w.startswith("client_uri_ignored") for w in p["warnings"]) is ignored
    assert any(w.startswith("logo_uri_ignored") for w in p["warnings"])


def test_par_client_id_must_match_the_device_request(client):
    uri = client.post("/oauth/par", json={"client_id": "one", "authorization_details": []}).json()["request_uri"]
    r = client.post("/oauth/device", json={"client_id": "two", "request_uri": uri})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"


def test_device_webhook_read_alone_is_nothing_to_approve(client):
    """A request that names ONLY webhook.read … is refused with 400 NOTHING_TO_APPROVE."""
    r = client.post("/oauth/device", json={"client_id": "a", "scope": "webhook.read"})
    assert r.status_code == 400 and r.json()["code"] == "NOTHING_TO_APPROVE"


def test_device_requires_client_id_and_a_real_public_key(client):
    assert client.post("/oauth/device", json={"name": "x"}).status_code == 400
    r = client.post("/oauth/device", json={"client_id": "a", "agent_public_key": "bm90IGEga2V5"})
    assert r.status_code == 400 and "agent_public_key" in r.json()["error_description"]
    r = client.post("/oauth/device", json={"client_id": "a", "resource_id": "x"})
    assert r.status_code == 400


# ── token: device grant ───────────────────────────────────────────────────────────────────


def test_token_pending_slow_down_then_approved(manual, clock, agent_key):
    """authorization_pending until the owner answers; slow_down when polled faster than interval."""
    d = device(manual, agent_key, [{"permissions": ["memory.read"], "datatypes": ["food"]}]).json()
    first = poll(manual, d["device_code"])
    assert first.status_code == 400 and first.json()["error"] == "authorization_pending"
    clock.advance(1)
    fast = poll(manual, d["device_code"])
    assert fast.json()["error"] == "slow_down" and fast.json()["interval"] == 10
    clock.advance(6)  # 6 s < the grown 10 s interval
    assert poll(manual, d["device_code"]).json()["error"] == "slow_down"
    clock.advance(16)
    assert poll(manual, d["device_code"]).json()["error"] == "authorization_pending"
    assert manual.post("/_sandbox/approve", json={"ref": d["user_code"]}).status_code == 200
    tok = poll(manual, d["device_code"])
    assert tok.status_code == 200
    body = tok.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == YEAR  # the token lives "about a year"
    assert {"access_token", "refresh_token", "access_version"} <= body.keys()
    again = poll(manual, d["device_code"])
    assert again.json()["error"] == "invalid_grant"  # a device code is exchanged once


def test_interval_is_configurable_on_the_state(manual, agent_key):
    manual.app.state.sb.device_interval = 0
    d = device(manual, agent_key, [{"permissions": ["memory.save"]}]).json()
    assert d["interval"] == 0
    assert [poll(manual, d["device_code"]).json()["error"] for _ in range(3)] == ["authorization_pending"] * 3


def test_token_access_denied(manual, agent_key):
    d = device(manual, agent_key, [{"permissions": ["memory.save"]}]).json()
    assert manual.post("/_sandbox/deny", json={"ref": d["request_id"]}).json()["status"] == "denied"
    r = poll(manual, d["device_code"])
    assert r.status_code == 400 and r.json()["error"] == "access_denied"


def test_token_expired_after_ten_minutes(manual, clock, agent_key):
    """A short-lived (10-min) flow: after expires_in the code answers expired_token."""
    d = device(manual, agent_key, [{"permissions": ["memory.save"]}]).json()
    clock.advance(600)
    assert poll(manual, d["device_code"]).json()["error"] == "expired_token"
    late = manual.post("/_sandbox/approve", json={"ref": d["user_code"]})
    assert late.status_code == 409 and late.json()["code"] == "PAIRING_EXPIRED"


def test_token_is_form_encoded_and_checks_client_id(client, agent_key):
    d = device(client, agent_key, [{"permissions": ["memory.save"]}]).json()
    r = client.post(
        "/oauth/token", json={"grant_type": DEVICE_GRANT, "device_code": d["device_code"], "client_id": "my-agent"}
    )
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"
    assert poll(client, d["device_code"], client_id="someone-else").json()["error"] == "invalid_grant"
    r = client.post("/oauth/token", data={"grant_type": "password"})
    assert r.json()["error"] == "unsupported_grant_type"


# ── tokens: expiry, refresh, revocation ───────────────────────────────────────────────────


def test_expired_access_token_is_401_refresh_and_refresh_works(client, clock, agent_key):
    """401: recovery: refresh (TOKEN_EXPIRED) → POST /oauth/token with grant_type=refresh_token."""
    tok = pair_agent(client, agent_key, [{"permissions": ["memory.save"]}])
    assert client.get("/api/agent/policies", headers=bearer(tok)).status_code == 200
    clock.advance(YEAR - 1)
    assert client.get("/api/agent/policies", headers=bearer(tok)).status_code == 200
    clock.advance(1)
    r = client.get("/api/agent/policies", headers=bearer(tok))
    assert r.status_code == 401
    assert r.json()["code"] == "TOKEN_EXPIRED" and r.json()["recovery"] == "refresh"
    new = client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]})
    assert new.status_code == 200
    body = new.json()
    assert body["token_type"] == "Bearer" and body["token_id"] == tok["token_id"]
    assert body["access_version"] == tok["access_version"]
    assert client.get("/api/agent/policies", headers=bearer(body)).status_code == 200
    # refresh tokens rotate: once the short window for a lost answer is over, the old one is spent
    clock.advance(REFRESH_REPLAY_SECONDS + 1)
    reuse = client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]})
    assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"
    assert reuse.json()["code"] == "REFRESH_TOKEN_USED"


def test_a_refresh_whose_answer_was_lost_can_be_sent_again(client, clock, agent_key):
    """The project's rule for writes: "a network failure after a write is resolved by resending".
    The same refresh sent again soon after gets a new pair; the pair the lost answer carried is
    retired (its refresh token is spent, its access token replaced), and the window counts from
    the first use, so a third send after it is refused."""
    tok = pair_agent(client, agent_key, [{"permissions": ["memory.save"]}])
    form = {"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]}
    lost = client.post("/oauth/token", data=form).json()  # committed; say its answer never arrived
    clock.advance(30)
    again = client.post("/oauth/token", data=form)
    assert again.status_code == 200 and again.json()["token_id"] == tok["token_id"]
    assert client.get("/api/agent/policies", headers=bearer(again.json())).status_code == 200
    gone = client.get("/api/agent/policies", headers=bearer(lost))
    assert gone.status_code == 401 and gone.json()["code"] == "TOKEN_REPLACED"
    spent = client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": lost["refresh_token"]})
    assert spent.status_code == 400 and spent.json()["code"] == "REFRESH_TOKEN_USED"
    clock.advance(REFRESH_REPLAY_SECONDS)
    late = client.post("/oauth/token", data=form)
    assert late.status_code == 400 and late.json()["code"] == "REFRESH_TOKEN_USED"


def test_revoked_connection_is_401_re_pair(client, agent_key):
    """recovery: re_pair (TOKEN_REVOKED) → only a new owner-approved pairing, which inherits nothing."""
    tok = pair_agent(client, agent_key, [{"permissions": ["memory.save"]}])
    assert client.post("/_sandbox/revoke", json={"token_id": tok["token_id"]}).status_code == 200
    r = client.get("/api/agent/policies", headers=bearer(tok))
    assert r.status_code == 401 and r.json()["code"] == "TOKEN_REVOKED" and r.json()["recovery"] == "re_pair"
    ref = client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]})
    assert ref.status_code == 400 and ref.json()["code"] == "TOKEN_REVOKED"
    again = pair_agent(client, agent_key, [{"permissions": ["memory.read"]}])
    assert again["token_id"] != tok["token_id"]  # a new connection
    names = [
        r["permissions"]
        for p in client.get("/api/agent/policies", headers=bearer(again)).json()["policies"]
        for r in p["permissions"]
    ]
    assert names == [["memory.read"]]  # nothing inherited


def test_unknown_and_missing_tokens_are_401(client):
    assert client.get("/api/agent/policies").json()["code"] == "TOKEN_MISSING"
    r = client.get("/api/agent/policies", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401 and r.json()["recovery"] == "re_pair"


def test_refresh_never_extends_grant_expiry(manual, clock, agent_key):
    """A token refresh never extends access."""
    d = device(manual, agent_key, [{"permissions": ["memory.read"]}]).json()
    manual.post("/_sandbox/approve", json={"ref": d["user_code"], "expires_in_hours": 2})
    tok = poll(manual, d["device_code"]).json()
    pol = manual.get("/api/agent/policies", headers=bearer(tok)).json()
    ends = pol["policies"][0]["expires_at"]
    for _ in range(3):  # three refreshes over three hours
        clock.advance(3600)
        tok = manual.post(
            "/oauth/token", data={"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]}
        ).json()
    pol = manual.get("/api/agent/policies", headers=bearer(tok)).json()
    assert pol["policies"][0]["expires_at"] == ends
    assert pol["policies"][0]["status"] == "expired"
    assert pol["access"]["memories"]["read"]["all"] is False


# ── reconnect ─────────────────────────────────────────────────────────────────────────────


def test_reconnect_same_key_keeps_connection(client, agent_key):
    """Approved reconnect with the same key keeps memories and their keys."""
    first = pair_agent(client, agent_key, [{"permissions": ["memory.save"]}], name="Bot")
    second = pair_agent(client, agent_key, [{"permissions": ["memory.read"]}], name="Bot")
    assert second["token_id"] == first["token_id"]
    old = client.get("/api/agent/policies", headers=bearer(first))
    assert old.status_code == 401 and old.json()["code"] == "TOKEN_SUPERSEDED"
    mem = client.get("/api/agent/policies", headers=bearer(second)).json()["access"]["memories"]
    assert mem["save"] is True and mem["read"]["all"] is True  # old grant kept, new one added
    state = client.app.state.sb
    with state.store.tx() as con:
        row = con.execute("SELECT key_changed_at FROM connections WHERE token_id=?", (first["token_id"],)).fetchone()
    assert row["key_changed_at"] is None


def test_reconnect_new_key_records_key_changed_at(client, clock, agent_key):
    first = pair_agent(client, agent_key, [{"permissions": ["memory.save"]}], name="Bot")
    clock.advance(30)
    other = AgentKey.generate(bits=1024)
    second = pair_agent(client, other, [{"permissions": ["memory.save"]}], name="Bot")
    assert second["token_id"] == first["token_id"]
    with client.app.state.sb.store.tx() as con:
        row = con.execute("SELECT * FROM connections WHERE token_id=?", (first["token_id"],)).fetchone()
    assert row["public_key"] == other.public_key_b64 and row["key_changed_at"] == T0 + 30

"""The owner surface under /_sandbox/: loopback only, and the same operations as `Owner`."""

from __future__ import annotations

import warnings

import pytest

from decoy_lab.sandbox import FakeClock, create_app
from decoy_lab.sandbox.testing import DEVICE_GRANT, bearer, pair_agent
from decoy_lab.wire.crypto import AgentKey

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

T0 = 1_800_000_000.0


@pytest.fixture(scope="module")
def agent_key() -> AgentKey:
    return AgentKey.generate()


@pytest.fixture(scope="module")
def owner_key() -> AgentKey:
    return AgentKey.generate()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def app(owner_key, clock):
    return create_app(":memory:", owner_key=owner_key.to_pem(), approve="manual", seed="none", clock=clock)


@pytest.fixture
def client(app) -> TestClient:
    return TestClient(app)


def start_pairing(client, key, rows, name="Bot"):
    body = {
        "client_id": name.lower(),
        "name": name,
        "agent_public_key": key.public_key_b64,
        "authorization_details": rows,
    }
    return client.post("/oauth/device", json=body).json()


def test_non_loopback_clients_are_refused(app):
    """Owner surface … loopback only."""
    remote = TestClient(app, client=("203.0.113.7", 50000))
    for method, path in [
        ("GET", "/_sandbox/pending"),
        ("POST", "/_sandbox/approve"),
        ("POST", "/_sandbox/clock"),
        ("GET", "/_sandbox/rows"),
        ("POST", "/_sandbox/faults"),
        ("POST", "/_sandbox/revoke"),
    ]:
        r = remote.request(method, path, json={})
        assert r.status_code == 403 and r.json()["code"] == "LOOPBACK_ONLY", path
    # the agent API itself is not loopback-restricted
    assert remote.get("/.well-known/oauth-authorization-server").status_code == 200
    local = TestClient(app, base_url="http://127.0.0.1:8787", client=("127.0.0.1", 50000))
    assert local.get("/_sandbox/pending").status_code == 200


def test_owner_key_is_the_given_pem(app, owner_key):
    """holds the owner RSA key (generated, or owner_key= PEM)."""
    assert app.state.sb.owner.key.fingerprint == owner_key.fingerprint
    assert app.state.sb.owner.public_key_b64 == owner_key.public_key_b64


def test_pending_lists_pairings_in_the_owners_words(client, agent_key):
    d = start_pairing(client, agent_key, [{"permissions": ["memory.delete"], "datatypes": ["food"]}])
    [item] = client.get("/_sandbox/pending").json()["pending"]
    assert item["kind"] == "pairing" and item["user_code"] == d["user_code"] and item["name"] == "Bot"
    assert item["key_fingerprint"] == agent_key.fingerprint
    assert item["permissions"] == [
        {"permissions": ["memory.read", "memory.edit", "memory.delete"], "datatypes": ["food"]}
    ]
    assert item["headlines"][0] == "Read memories in food"
    page = client.get("/connect", params={"code": d["user_code"]})
    assert page.status_code == 200 and "Read memories in food" in page.text and d["request_id"] in page.text


def test_approve_by_user_code_narrowed(client, agent_key):
    """ "manual" waits for the owner surface, which can also narrow or deny."""
    d = start_pairing(client, agent_key, [{"permissions": ["memory.edit"]}])
    code = d["user_code"].lower().replace("-", "")  # the owner may type it loosely
    r = client.post(
        "/_sandbox/approve", json={"ref": code, "narrow": [{"permissions": ["memory.read"], "datatypes": ["travel"]}]}
    )
    assert r.status_code == 200 and r.json()["status"] == "resolved"
    tok = client.post(
        "/oauth/token", data={"grant_type": DEVICE_GRANT, "device_code": d["device_code"], "client_id": "bot"}
    ).json()
    mem = client.get("/api/agent/policies", headers=bearer(tok)).json()["access"]["memories"]
    assert mem["read"]["categories"] == ["travel"] and mem["write"]["categories"] == []
    again = client.post("/_sandbox/approve", json={"ref": d["request_id"]})
    assert again.status_code == 409 and again.json()["code"] == "REQUEST_ALREADY_DECIDED"


def test_approve_refuses_bad_narrow_and_unknown_refs(client, agent_key):
    d = start_pairing(client, agent_key, [{"permissions": ["memory.read"]}])
    bad = client.post("/_sandbox/approve", json={"ref": d["user_code"], "narrow": [{"permissions": ["nope"]}]})
    assert bad.status_code == 400
    assert client.post("/_sandbox/approve", json={"ref": "ZZZZ-ZZZZ"}).status_code == 404
    assert client.post("/_sandbox/approve", json={}).status_code == 400


def test_revoke_and_expire_bump_access_version(client, agent_key):
    """bumps access_version on every change."""
    tok = pair_agent(client, agent_key, [{"permissions": ["memory.read"]}])
    v = tok["access_version"]
    [conn] = client.get("/_sandbox/connections").json()["connections"]
    assert conn["token_id"] == tok["token_id"] and conn["access_version"] == v
    e = client.post("/_sandbox/expire", json={"token_id": tok["token_id"]}).json()
    assert e["access_version"] == v + 1 and e["expired"] == 1
    r = client.post("/_sandbox/revoke", json={"token_id": tok["token_id"]}).json()
    assert r["access_version"] == v + 2
    assert client.post("/_sandbox/revoke", json={"token_id": "nope"}).status_code == 404


def test_clock_moves_through_http(client, agent_key):
    """Tests need to move time through HTTP too."""
    tok = pair_agent(client, agent_key, [{"permissions": ["memory.read"]}])
    assert client.get("/_sandbox/clock").json() == {"now": T0, "iso": "2027-01-15T08:00:00Z", "adjustable": True}
    year = 365 * 86400  # the token lives "about a year"
    r = client.post("/_sandbox/clock", json={"advance": 3600})
    assert r.status_code == 200 and r.json()["now"] == T0 + 3600
    assert client.get("/api/agent/policies", headers=bearer(tok)).status_code == 200
    r = client.post("/_sandbox/clock", json={"advance": year - 3600})
    assert r.status_code == 200 and r.json()["now"] == T0 + year
    assert client.get("/api/agent/policies", headers=bearer(tok)).json()["code"] == "TOKEN_EXPIRED"
    assert client.post("/_sandbox/clock", json={"advance": -5}).status_code == 400


def test_clock_on_real_time_refuses_to_move(owner_key):
    real = TestClient(create_app(":memory:", owner_key=owner_key.to_pem(), seed="none"))
    r = real.post("/_sandbox/clock", json={"advance": 10})
    assert r.status_code == 409 and r.json()["code"] == "CLOCK_NOT_ADJUSTABLE"
    assert real.get("/_sandbox/clock").json()["adjustable"] is False


def test_faults_body_replaces_settings(client, app):
    """POST /_sandbox/faults (the body replaces the fault settings; {} turns them off)."""
    r = client.post("/_sandbox/faults", json={"error_5xx": 1.0, "seed": 3})
    assert r.status_code == 200
    assert app.state.sb.faults.as_json()["error_5xx"] == 1.0
    client.post("/_sandbox/faults", json={})
    assert not app.state.sb.faults.active
    bad = client.post("/_sandbox/faults", json={"meteor_strike": 1})
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_FAULTS"


def test_rows_app_view_and_share_answer_json(client):
    assert client.get("/_sandbox/rows").json() == {"rows": []}
    assert client.get("/_sandbox/app-view").json() == {"rows": []}
    r = client.post("/_sandbox/share", json={})
    assert r.status_code == 200 and isinstance(r.json(), dict)


def test_rows_show_a_saved_row_as_stored_and_app_view_opens_it(owner_key, clock, agent_key):
    """GET /_sandbox/rows ({"rows": [...]}, every stored row as stored: id, kid, ciphertext, owner_wrap,
    self_wrap, grantee wraps, rev, author); GET /_sandbox/app-view (every row as the owner's app sees it)."""
    from decoy_lab.memory import RecipientKeys, new_memory_row

    client = TestClient(create_app(":memory:", owner_key=owner_key.to_pem(), seed="none", clock=clock))
    tok = pair_agent(client, agent_key, [{"permissions": ["memory.save"]}])
    keys = RecipientKeys(owner_public_key=owner_key.public_key_b64, agent_public_key=agent_key.public_key_b64)
    row = new_memory_row(keys, "Prefers aisle seats.", categories=["travel"])
    saved = client.post("/api/agent/context/memories", json={"rows": [row]}, headers=bearer(tok))
    assert saved.status_code == 201, saved.text
    [stored] = client.get("/_sandbox/rows").json()["rows"]
    assert stored["id"] == row["id"] and stored["kid"] == row["kid"]
    assert stored["ciphertext"] == row["ciphertext"] and stored["owner_wrap"] == row["owner_wrap"]
    assert stored["self_wrap"] == row["self_wrap"] and stored["rev"] == 1
    view = client.get("/_sandbox/app-view").json()["rows"]
    assert [v["id"] for v in view] == [row["id"]] and view[0]["readable"] is True

"""Token introspection (RFC 7662), revocation (RFC 7009) and TOKEN_REPLACED, against the sandbox
over real HTTP. The sandbox runs on a FakeClock so expiry needs no sleeping."""

from __future__ import annotations

import uuid

import httpx
import pytest

from decoy_lab.sandbox.testing import bearer, pair_agent

SPEC_METADATA = (
    "RFC 8414 discovery document for Decoy's OAuth authorization server. Advertises the "
    "device-authorization, token, PAR, introspection, and revocation endpoints"
)


@pytest.fixture(scope="module")
def sb(clocked_sb):
    return clocked_sb


@pytest.fixture
def http(sb):
    with httpx.Client(base_url=sb.url, timeout=10) as client:
        yield client


@pytest.fixture
def paired(http):
    """A fresh connection holding memory.save: the pair_agent result plus its client_id."""
    client_id = f"revoke-test-{uuid.uuid4().hex[:8]}"
    tok = pair_agent(http, None, [{"permissions": ["memory.save"]}], client_id=client_id)
    return {**tok, "client_id": client_id}


def introspect(http, token: str, client_id: str, **extra):
    return http.post("/oauth/introspect", data={"token": token, "client_id": client_id, **extra})


def revoke(http, token: str, client_id: str, **extra):
    return http.post("/oauth/revoke", data={"token": token, "client_id": client_id, **extra})


def refresh(http, tok: dict):
    return http.post(
        "/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": tok["refresh_token"], "client_id": tok["client_id"]},
    )


# ── discovery ─────────────────────────────────────────────────────────────────────────────


def test_metadata_advertises_introspection_and_revocation(http):
    """ "Advertises the device-authorization, token, PAR, introspection, and revocation endpoints"."""
    doc = http.get("/.well-known/oauth-authorization-server").json()
    for key, path in (
        ("device_authorization_endpoint", "/oauth/device"),
        ("token_endpoint", "/oauth/token"),
        ("pushed_authorization_request_endpoint", "/oauth/par"),
        ("introspection_endpoint", "/oauth/introspect"),
        ("revocation_endpoint", "/oauth/revoke"),
    ):
        assert doc[key] == doc["issuer"] + path, key
    # RFC 8414 §2: the client authentication each endpoint takes (public clients: none)
    assert doc["introspection_endpoint_auth_methods_supported"] == ["none"]
    assert doc["revocation_endpoint_auth_methods_supported"] == ["none"]


# ── introspection (RFC 7662) ──────────────────────────────────────────────────────────────


def test_a_live_access_token_is_active_with_its_grant(http, paired, clock):
    """RFC 7662 §2.2: "active … REQUIRED"; scope, client_id, token_type, exp, iat, sub, iss are the
    optional members; RFC 9396 §9.2 adds the token's authorization_details."""
    r = introspect(http, paired["access_token"], paired["client_id"], token_type_hint="access_token")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    body = r.json()
    assert body["active"] is True and body["client_id"] == paired["client_id"]
    assert body["token_type"] == "Bearer" and body["sub"] == body["token_id"] == paired["token_id"]
    assert (
        body["scope"] == paired["token"]["scope"]
        and body["iss"] == http.get("/.well-known/oauth-authorization-server").json()["issuer"]
    )
    assert body["authorization_details"] == [{"permissions": ["memory.save"]}]
    assert body["iat"] == int(clock()) and body["exp"] == body["iat"] + paired["token"]["expires_in"]


def test_a_live_refresh_token_is_active_whatever_the_hint(http, paired):
    """RFC 7662 §2.1: "If the server is unable to locate the token using the given hint, it MUST
    extend its search across all of its supported token types"."""
    body = introspect(http, paired["refresh_token"], paired["client_id"], token_type_hint="access_token").json()
    assert body["active"] is True and body["sub"] == paired["token_id"] and "token_type" not in body
    assert introspect(http, paired["refresh_token"], paired["client_id"], token_type_hint="bogus").json()["active"]


def test_unknown_expired_used_and_foreign_tokens_are_inactive_and_say_nothing_more(http, sb, clock):
    """RFC 7662 §2.2: "If the introspection call is properly authorized but the token is not active, does
    not exist on this server, or the protected resource is not allowed to introspect this particular
    token, then the authorization server MUST return an introspection response with the "active" field
    set to "false"" … "SHOULD NOT include any additional information about an inactive token"."""
    client_id = f"expiry-{uuid.uuid4().hex[:8]}"
    tok = {**pair_agent(http, None, [{"permissions": ["memory.save"]}], client_id=client_id), "client_id": client_id}
    assert introspect(http, "dla_not-a-token", client_id).json() == {"active": False}
    assert introspect(http, tok["access_token"], "someone-else").json() == {"active": False}
    clock.advance(sb.state.token_ttl)  # the access token's own clock ran out; the refresh token lives on
    assert introspect(http, tok["access_token"], client_id).json() == {"active": False}
    assert introspect(http, tok["refresh_token"], client_id).json()["active"] is True
    assert refresh(http, tok).status_code == 200  # refresh tokens rotate: the old one is now used
    assert introspect(http, tok["refresh_token"], client_id).json() == {"active": False}


def test_introspection_needs_a_client_id_and_a_token_in_a_form(http, paired):
    """RFC 7662 §2.1: "the endpoint MUST also require some form of authorization" — a public device-grant
    client authenticates by naming its client_id (RFC 6749 §5.2 `invalid_client` otherwise)."""
    r = http.post("/oauth/introspect", data={"token": paired["access_token"]})
    assert r.status_code == 400 and r.json()["error"] == "invalid_client"
    r = http.post("/oauth/introspect", data={"client_id": paired["client_id"]})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"
    r = http.post("/oauth/introspect", json={"token": paired["access_token"], "client_id": paired["client_id"]})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"  # "HTTP POST … form-encoded"


# ── revocation (RFC 7009) ─────────────────────────────────────────────────────────────────


def test_revoking_an_unknown_token_still_answers_200(http):
    """RFC 7009 §2.2: "The authorization server responds with HTTP status code 200 if the token has been
    revoked successfully or if the client submitted an invalid token"."""
    r = revoke(http, "dlr_never-issued", "any-client", token_type_hint="refresh_token")
    assert r.status_code == 200


def test_revoking_the_refresh_token_ends_the_connection(http, paired):
    """RFC 7009 §2.1: "If the particular token is a refresh token … the authorization server SHOULD also
    invalidate all access tokens based on the same authorization grant"; the spec: "`recovery: re_pair`
    (`TOKEN_REVOKED`) → only a new owner-approved pairing, which inherits nothing"."""
    req = http.post(
        "/api/agent/grant-request", headers=bearer(paired), json={"permissions": ["memory.read"], "reason": "left open"}
    )
    assert req.status_code in (200, 201)
    r = revoke(http, paired["refresh_token"], paired["client_id"], token_type_hint="refresh_token")
    assert r.status_code == 200
    call = http.get("/api/agent/policies", headers=bearer(paired))
    assert call.status_code == 401 and call.json()["code"] == "TOKEN_REVOKED" and call.json()["recovery"] == "re_pair"
    again = refresh(http, paired)
    assert again.status_code == 400 and again.json()["code"] == "TOKEN_REVOKED"
    for token in (paired["access_token"], paired["refresh_token"]):
        assert introspect(http, token, paired["client_id"]).json() == {"active": False}
    assert revoke(http, paired["refresh_token"], paired["client_id"]).status_code == 200  # already inactive
    fresh = pair_agent(http, None, [{"permissions": ["memory.save"]}], client_id=paired["client_id"])
    assert fresh["token_id"] != paired["token_id"]  # a new connection, not a reconnect of the revoked one


def test_revoking_the_access_token_ends_the_connection_too(http, paired):
    """RFC 7009 §2.1: "If the token passed to the request is an access token, the server MAY revoke the
    respective refresh token as well" — the sandbox has no per-token revocation, so it does."""
    assert revoke(http, paired["access_token"], paired["client_id"]).status_code == 200
    assert http.get("/api/agent/policies", headers=bearer(paired)).json()["code"] == "TOKEN_REVOKED"
    assert refresh(http, paired).json()["code"] == "TOKEN_REVOKED"


def test_another_clients_token_is_refused_and_stays_live(http, paired):
    """RFC 7009 §2.1: the server "verifies whether the token was issued to the client making the
    revocation request. If this validation fails, the request is refused and the client is informed"."""
    r = revoke(http, paired["refresh_token"], "someone-else")
    assert r.status_code == 400 and r.json()["error"] == "unauthorized_client"
    assert http.get("/api/agent/policies", headers=bearer(paired)).status_code == 200
    r = http.post("/oauth/revoke", data={"token": paired["refresh_token"]})
    assert r.status_code == 400 and r.json()["error"] == "invalid_client"
    assert http.get("/api/agent/policies", headers=bearer(paired)).status_code == 200


# ── TOKEN_REPLACED ────────────────────────────────────────────────────────────────────────


def test_an_access_token_replaced_by_a_refresh_answers_token_replaced(http, paired):
    """ "`401`: `recovery: refresh` (`TOKEN_EXPIRED`, `TOKEN_REPLACED`) → `POST /oauth/token` with
    `grant_type=refresh_token` renews the same connection"."""
    new = refresh(http, paired).json()
    old = http.get("/api/agent/policies", headers=bearer(paired))
    assert old.status_code == 401 and old.json()["code"] == "TOKEN_REPLACED" and old.json()["recovery"] == "refresh"
    assert 'error="invalid_token"' in old.headers["www-authenticate"]
    assert introspect(http, paired["access_token"], paired["client_id"]).json() == {"active": False}
    renewed = refresh(http, {**paired, "refresh_token": new["refresh_token"]}).json()
    assert renewed["token_id"] == paired["token_id"]  # the same connection
    assert http.get("/api/agent/policies", headers=bearer(new)).json()["code"] == "TOKEN_REPLACED"
    assert http.get("/api/agent/policies", headers=bearer(renewed)).status_code == 200

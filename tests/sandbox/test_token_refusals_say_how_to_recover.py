"""What an agent is answered when its bearer token will not do, over HTTP: `401` with the
`code`, the `recovery` that says what to do next, and a message in words.

Spec 001: "**`401`**: `recovery: refresh` (`TOKEN_EXPIRED`, `TOKEN_REPLACED`) → `POST /oauth/token`
with `grant_type=refresh_token` renews the same connection; `recovery: continue` → … `TOKEN_SUPERSEDED`:
the owner reconnected this connection on a newer token. … `recovery: re_pair` (`TOKEN_REVOKED`) →
only a new owner-approved pairing, which inherits nothing."
"""

from __future__ import annotations

import itertools
import warnings

import pytest

from decoy_lab.sandbox import FakeClock, create_app
from decoy_lab.sandbox.testing import pair_agent

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

T0 = 1_800_000_000.0
POLICIES = "/api/agent/policies"

_names = itertools.count()


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture(scope="module")
def client(owner_pem, clock) -> TestClient:
    app = create_app(":memory:", owner_key=owner_pem, approve="auto", seed="none", clock=clock)
    return TestClient(app)


def paired(client: TestClient, name: str | None = None, key=None) -> dict:
    return pair_agent(client, key, [{"permissions": ["memory.save"]}], name=name or f"Agent {next(_names)}")


def call(client: TestClient, authorization: str | None):
    headers = {} if authorization is None else {"Authorization": authorization}
    return client.get(POLICIES, headers=headers)


INVALID = "this is not a token this sandbox issued; pair again"


def refused(r, code: str, recovery: str, message: str) -> None:
    assert r.status_code == 401, r.text
    body = r.json()
    assert (body["code"], body["error"], body["recovery"], body["message"]) == (code, code, recovery, message)
    assert r.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'


# ── the header ─────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Bearer    ", "Basic dXNlcjpwYXNz", "Token abc"])
def test_no_bearer_token_is_token_missing(client, authorization):
    """ "Then send: Authorization: Bearer <token>"."""
    refused(call(client, authorization), "TOKEN_MISSING", "re_pair", "send Authorization: Bearer <access_token>")


def test_the_scheme_is_matched_whatever_its_case(client):
    """RFC 7235 §2.1: the auth-scheme is case-insensitive; the token itself is not."""
    tok = paired(client)["access_token"]
    assert call(client, f"bearer {tok}").status_code == 200
    assert call(client, f"BEARER {tok}").status_code == 200
    assert call(client, f"Bearer   {tok}").status_code == 200  # spaces around the token are not part of it
    refused(call(client, f"Bearer {tok.upper()}"), "TOKEN_INVALID", "re_pair", INVALID)


# ── each state of a token ──────────────────────────────────────────────────────────────────


def test_a_token_this_sandbox_never_issued_is_invalid(client):
    refused(call(client, "Bearer dla_not-a-token"), "TOKEN_INVALID", "re_pair", INVALID)


def test_a_refresh_token_is_no_access_token(client):
    """The refresh token goes to `POST /oauth/token` only; sent as a bearer it is refused like any
    token this sandbox did not issue as an access token."""
    tok = paired(client)
    refused(call(client, f"Bearer {tok['refresh_token']}"), "TOKEN_INVALID", "re_pair", INVALID)


def test_a_revoked_connection_is_re_pair(client, clock):
    tok = paired(client)
    assert client.post("/_sandbox/revoke", json={"token_id": tok["token_id"]}).status_code == 200
    words = "this connection was revoked; only a new pairing helps"
    refused(call(client, f"Bearer {tok['access_token']}"), "TOKEN_REVOKED", "re_pair", words)
    # revoked stays the answer after the token's own clock has run out too: refreshing cannot help
    clock.advance(client.app.state.sb.token_ttl + 1)
    refused(call(client, f"Bearer {tok['access_token']}"), "TOKEN_REVOKED", "re_pair", words)


def test_a_reconnected_connections_old_token_is_superseded(client):
    """ "`TOKEN_SUPERSEDED`: the owner reconnected this connection on a newer token … the connection
    lives on": the old token says so; the new one works."""
    name = f"Agent {next(_names)}"
    first = paired(client, name)
    second = paired(client, name)
    assert second["token_id"] == first["token_id"]
    refused(
        call(client, f"Bearer {first['access_token']}"),
        "TOKEN_SUPERSEDED",
        "continue",
        "this connection was reconnected on a newer token; use that one",
    )
    assert call(client, f"Bearer {second['access_token']}").status_code == 200


def test_an_access_token_a_refresh_replaced_says_refresh_again(client):
    tok = paired(client)
    new = client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": tok["refresh_token"]})
    assert new.status_code == 200
    refused(
        call(client, f"Bearer {tok['access_token']}"),
        "TOKEN_REPLACED",
        "refresh",
        "a refresh replaced this access token; refresh again at POST /oauth/token with the current refresh token",
    )


def test_an_expired_token_is_refused_from_its_expiry_on(client, clock):
    """`TOKEN_EXPIRED` → `recovery: refresh`; policies' `token.expires_at` names the moment."""
    tok = paired(client)
    pol = call(client, f"Bearer {tok['access_token']}").json()
    ttl = client.app.state.sb.token_ttl
    assert pol["token"]["expires_in"] == ttl
    clock.advance(ttl - 1)
    assert call(client, f"Bearer {tok['access_token']}").json()["token"]["expires_in"] == 1
    clock.advance(1)
    refused(
        call(client, f"Bearer {tok['access_token']}"),
        "TOKEN_EXPIRED",
        "refresh",
        "the access token expired; refresh it at POST /oauth/token",
    )


# ── introspection says the same, without the why ───────────────────────────────────────────


def test_introspection_is_active_until_the_expiry_second(client, clock):
    """RFC 7662: a token past its expiry is `{"active": false}`; up to it, active."""
    tok = paired(client, "Introspected")
    ttl = client.app.state.sb.token_ttl
    form = {"token": tok["access_token"], "client_id": "introspected"}
    clock.advance(ttl - 1)
    assert client.post("/oauth/introspect", data=form).json()["active"] is True
    clock.advance(1)
    assert client.post("/oauth/introspect", data=form).json() == {"active": False}


def test_introspection_of_a_revoked_connections_tokens_is_inactive(client):
    tok = paired(client, "Revoked Introspected")
    form = {"token": tok["refresh_token"], "client_id": "revoked-introspected"}
    assert client.post("/oauth/introspect", data=form).json()["active"] is True
    assert client.post("/_sandbox/revoke", json={"token_id": tok["token_id"]}).status_code == 200
    assert client.post("/oauth/introspect", data=form).json() == {"active": False}
    access = {**form, "token": tok["access_token"]}
    assert client.post("/oauth/introspect", data=access).json() == {"active": False}

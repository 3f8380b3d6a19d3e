"""Pairing's discovery documents and `POST /oauth/token` (PAR and device authorization: authorize.py).

The device grant follows RFC 8628 with RFC 9126 PAR and RFC 9396 rows. `/oauth/token` is
form-encoded (RFC 6749): the device-code grant answers `authorization_pending`, `slow_down`
(polled sooner than `interval` after the previous poll; the interval then grows by 5 s),
`expired_token`, `access_denied`; the refresh grant rotates the refresh token. Both answer
`access_token`, `refresh_token`, `token_type: "Bearer"`, `expires_in`, `access_version`,
`scope`, `token_id` and the granted `authorization_details`. Refreshing never extends a
grant's end date: it only mints new credentials for the same connection.

Refresh tokens rotate. The spec says nothing of an answer lost on the way, and the project's rule
is that a network failure after a write is resolved by sending the same request again: so a
refresh token used less than `REFRESH_REPLAY_SECONDS` ago is honoured once more (the pair its first
use minted is retired, and the window still counts from that first use); after that it answers
`REFRESH_TOKEN_USED`. A stolen token replayed inside the window would win the same way: that is
the price of the window, and why it is short. `strict_rotation` (`Sandbox.start(strict_rotation=True)`,
`decoy-lab sandbox --strict-rotation`) turns the window
off (a used refresh token is dead at once, as OAuth 2.1 servers commonly do), to test clients
that share one profile between processes.

A refresh grant that cannot succeed names its own code with `recovery: re_pair`
(`REFRESH_TOKEN_EXPIRED`, `REFRESH_TOKEN_USED`, `TOKEN_REVOKED`, `TOKEN_INVALID`): the spec pairs
`TOKEN_EXPIRED` with `recovery: refresh`, so that code is never the answer to a refresh that failed.
A refresh replaces the connection's access tokens: an older one then answers `401 TOKEN_REPLACED`
(`recovery: refresh`). Introspection (RFC 7662) and revocation (RFC 7009) live in token_admin.py.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import grants, grantstore
from decoy_lab.sandbox.core import OAuthProblem, base_url, form_body, state_of
from decoy_lab.sandbox.stores.db import token_hash
from decoy_lab.vocab import DEVICE_GRANT, REFRESH_GRANT

# ── discovery ──────────────────────────────────────────────────────────────────────────────


async def authorization_server(request: Request) -> JSONResponse:
    base = base_url(request)
    doc = {
        "issuer": base,
        "device_authorization_endpoint": f"{base}/oauth/device",
        "token_endpoint": f"{base}/oauth/token",
        "pushed_authorization_request_endpoint": f"{base}/oauth/par",
        "introspection_endpoint": f"{base}/oauth/introspect",
        "revocation_endpoint": f"{base}/oauth/revoke",
        "introspection_endpoint_auth_methods_supported": ["none"],  # public clients name their client_id
        "revocation_endpoint_auth_methods_supported": ["none"],
        "grant_types_supported": [DEVICE_GRANT, REFRESH_GRANT],
        "response_types_supported": [],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": list(grants.ALL_SCOPES),
        "authorization_details_types_supported": [grants.UNLOCK_TYPE],
        "permissions_supported": list(grants.PERMISSIONS),
        "require_pushed_authorization_requests": False,
    }
    return JSONResponse(doc, headers={"Cache-Control": "public, max-age=3600"})


async def protected_resource(request: Request) -> JSONResponse:
    base = base_url(request)
    doc = {
        "resource": base,
        "resource_name": "Decoy sandbox",
        "authorization_servers": [base],
        "bearer_methods_supported": ["header"],
        "scopes_supported": list(grants.ALL_SCOPES),
        "authorization_details_types_supported": [grants.UNLOCK_TYPE],
    }
    return JSONResponse(doc, headers={"Cache-Control": "public, max-age=3600"})


# ── token ──────────────────────────────────────────────────────────────────────────────────


def mint(con, state, token_id: str, now: float) -> dict[str, Any]:
    """New access + refresh tokens for a connection, and the token answer."""
    access, refresh = "dla_" + secrets.token_urlsafe(32), "dlr_" + secrets.token_urlsafe(32)
    con.execute(
        "INSERT INTO credentials (hash, token_id, kind, issued_at, expires_at) VALUES (?,?,?,?,?)",
        (token_hash(access), token_id, "access", now, now + state.token_ttl),
    )
    con.execute(
        "INSERT INTO credentials (hash, token_id, kind, issued_at, expires_at) VALUES (?,?,?,?,?)",
        (token_hash(refresh), token_id, "refresh", now, now + state.refresh_ttl),
    )
    conn = con.execute("SELECT * FROM connections WHERE token_id=?", (token_id,)).fetchone()
    rows = grantstore.live_rows(con, token_id, now)
    return {
        "access_token": access,
        "refresh_token": refresh,
        "token_type": "Bearer",
        "expires_in": state.token_ttl,
        "access_version": conn["access_version"],
        "scope": " ".join(grants.scopes_for(rows, json.loads(conn["scopes"] or "[]"))),
        "token_id": token_id,
        "authorization_details": [r.as_json() for r in rows],
    }


def _device_grant(con, state, form: dict[str, str], now: float) -> dict[str, Any]:
    code = form.get("device_code")
    if not code:
        raise OAuthProblem(400, "invalid_request", "`device_code` is required")
    sess = con.execute("SELECT * FROM device_sessions WHERE device_hash=?", (token_hash(code),)).fetchone()
    if sess is None:
        raise OAuthProblem(400, "invalid_grant", "unknown device_code")
    if form.get("client_id") != sess["client_id"]:
        raise OAuthProblem(400, "invalid_grant", "`client_id` does not match the device authorization")
    if sess["status"] == "consumed":
        raise OAuthProblem(400, "invalid_grant", "this device_code was already exchanged")
    if now >= sess["expires_at"]:
        raise OAuthProblem(400, "expired_token", "the pairing link expired; start again with POST /oauth/device")
    if sess["status"] == "denied":
        raise OAuthProblem(400, "access_denied", "the owner denied this pairing")
    if sess["status"] == "pending":
        last, interval = sess["last_poll"], sess["interval"]
        if last is not None and now - last < interval:
            con.execute(
                "UPDATE device_sessions SET last_poll=?, interval=? WHERE device_hash=?",
                (now, interval + 5, sess["device_hash"]),
            )
            raise OAuthProblem(
                400,
                "slow_down",
                f"polled sooner than {interval:g} s; wait {interval + 5:g} s",
                interval=int(interval + 5),
            )
        con.execute("UPDATE device_sessions SET last_poll=? WHERE device_hash=?", (now, sess["device_hash"]))
        raise OAuthProblem(400, "authorization_pending", "the owner has not answered yet")
    con.execute("UPDATE device_sessions SET status='consumed' WHERE device_hash=?", (sess["device_hash"],))
    return mint(con, state, sess["token_id"], now)


REFRESH_REPLAY_SECONDS = 120  # how long a used refresh token may be sent again (a lost answer)


def _refresh_grant(con, state, form: dict[str, str], now: float) -> dict[str, Any]:
    token = form.get("refresh_token")
    if not token:
        raise OAuthProblem(400, "invalid_request", "`refresh_token` is required")
    cred = con.execute("SELECT * FROM credentials WHERE hash=? AND kind='refresh'", (token_hash(token),)).fetchone()
    if cred is None:
        raise OAuthProblem(400, "invalid_grant", "unknown refresh_token", code="TOKEN_INVALID", recovery="re_pair")
    conn = con.execute("SELECT * FROM connections WHERE token_id=?", (cred["token_id"],)).fetchone()
    if form.get("client_id") and form["client_id"] != conn["client_id"]:
        raise OAuthProblem(400, "invalid_grant", "`client_id` does not match this connection")
    if conn["revoked"]:
        raise OAuthProblem(
            400, "invalid_grant", "this connection was revoked", code="TOKEN_REVOKED", recovery="re_pair"
        )
    if cred["state"] == "superseded":
        raise OAuthProblem(
            400,
            "invalid_grant",
            "this connection was reconnected on a newer token",
            code="TOKEN_SUPERSEDED",
            recovery="continue",
        )
    window = 0.0 if state.strict_rotation else REFRESH_REPLAY_SECONDS
    replay = cred["state"] == "used" and now - (cred["used_at"] or 0.0) <= window and window > 0
    if cred["state"] in ("used", "retired") and not replay:
        raise OAuthProblem(
            400,
            "invalid_grant",
            "this refresh_token was already used (they rotate)",
            code="REFRESH_TOKEN_USED",
            recovery="re_pair",
        )
    if now >= cred["expires_at"]:
        raise OAuthProblem(
            400, "invalid_grant", "the refresh_token expired", code="REFRESH_TOKEN_EXPIRED", recovery="re_pair"
        )
    if replay:  # sent again soon after its use: that answer was lost on the way
        con.execute(
            "UPDATE credentials SET state='retired' WHERE token_id=? AND kind='refresh' AND state='live'",
            (conn["token_id"],),
        )  # the pair it minted: never replayable itself
    else:
        con.execute("UPDATE credentials SET state='used', used_at=? WHERE hash=?", (now, cred["hash"]))
    con.execute(
        "UPDATE credentials SET state='replaced' WHERE token_id=? AND kind='access' AND state='live'",
        (conn["token_id"],),
    )
    return mint(con, state, conn["token_id"], now)


async def token(request: Request) -> JSONResponse:
    state = state_of(request)
    form = await form_body(request)
    grant_type = form.get("grant_type")
    now = state.now()
    if grant_type not in (DEVICE_GRANT, REFRESH_GRANT):
        raise OAuthProblem(400, "unsupported_grant_type", f"unsupported grant_type {grant_type!r}")
    keep: OAuthProblem | None = None
    with state.store.tx() as con:
        try:
            if grant_type == DEVICE_GRANT:
                answer = _device_grant(con, state, form, now)
            else:
                answer = _refresh_grant(con, state, form, now)
        except OAuthProblem as exc:
            if exc.oauth_error not in ("authorization_pending", "slow_down"):
                raise
            keep = exc  # the poll time (and a grown interval) must be committed
    if keep is not None:
        raise keep
    return JSONResponse(answer, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})


routes = [
    Route("/.well-known/oauth-authorization-server", authorization_server, methods=["GET"]),
    Route("/.well-known/oauth-protected-resource", protected_resource, methods=["GET"]),
    Route("/oauth/token", token, methods=["POST"]),
]

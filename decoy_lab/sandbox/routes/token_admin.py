"""`POST /oauth/introspect` (RFC 7662) and `POST /oauth/revoke` (RFC 7009).

The spec only says the discovery document "Advertises the device-authorization, token, PAR,
introspection, and revocation endpoints"; what follows is the RFCs plus these choices:

- **Client authentication.** Decoy's clients are public device-grant clients
  (`token_endpoint_auth_methods_supported: ["none"]`), so a client authenticates the way it does
  at `/oauth/token`: by naming its `client_id` in the form. Without one the answer is
  `400 invalid_client` (RFC 6749 §5.2), which also keeps both endpoints from being used to scan
  for tokens (RFC 7662 §2.1).
- **Introspection** answers `{"active": false}` and nothing else (RFC 7662 §2.2) for a token that
  is unknown, expired, used, replaced, superseded or revoked, and for a token issued to another
  client. A live token answers `active`, `client_id`, `scope`, `token_type` (access tokens),
  `exp`, `iat`, `sub` (the connection's `token_id`), `iss`, `access_version` and the granted
  `authorization_details` (RFC 9396 §9.2). A connection whose grants ended still has an active
  token: the token's clock and the grants' are independent.
- **Revocation** answers 200 for an unknown or no-longer-live token (RFC 7009 §2.2). A live token
  issued to another client is refused with `400 unauthorized_client` and nothing changes
  (RFC 7009 §2.1). Revoking a live refresh token ends the connection, which the RFC allows ("may
  cause the revocation of related tokens and the underlying authorization grant"), and so does
  revoking a live access token ("MAY revoke the respective refresh token as well"): the sandbox
  has no per-token revocation, so either way the connection ends as an owner's revoke ends it —
  its tokens answer `401 TOKEN_REVOKED` (`recovery: re_pair`), its open requests are denied, and
  pairing again makes a new connection that inherits nothing. `token_type_hint` is optional; an
  unknown hint is ignored and every token type is searched (RFC 7009 §2.1, RFC 7662 §2.1).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from decoy_lab.sandbox.checks import grants, grantstore
from decoy_lab.sandbox.checks.bearer import live_credential
from decoy_lab.sandbox.core import OAuthProblem, base_url, form_body, state_of

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
INACTIVE = {"active": False}


async def _client_and_token(request: Request) -> tuple[str, str]:
    form = await form_body(request)
    client_id = (form.get("client_id") or "").strip()
    if not client_id:
        raise OAuthProblem(
            400,
            "invalid_client",
            "name your `client_id`: public clients authenticate with it (token_endpoint_auth_method none)",
        )
    token = form.get("token")
    if not token:
        raise OAuthProblem(400, "invalid_request", "`token` is required")
    return client_id, token


async def introspect(request: Request) -> JSONResponse:
    state = state_of(request)
    client_id, token = await _client_and_token(request)
    now = state.now()
    with state.store.tx() as con:
        live = live_credential(con, token, now)
        if live is None or live[1]["client_id"] != client_id:
            return JSONResponse(INACTIVE, headers=NO_STORE)
        cred, conn = live
        rows = grantstore.live_rows(con, conn["token_id"], now)
    answer: dict[str, Any] = {
        "active": True,
        "client_id": conn["client_id"],
        "scope": " ".join(grants.scopes_for(rows, json.loads(conn["scopes"] or "[]"))),
        "exp": int(cred["expires_at"]),
        "iat": int(cred["issued_at"]),
        "sub": conn["token_id"],
        "iss": base_url(request),
        "token_id": conn["token_id"],
        "access_version": conn["access_version"],
        "authorization_details": [r.as_json() for r in rows],
    }
    if cred["kind"] == "access":
        answer["token_type"] = "Bearer"
    return JSONResponse(answer, headers=NO_STORE)


async def revoke(request: Request) -> Response:
    state = state_of(request)
    client_id, token = await _client_and_token(request)
    with state.store.tx() as con:
        live = live_credential(con, token, state.now())
        if live is not None:
            conn = live[1]
            if conn["client_id"] != client_id:
                raise OAuthProblem(
                    400, "unauthorized_client", "this token was not issued to this `client_id`; nothing was revoked"
                )
            state.owner.revoke(conn["token_id"])  # joins this transaction
    return Response(status_code=200, headers=NO_STORE)


routes = [
    Route("/oauth/introspect", introspect, methods=["POST"]),
    Route("/oauth/revoke", revoke, methods=["POST"]),
]

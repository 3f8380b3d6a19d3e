"""Pairing: discovery documents, `POST /oauth/par`, `POST /oauth/device`, `POST /oauth/token`.

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
the price of the window, and why it is short.

A refresh grant that cannot succeed names its own code with `recovery: re_pair`
(`REFRESH_TOKEN_EXPIRED`, `REFRESH_TOKEN_USED`, `TOKEN_REVOKED`, `TOKEN_INVALID`): the spec pairs
`TOKEN_EXPIRED` with `recovery: refresh`, so that code is never the answer to a refresh that failed.
A refresh replaces the connection's access tokens: an older one then answers `401 TOKEN_REPLACED`
(`recovery: refresh`). Introspection (RFC 7662) and revocation (RFC 7009) live in token_admin.py.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..vocab import DEVICE_GRANT, REFRESH_GRANT
from . import grants
from .app import HTTPProblem, json_body, state_of
from .db import token_hash

USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"  # no vowels, no look-alikes (RFC 8628 §6.1)
PAR_KEYS = {"authorization_details", "scope", "client_id", "client_uri", "icon", "logo_uri"}
DEVICE_KEYS = {
    "request_uri",
    "name",
    "scopes",
    "scope",
    "authorization_details",
    "client_id",
    "platform",
    "client_uri",
    "icon",
    "logo_uri",
    "redirect_uri",
    "state",
    "agent_public_key",
    "keep",
}
_HOST_RE = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
_INTERNAL_SUFFIXES = (".local", ".localhost", ".internal", ".lan", ".home", ".corp", ".test", ".invalid")


class OAuthProblem(HTTPProblem):
    """An RFC 6749-shaped error: `{"error": "invalid_grant", "error_description": …}`."""

    def __init__(self, status: int, error: str, description: str, **extra: Any):
        super().__init__(status, extra.pop("code", error), description, **extra)
        self.oauth_error = error

    def body(self) -> dict[str, Any]:
        return {
            "error": self.oauth_error,
            "error_description": self.message,
            "code": self.code,
            "message": self.message,
            **self.extra,
        }


def base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


# ── discovery ─────────────────────────────────────────────────────────────────────────────


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


# ── shared parsing ────────────────────────────────────────────────────────────────────────


def _rows(value: Any) -> list[grants.Row]:
    try:
        return grants.parse_rows(value)
    except grants.RequestError as exc:
        raise OAuthProblem(400, "invalid_authorization_details", exc.message, code=exc.code) from None


def _legacy_scopes(body: dict[str, Any]) -> tuple[list[str], bool]:
    """Scopes named in `scopes` / `scope` → (known scopes without webhook.read, anything named)."""
    named: list[str] = []
    if body.get("scopes") is not None:
        if not isinstance(body["scopes"], list) or not all(isinstance(s, str) for s in body["scopes"]):
            raise OAuthProblem(400, "invalid_scope", "`scopes` must be a list of scope names")
        named += body["scopes"]
    if body.get("scope") is not None:
        if not isinstance(body["scope"], str):
            raise OAuthProblem(400, "invalid_scope", "`scope` is a space-separated string")
        named += body["scope"].split()
    unknown = sorted({s for s in named if s not in grants.ALL_SCOPES and s not in grants.IMPLICIT_SCOPES})
    if unknown:
        raise OAuthProblem(400, "invalid_scope", f"unknown scope(s) {unknown}")
    return sorted({s for s in named if s not in grants.IMPLICIT_SCOPES}), bool(named)


def _check_keys(body: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise OAuthProblem(400, "invalid_request", f"unknown key(s) {unknown}")


def _client_id(body: dict[str, Any], *, required: bool) -> str | None:
    cid = body.get("client_id")
    if cid is None and not required:
        return None
    if not isinstance(cid, str) or not cid.strip():
        raise OAuthProblem(400, "invalid_request", "`client_id` is required (a non-empty string)")
    return cid.strip()


def client_warnings(body: dict[str, Any]) -> list[str]:
    """`client_uri_ignored` (with the reason) for a client_uri that is not a public https site,
    and `logo_uri_ignored` when the request carried `logo_uri` (it is never used)."""
    out: list[str] = []
    uri = body.get("client_uri")
    if uri is not None:
        why = None
        if not isinstance(uri, str) or len(uri) > 2048:
            why = "not a string of at most 2048 characters"
        else:
            parts = urlsplit(uri)
            host = (parts.hostname or "").lower()
            if parts.scheme != "https":
                why = "not https"
            elif parts.username or parts.password:
                why = "carries credentials"
            elif parts.port is not None:
                why = "carries a port"
            elif not _HOST_RE.match(host) or host.endswith(_INTERNAL_SUFFIXES):
                why = "the host is not a public domain name (IP address, localhost or internal name)"
        if why:
            out.append(f"client_uri_ignored: {why}")
    if body.get("logo_uri") is not None:
        out.append("logo_uri_ignored: logo_uri is not used; the icon comes from client_uri's favicon or `icon`")
    return out


def is_form(request: Request) -> bool:
    return request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded")


async def form_body(request: Request) -> dict[str, str]:
    """A form-encoded body as a dict (the last value of a repeated key wins), or 400 invalid_request."""
    if not is_form(request):
        raise OAuthProblem(
            400, "invalid_request", f"POST {request.url.path} is form-encoded (application/x-www-form-urlencoded)"
        )
    try:
        parsed = parse_qs((await request.body()).decode(), keep_blank_values=True)
    except UnicodeDecodeError:
        raise OAuthProblem(400, "invalid_request", "the form is not UTF-8") from None
    return {k: v[-1] for k, v in parsed.items()}


# ── PAR ───────────────────────────────────────────────────────────────────────────────────


async def par(request: Request) -> JSONResponse:
    state = state_of(request)
    if is_form(request):
        form = await form_body(request)
        try:
            body: dict[str, Any] = {
                **form,
                "authorization_details": json.loads(form.get("authorization_details", "null")),
            }
        except json.JSONDecodeError:
            raise OAuthProblem(400, "invalid_authorization_details", "`authorization_details` is not JSON") from None
    else:
        body = await json_body(request)
    _check_keys(body, PAR_KEYS)
    if "authorization_details" not in body or body["authorization_details"] is None:
        raise OAuthProblem(400, "invalid_request", "`authorization_details` is required")
    rows = _rows(body["authorization_details"])
    scopes, named = _legacy_scopes(body)
    if named and not scopes:  # only webhook.read: kept, so the device call can refuse NOTHING_TO_APPROVE
        scopes = list(grants.IMPLICIT_SCOPES)
    client_id = _client_id(body, required=False)
    uri = "urn:ietf:params:oauth:request_uri:" + secrets.token_urlsafe(24)
    now = state.now()
    with state.store.tx() as con:
        con.execute(
            "INSERT INTO par_requests (request_uri, entries, scopes, client_id, expires_at) VALUES (?,?,?,?,?)",
            (uri, json.dumps([r.as_json() for r in rows]), json.dumps(scopes), client_id, now + state.device_ttl),
        )
    answer: dict[str, Any] = {
        "request_uri": uri,
        "expires_in": state.device_ttl,
        "authorization_details": [r.as_json() for r in rows],
    }
    warnings = client_warnings(body)
    if warnings:
        answer["warnings"] = warnings
    return JSONResponse(answer, status_code=201)


# ── device authorization ──────────────────────────────────────────────────────────────────


def _user_code() -> str:
    raw = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(8))
    return f"{raw[:4]}-{raw[4:]}"


def _public_key(value: Any) -> str | None:
    if value is None:
        return None
    from ..crypto import load_public_key
    from ..errors import WireFormatError

    if not isinstance(value, str):
        raise OAuthProblem(400, "invalid_request", "`agent_public_key` must be base64 SPKI DER text")
    try:
        load_public_key(value)
    except WireFormatError as exc:
        raise OAuthProblem(400, "invalid_request", f"`agent_public_key`: {exc}") from None
    return value


async def device(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    _check_keys(body, DEVICE_KEYS)
    client_id = _client_id(body, required=True)
    name = body.get("name", client_id)
    if not isinstance(name, str) or not name.strip():
        raise OAuthProblem(400, "invalid_request", "`name` must be a non-empty string")
    name = grants.sanitize_reason(name)[:100]
    if body.get("platform", "mcp") not in ("mcp", "oauth"):
        raise OAuthProblem(400, "invalid_request", "`platform` is mcp or oauth")
    public_key = _public_key(body.get("agent_public_key"))
    if body.get("request_uri") is not None and body.get("authorization_details") is not None:
        raise OAuthProblem(400, "invalid_request", "send `request_uri` or `authorization_details`, not both")
    now = state.now()
    warnings = client_warnings(body)
    with state.store.tx() as con:
        legacy, named_scopes = _legacy_scopes(body)
        if body.get("request_uri") is not None:
            p = con.execute("SELECT * FROM par_requests WHERE request_uri=?", (body["request_uri"],)).fetchone()
            if p is None or p["used"] or now >= p["expires_at"]:
                raise OAuthProblem(400, "invalid_request_uri", "unknown, used or expired `request_uri`")
            if p["client_id"] and p["client_id"] != client_id:
                raise OAuthProblem(400, "invalid_request", "`client_id` differs from the PAR request's")
            con.execute("UPDATE par_requests SET used=1 WHERE request_uri=?", (p["request_uri"],))
            rows = [grants.Row.from_json(r) for r in json.loads(p["entries"])]
            par_scopes = json.loads(p["scopes"])
            named_scopes = named_scopes or bool(par_scopes)  # "in `scopes`, `scope` or a PAR `scope`"
            legacy = sorted(set(legacy) | {s for s in par_scopes if s not in grants.IMPLICIT_SCOPES})
        elif body.get("authorization_details") is not None:
            rows = _rows(body["authorization_details"])
        else:
            rows = []
        if rows:
            scopes: list[str] = []  # authorization_details is authoritative
        elif legacy:
            scopes = legacy
        elif named_scopes:
            raise OAuthProblem(
                400,
                "NOTHING_TO_APPROVE",
                "webhook.read is held by every connection; there is nothing for the owner to approve",
                code="NOTHING_TO_APPROVE",
            )
        else:
            scopes = list(grants.DEFAULT_SCOPES)
            warnings.append(
                "no_scopes_requested: nothing was asked, so the owner sees a near-empty screen and must "
                "build the grant by hand; the default is read-only scopes with no permissions. Name "
                "permissions in authorization_details."
            )
        device_code = secrets.token_urlsafe(32)
        user_code = _user_code()
        request_id = grants.new_id()
        con.execute(
            "INSERT INTO device_sessions (device_hash, user_code, request_id, client_id, name, public_key,"
            " entries, scopes, warnings, created_at, expires_at, interval, last_poll, status)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,NULL,'pending')",
            (
                token_hash(device_code),
                user_code,
                request_id,
                client_id,
                name,
                public_key,
                json.dumps([r.as_json() for r in rows]),
                json.dumps(scopes),
                json.dumps(warnings),
                now,
                now + state.device_ttl,
                state.device_interval,
            ),
        )
        state.owner.on_pairing(con, request_id)
    verify = f"{base_url(request)}/connect"
    answer: dict[str, Any] = {
        "device_code": device_code,
        "user_code": user_code,
        "verification_uri": verify,
        "verification_uri_complete": f"{verify}?code={quote(user_code)}",
        "expires_in": state.device_ttl,
        "interval": state.device_interval,
        "request_id": request_id,
        "authorization_details": [r.as_json() for r in rows],
        "permissions": sorted({n for r in rows for n in r.permissions}, key=grants.ORDER.__getitem__),
    }
    if warnings:
        answer["warnings"] = warnings
    return JSONResponse(answer, headers={"Cache-Control": "no-store"})


# ── token ─────────────────────────────────────────────────────────────────────────────────


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
    rows = grants.live_rows(con, token_id, now)
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
    replay = cred["state"] == "used" and now - (cred["used_at"] or 0.0) <= REFRESH_REPLAY_SECONDS
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
    Route("/oauth/par", par, methods=["POST"]),
    Route("/oauth/device", device, methods=["POST"]),
    Route("/oauth/token", token, methods=["POST"]),
]

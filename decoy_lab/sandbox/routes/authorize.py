"""The pairing's ask: `POST /oauth/par` (RFC 9126) and `POST /oauth/device` (RFC 8628, RFC 9396 rows).

Each checks the rows the agent asks for (grants.parse_row), the client's name and links, and
the agent's public key, then queues the ask for the owner's phone (owner.py).
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
from typing import Any
from urllib.parse import quote, urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import grants
from decoy_lab.sandbox.core import OAuthProblem, base_url, form_body, is_form, json_body, state_of
from decoy_lab.sandbox.stores.db import token_hash

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


# ── shared parsing ─────────────────────────────────────────────────────────────────────────


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


# ── PAR ────────────────────────────────────────────────────────────────────────────────────


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


# ── device authorization ───────────────────────────────────────────────────────────────────


def _user_code() -> str:
    raw = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(8))
    return f"{raw[:4]}-{raw[4:]}"


def _public_key(value: Any) -> str | None:
    if value is None:
        return None
    from decoy_lab.errors import WireFormatError
    from decoy_lab.wire.crypto import load_public_key

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
    name = _device_name(body, client_id)
    public_key = _public_key(body.get("agent_public_key"))
    if body.get("request_uri") is not None and body.get("authorization_details") is not None:
        raise OAuthProblem(400, "invalid_request", "send `request_uri` or `authorization_details`, not both")
    now = state.now()
    warnings = client_warnings(body)
    with state.store.tx() as con:
        rows, legacy, named_scopes = _asked(con, body, client_id, now)
        scopes = _device_scopes(rows, legacy, named_scopes, warnings)
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


def _device_name(body: dict[str, Any], client_id: str | None) -> str:
    """The connection's name as the owner sees it (the client_id when none is given); `platform` checked."""
    name = body.get("name", client_id)
    if not isinstance(name, str) or not name.strip():
        raise OAuthProblem(400, "invalid_request", "`name` must be a non-empty string")
    name = grants.sanitize_reason(name)[:100]
    if body.get("platform", "mcp") not in ("mcp", "oauth"):
        raise OAuthProblem(400, "invalid_request", "`platform` is mcp or oauth")
    return name


def _asked(
    con: sqlite3.Connection, body: dict[str, Any], client_id: str | None, now: float
) -> tuple[list[grants.Row], list[str], bool]:
    """(rows, legacy scopes, whether scopes were named) a device request asks for: its own
    `authorization_details`, or those of the PAR request its `request_uri` names (used once)."""
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
    return rows, legacy, named_scopes


def _device_scopes(rows: list[grants.Row], legacy: list[str], named_scopes: bool, warnings: list[str]) -> list[str]:
    """The session's scopes: none beside rows (authorization_details is authoritative), else the
    legacy ones, else the defaults with a warning; webhook.read alone is nothing to approve."""
    if rows:
        return []
    if legacy:
        return legacy
    if named_scopes:
        raise OAuthProblem(
            400,
            "NOTHING_TO_APPROVE",
            "webhook.read is held by every connection; there is nothing for the owner to approve",
            code="NOTHING_TO_APPROVE",
        )
    warnings.append(
        "no_scopes_requested: nothing was asked, so the owner sees a near-empty screen and must "
        "build the grant by hand; the default is read-only scopes with no permissions. Name "
        "permissions in authorization_details."
    )
    return list(grants.DEFAULT_SCOPES)


routes = [
    Route("/oauth/par", par, methods=["POST"]),
    Route("/oauth/device", device, methods=["POST"]),
]

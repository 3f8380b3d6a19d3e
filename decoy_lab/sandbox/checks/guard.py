"""Who may talk to the sandbox: the owner surface for the owner alone, no web page on the agent API.

A web page the owner happens to open must not approve a pairing, nor queue one named "Your bank"
before the owner. So:
- The owner surface (`/_sandbox/…`, `/connect`) answers a loopback peer only (uvicorn runs with
  proxy headers off, so `X-Forwarded-For` never makes a remote peer look local), and only under a
  loopback Host name: `localhost`, an IP literal in 127.0.0.0/8 or `[::1]`, parsed as an address
  (`ipaddress`), never matched as a prefix (`127.0.0.1.evil.example` is a name anyone can point
  anywhere). A DNS-rebinding page reaches it under its own name and is refused. `Origin`, when
  sent, must be that same loopback origin, and `Sec-Fetch-Site`, when sent, `same-origin` or `none`.
- A state-changing POST there carries the per-run secret (`X-Sandbox-Token` header or `token`
  form field; the connect page embeds it, `GET /_sandbox/token` hands it to a loopback caller) or
  is `application/json`, which no page can send cross-site without a CORS preflight the sandbox
  never grants. Anything else is 403 CROSS_SITE_REFUSED.
- The agent API refuses a request whose `Origin` is not a loopback origin.
- Every body is typed and bounded (`body_rule`): a JSON route reads `application/json` only
  (optionally `; charset=utf-8`; anything else is 415 UNSUPPORTED_MEDIA_TYPE, so a page's
  `text/plain` "simple" request never reaches a JSON parser), the OAuth form routes their form
  (RFC 6749/8628), and each route has a size cap: a larger `Content-Length` is 413 before a byte
  is read, and a chunked body is counted as it streams and refused (413) once it passes the cap.
`STRICT` carries the sandbox's `strict` setting into the body checks of the request.
"""

from __future__ import annotations

import contextvars
import hmac
import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from decoy_lab.sandbox.core import HTTPProblem
from decoy_lab.vocab import MAX_CIPHERTEXT

STRICT: contextvars.ContextVar[bool] = contextvars.ContextVar("sandbox_strict", default=True)
IN_PROCESS = "testclient"  # Starlette's in-process TestClient: its peer name, and its Host is "testserver"
OWNER_PATHS = ("/_sandbox/", "/connect")
TOKEN_HEADER = "x-sandbox-token"


def is_loopback(host: str | None) -> bool:
    """`localhost`, or an IP address in 127.0.0.0/8 or `::1` (also IPv4-mapped, `::ffff:127.0.0.1`);
    a trailing dot, brackets and case do not matter. A name is never an address by its prefix."""
    if not host:
        return False
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name in ("localhost", IN_PROCESS):
        return True
    try:
        addr = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def _host_name(value: str) -> str:
    """The name of a Host header or an origin's authority, without port ("[::1]:8787" → "::1");
    "" for anything that is not one (a user part, a path, a bad port)."""
    value = value.strip()
    if not value or any(c in value for c in "@/\\?# \t"):
        return ""
    try:
        parts = urlsplit("//" + value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError:
        return ""
    return parts.hostname or ""


def loopback_name(host_header: str, peer: str | None) -> bool:
    name = _host_name(host_header)
    return (is_loopback(name) and name != IN_PROCESS) or (peer == IN_PROCESS and name == "testserver")


def loopback_origin(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or parts.path or parts.query or parts.fragment:
        return False
    name = _host_name(parts.netloc)
    return is_loopback(name) and name != IN_PROCESS


def check_owner(request: Request, *, changes: bool, form_token: str | None = None) -> None:
    """Refuse anything but the owner on this machine (see the module docstring)."""
    peer = request.client.host if request.client else None
    if not is_loopback(peer):
        raise HTTPProblem(403, "LOOPBACK_ONLY", "the owner surface answers only clients on this machine")
    host = request.headers.get("host", "")
    if not loopback_name(host, peer):
        raise HTTPProblem(
            403, "HOST_REFUSED", f"the owner surface answers only under a loopback name, not {_host_name(host)!r}"
        )
    origin = request.headers.get("origin")
    if origin is not None and not (loopback_origin(origin) and urlsplit(origin).netloc == host):
        raise HTTPProblem(403, "CROSS_SITE_REFUSED", "the owner surface refuses requests from another site")
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        raise HTTPProblem(403, "CROSS_SITE_REFUSED", f"the owner surface refuses {site} requests")
    if not changes:
        return
    secret = request.app.state.sb.owner_secret
    token = request.headers.get(TOKEN_HEADER) or form_token or ""
    json_typed = media_type(request.headers.get("content-type")) == JSON
    if not (json_typed or hmac.compare_digest(token.encode(), secret.encode())):
        raise HTTPProblem(
            403,
            "CROSS_SITE_REFUSED",
            "a change on the owner surface is application/json or carries this run's token "
            f"({TOKEN_HEADER} header or `token` field)",
        )


# ── bodies: typed and bounded ──────────────────────────────────────────────────────────────

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
KIB = 1024
MAX_ROWS = 200  # the spec: rows "maxItems: 200" (POST context/memories, context/rows); = bodies.MAX_ROWS
# One sealed row as JSON: a ciphertext of at most MAX_CIPHERTEXT (100 KiB) in base64 (~137 KB), its
# owner and self wraps, and up to 100 grantee wraps (~0.5 KB each), with room to spare.
ROW_JSON = 4 * MAX_CIPHERTEXT // 3 + 120 * KIB  # ~253 KiB; a batch of MAX_ROWS, ~50 MB
SMALL = 64 * KIB  # any other agent/OAuth body: a grant request, 500 ids to delete, a device request
OWNER = 16 * KIB  # an owner action: a ref, a few permission rows, a fault setting


@dataclass(frozen=True)
class BodyRule:
    cap: int  # bytes
    types: tuple[str, ...]  # media types the route reads


_RULES: dict[tuple[str, str], BodyRule] = {
    ("POST", "/api/agent/context/memories"): BodyRule(MAX_ROWS * ROW_JSON + SMALL, (JSON,)),
    ("POST", "/api/agent/context/rows"): BodyRule(MAX_ROWS * ROW_JSON + SMALL, (JSON,)),
    ("PUT", "/api/agent/context/memories"): BodyRule(ROW_JSON + SMALL, (JSON,)),
    ("PUT", "/api/agent/context/rows"): BodyRule(ROW_JSON + SMALL, (JSON,)),
    ("POST", "/api/agent/context/memory-wraps"): BodyRule(ROW_JSON, (JSON,)),
    ("POST", "/oauth/par"): BodyRule(SMALL, (JSON, FORM)),  # JSON, or a form as RFC 9126 sends it
    ("POST", "/oauth/device"): BodyRule(SMALL, (JSON,)),  # the spec: `-H 'Content-Type: application/json'`
    ("POST", "/oauth/token"): BodyRule(OWNER, (FORM,)),  # RFC 6749 §3.2 / RFC 8628 §3.4: form-encoded
    ("POST", "/oauth/introspect"): BodyRule(OWNER, (FORM,)),  # RFC 7662 §2.1
    ("POST", "/oauth/revoke"): BodyRule(OWNER, (FORM,)),  # RFC 7009 §2.1
    ("POST", "/_sandbox/edit"): BodyRule(ROW_JSON, (JSON, FORM)),  # a memory's new text
}


#: the account family's writes carry a sealed record of up to 64 KB ("≤64 KB") beside other blobs
ACCOUNT_FAMILY = ("/api/agent/accounts", "/api/agent/decoys")
ACCOUNT_JSON = 2 * 4 * 64 * KIB // 3 + SMALL


def body_rule(method: str, path: str) -> BodyRule:
    """What a request's body may be: its cap and the media types its route reads."""
    rule = _RULES.get((method, path))
    if rule is not None:
        return rule
    if method in ("POST", "PATCH", "PUT") and path.startswith(ACCOUNT_FAMILY):
        return BodyRule(ACCOUNT_JSON, (JSON,))
    if path.startswith(OWNER_PATHS):
        return BodyRule(OWNER, (JSON, FORM))  # JSON, or the connect page's forms (with the token)
    return BodyRule(SMALL, (JSON,))


def media_type(content_type: str | None) -> str | None:
    """`application/json` for `application/json` or `application/json; charset=utf-8` (any case);
    None for no header; "" for anything with another parameter (a charset that is not UTF-8, …)."""
    if content_type is None:
        return None
    kind, *params = (p.strip().lower() for p in content_type.split(";"))
    if any(p.replace(" ", "").replace('"', "") not in ("charset=utf-8", "") for p in params):
        return ""
    return kind


def too_large(cap: int) -> HTTPProblem:
    return HTTPProblem(413, "BODY_TOO_LARGE", f"this route reads a body of at most {cap} bytes", max_bytes=cap)


class _BoundedBody:
    """The request's `receive`, refusing a body of the wrong type (415) or past the cap (413)
    as it streams: nothing past the cap is ever held."""

    def __init__(self, receive: Receive, rule: BodyRule, content_type: str | None) -> None:
        self.receive, self.rule, self.content_type, self.seen = receive, rule, content_type, 0
        self.typed = media_type(content_type) in rule.types

    async def __call__(self) -> Message:
        message = await self.receive()
        if message["type"] == "http.request":
            chunk = message.get("body", b"")
            if not self.typed and (chunk or self.content_type is not None):
                raise HTTPProblem(
                    415,
                    "UNSUPPORTED_MEDIA_TYPE",
                    f"this route reads {' or '.join(self.rule.types)}, not {self.content_type or 'an untyped body'}",
                    accepts=list(self.rule.types),
                )
            self.seen += len(chunk)
            if self.seen > self.rule.cap:
                raise too_large(self.rule.cap)
        return message


class Guard:
    """ASGI middleware: sets STRICT per request, refuses a foreign Origin on the agent API, and
    types and bounds every body (`body_rule`)."""

    def __init__(self, app: ASGIApp, state) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode(): v.decode("latin-1") for k, v in scope["headers"] if k in (b"origin", b"content-type")}
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        rule = body_rule(scope["method"], scope["path"])
        refusal = None
        if not scope["path"].startswith(OWNER_PATHS):
            origin = headers.get("origin")
            if origin is not None and not loopback_origin(origin):
                refusal = HTTPProblem(
                    403, "CROSS_SITE_REFUSED", "the agent API refuses requests a web page sends (a non-loopback Origin)"
                )
        if refusal is None and length is not None and length.strip().isdigit() and int(length) > rule.cap:
            refusal = too_large(rule.cap)  # before a byte of it is read
        if refusal is not None:
            await refusal.response()(scope, receive, send)
            return
        token = STRICT.set(bool(self.state.strict))
        try:
            await self.app(scope, _BoundedBody(receive, rule, headers.get("content-type")), send)
        finally:
            STRICT.reset(token)

"""Who may talk to the sandbox: the owner surface for the owner alone, no web page on the agent API.

A web page the owner happens to open must not approve a pairing, nor queue one named "Your bank"
before the owner. So:
- The owner surface (`/_sandbox/…`, `/connect`) answers a loopback peer only (uvicorn runs with
  proxy headers off, so `X-Forwarded-For` never makes a remote peer look local), and only under a
  loopback Host name (`localhost`, `127.x.x.x`, `[::1]`): a DNS-rebinding page reaches it under
  its own name and is refused. `Origin`, when sent, must be that same loopback origin, and
  `Sec-Fetch-Site`, when sent, `same-origin` or `none`.
- A state-changing POST there carries the per-run secret (`X-Sandbox-Token` header or `token`
  form field; the connect page embeds it, `GET /_sandbox/token` hands it to a loopback caller) or
  is `application/json`, which no page can send cross-site without a CORS preflight the sandbox
  never grants. Anything else is 403 CROSS_SITE_REFUSED.
- The agent API refuses a request whose `Origin` is not a loopback origin.
`STRICT` carries the sandbox's `strict` setting into the body checks of the request.
"""

from __future__ import annotations

import contextvars
import hmac
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from .core import HTTPProblem

STRICT: contextvars.ContextVar[bool] = contextvars.ContextVar("sandbox_strict", default=True)
IN_PROCESS = "testclient"  # Starlette's in-process TestClient: its peer name, and its Host is "testserver"
OWNER_PATHS = ("/_sandbox/", "/connect")
TOKEN_HEADER = "x-sandbox-token"


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    return host in ("::1", "localhost", IN_PROCESS) or host.startswith("127.") or host == "::ffff:127.0.0.1"


def _host_name(value: str) -> str:
    """The name of a Host header or an origin's authority, without port ("[::1]:8787" → "::1")."""
    try:
        return urlsplit("//" + value).hostname or ""
    except ValueError:
        return ""


def loopback_name(host_header: str, peer: str | None) -> bool:
    name = _host_name(host_header)
    return (is_loopback(name) and name != IN_PROCESS) or (peer == IN_PROCESS and name == "testserver")


def loopback_origin(origin: str) -> bool:
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and is_loopback(parts.hostname) and parts.hostname != IN_PROCESS


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
    json_typed = request.headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"
    if not (json_typed or hmac.compare_digest(token.encode(), secret.encode())):
        raise HTTPProblem(
            403,
            "CROSS_SITE_REFUSED",
            "a change on the owner surface is application/json or carries this run's token "
            f"({TOKEN_HEADER} header or `token` field)",
        )


class Guard:
    """ASGI middleware: sets STRICT per request and refuses a foreign Origin on the agent API."""

    def __init__(self, app: ASGIApp, state) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not scope["path"].startswith(OWNER_PATHS):
            origin = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"origin"), None)
            if origin is not None and not loopback_origin(origin):
                refusal = HTTPProblem(
                    403, "CROSS_SITE_REFUSED", "the agent API refuses requests a web page sends (a non-loopback Origin)"
                )
                await refusal.response()(scope, receive, send)
                return
        token = STRICT.set(bool(self.state.strict))
        try:
            await self.app(scope, receive, send)
        finally:
            STRICT.reset(token)

"""The owner's surface over HTTP, under `/_sandbox/` — loopback clients only (else 403).

The same operations as `Owner`'s methods: `GET pending`, `GET connections`, `POST approve`
(`{"ref": user code or request id, "narrow": [rows]?, "expires_in_hours": h?}`), `POST deny`,
`POST revoke` (`{"token_id", "policy_id"?}`), `POST expire` (`{"token_id"}`), `POST share`,
`GET rows`, `GET app-view`, `POST faults` (the body replaces the fault settings), and the clock:
`GET clock`, `POST clock {"advance": seconds}` — accepted only when the sandbox runs on a clock
that can move (`FakeClock`, or any clock with `advance`); on the real clock it answers
`409 CLOCK_NOT_ADJUSTABLE`. `GET /connect?code=` is the page a pairing link opens: what the agent
asks, in the owner's words, with approve / deny buttons that post to this surface.
"""

from __future__ import annotations

import dataclasses
import html
import json
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from .core import HTTPProblem, iso, json_body, state_of

LOOPBACK = {"127.0.0.1", "::1", "localhost", "testclient"}  # "testclient": Starlette's in-process client


def is_loopback(host: str | None) -> bool:
    return bool(host) and (host in LOOPBACK or host.startswith("127.") or host == "::ffff:127.0.0.1")


def _guard(request: Request) -> None:
    host = request.client.host if request.client else None
    if not is_loopback(host):
        raise HTTPProblem(403, "LOOPBACK_ONLY", "the owner surface answers only clients on this machine")


async def _body(request: Request) -> dict[str, Any]:
    if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        form = parse_qs((await request.body()).decode(), keep_blank_values=True)
        return {k: v[-1] for k, v in form.items()}
    raw = await request.body()
    return await json_body(request) if raw.strip() else {}


def _plain(obj: Any) -> Any:
    """A sharing report or rows list as JSON-ready data."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    for attr in ("as_json", "to_dict"):
        if hasattr(obj, attr):
            return getattr(obj, attr)()
    return obj


def _ref(body: dict[str, Any]) -> str:
    for key in ("ref", "user_code", "code", "request_id", "id"):
        if body.get(key):
            return str(body[key])
    raise HTTPProblem(400, "INVALID_REFERENCE", 'name the pairing or request: {"ref": user code or request id}')


def _token_id(body: dict[str, Any]) -> str:
    tid = body.get("token_id")
    if not isinstance(tid, str) or not tid:
        raise HTTPProblem(400, "INVALID_REQUEST", 'send {"token_id": …}')
    return tid


async def pending(request: Request) -> JSONResponse:
    _guard(request)
    return JSONResponse({"pending": state_of(request).owner.pending()})


async def connections(request: Request) -> JSONResponse:
    _guard(request)
    return JSONResponse({"connections": state_of(request).owner.connections()})


async def approve(request: Request) -> JSONResponse:
    _guard(request)
    body = await _body(request)
    narrow = body.get("narrow")
    if isinstance(narrow, str):  # from the HTML form
        narrow = json.loads(narrow) if narrow.strip() else None
    hours = body.get("expires_in_hours")
    if hours in ("", None):
        hours = None
    else:
        try:
            hours = float(hours)
        except (TypeError, ValueError):
            raise HTTPProblem(400, "INVALID_REQUEST", "`expires_in_hours` is a number") from None
        if hours <= 0:
            raise HTTPProblem(400, "INVALID_REQUEST", "`expires_in_hours` must be positive")
    if narrow is not None and not isinstance(narrow, list):
        raise HTTPProblem(400, "INVALID_REQUEST", "`narrow` is a list of permission rows")
    return JSONResponse(state_of(request).owner.approve(_ref(body), narrow, expires_in_hours=hours))


async def deny(request: Request) -> JSONResponse:
    _guard(request)
    return JSONResponse(state_of(request).owner.deny(_ref(await _body(request))))


async def revoke(request: Request) -> JSONResponse:
    _guard(request)
    body = await _body(request)
    return JSONResponse(state_of(request).owner.revoke(_token_id(body), body.get("policy_id")))


async def expire(request: Request) -> JSONResponse:
    _guard(request)
    return JSONResponse(state_of(request).owner.expire(_token_id(await _body(request))))


async def share(request: Request) -> JSONResponse:
    _guard(request)
    return JSONResponse(_plain(state_of(request).owner.share()))


async def rows(request: Request) -> JSONResponse:
    _guard(request)
    return JSONResponse({"rows": _plain(state_of(request).owner.rows())})


async def app_view(request: Request) -> JSONResponse:
    _guard(request)
    return JSONResponse({"rows": _plain(state_of(request).owner.app_view())})


async def faults(request: Request) -> JSONResponse:
    _guard(request)
    state = state_of(request)
    body = await json_body(request)
    from .faults import Faults

    try:
        if isinstance(state.faults, Faults):
            state.faults.configure(body)  # the body replaces every setting and reseeds
        else:
            state.faults = Faults.from_settings(body)
    except (TypeError, ValueError) as exc:
        raise HTTPProblem(400, "INVALID_FAULTS", str(exc)) from None
    return JSONResponse({"faults": state.faults.as_json()})


async def clock(request: Request) -> JSONResponse:
    _guard(request)
    state = state_of(request)
    adjustable = callable(getattr(state.clock, "advance", None))
    if request.method == "POST":
        if not adjustable:
            raise HTTPProblem(
                409,
                "CLOCK_NOT_ADJUSTABLE",
                "this sandbox runs on the real clock; start it with clock=FakeClock() to move time",
            )
        body = await json_body(request)
        seconds = body.get("advance")
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
            raise HTTPProblem(400, "INVALID_REQUEST", 'send {"advance": seconds} (a number ≥ 0)')
        state.clock.advance(seconds)  # type: ignore[attr-defined]
    now = state.now()
    return JSONResponse({"now": now, "iso": iso(now), "adjustable": adjustable})


_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Decoy sandbox — connect</title>
<style>body{{font:15px system-ui,sans-serif;max-width:40em;margin:2em auto;padding:0 1em}}
li{{margin:.2em 0}} .code{{font:600 1.6em ui-monospace,monospace;letter-spacing:.1em}}
button{{font-size:1em;padding:.4em 1.2em;margin-right:.5em}}</style></head><body>
<h1>Connect “{name}”</h1><p class="code">{code}</p>{body}</body></html>"""


async def connect_page(request: Request) -> HTMLResponse:
    """What a pairing link opens: the ask in the owner's words, and the owner's buttons."""
    code = request.query_params.get("code", "")
    match = None
    for item in state_of(request).owner.pending():
        if item["kind"] == "pairing" and item["user_code"].replace("-", "") == code.upper().replace("-", ""):
            match = item
    if match is None:
        body = "<p>No pairing is waiting for this code (it was answered, or it expired).</p>"
        return HTMLResponse(_PAGE.format(name="an agent", code=html.escape(code), body=body), status_code=404)
    lines = "".join(f"<li>{html.escape(h)}</li>" for h in match["headlines"]) or "<li>(nothing was asked)</li>"
    ref = html.escape(match["request_id"])
    body = (
        f"<p>{html.escape(match['client_id'])} asks for:</p><ul>{lines}</ul>"
        + "".join(f"<p>⚠ {html.escape(w)}</p>" for w in match["warnings"])
        + f'<form method="post" action="/_sandbox/approve" style="display:inline"><input type="hidden" name="ref" '
        f'value="{ref}"><button>Approve</button></form><form method="post" action="/_sandbox/deny" '
        f'style="display:inline"><input type="hidden" name="ref" value="{ref}"><button>Deny</button></form>'
        + "<p><small>Approving works only from this machine (the owner surface is loopback only).</small></p>"
    )
    return HTMLResponse(_PAGE.format(name=html.escape(match["name"]), code=html.escape(match["user_code"]), body=body))


routes = [
    Route("/_sandbox/pending", pending, methods=["GET"]),
    Route("/_sandbox/connections", connections, methods=["GET"]),
    Route("/_sandbox/approve", approve, methods=["POST"]),
    Route("/_sandbox/deny", deny, methods=["POST"]),
    Route("/_sandbox/revoke", revoke, methods=["POST"]),
    Route("/_sandbox/expire", expire, methods=["POST"]),
    Route("/_sandbox/share", share, methods=["POST"]),
    Route("/_sandbox/rows", rows, methods=["GET"]),
    Route("/_sandbox/app-view", app_view, methods=["GET"]),
    Route("/_sandbox/faults", faults, methods=["POST"]),
    Route("/_sandbox/clock", clock, methods=["GET", "POST"]),
    Route("/connect", connect_page, methods=["GET"]),
]

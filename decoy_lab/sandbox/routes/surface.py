"""The owner's surface over HTTP, under `/_sandbox/` — the owner on this machine only (guard.py).

The same operations as `Owner`'s methods: `GET pending`, `GET connections`, `POST approve`
(`{"ref": user code or request id, "narrow": [rows]?, "expires_in_hours": h?}`), `POST deny`,
`POST revoke` (`{"token_id", "policy_id"?}`), `POST expire` (`{"token_id"}`), `POST share`,
`GET rows`, `GET app-view` (`?account=` the account family's), `POST faults` (the body replaces the fault settings); the owner's
own edits: `POST edit` (`{"id", "text"?, "categories"?, "topic"?, "expected_rev"?}`),
`POST delete` (`{"ids"}`), `POST rename-topic` (`{"topic_id", "name"}`), `POST grant`
(`{"token_id", "policy_id"?, "rows"}`: narrow or widen that grant, or a new one), `GET|POST
key-setup` (`{"done": bool}`), `GET|POST accounts` (`{"service_name", "id"?}`); `GET token` (this
run's secret for form posts); and the clock: `GET clock`, `POST clock {"advance": seconds}` —
accepted only when the sandbox runs on a clock that can move (`FakeClock`, or any clock with
`advance`); on the real clock it answers `409 CLOCK_NOT_ADJUSTABLE`. The owner's pages (the home
page, `GET /connect?code=`, and the page a browser's Approve or Deny lands on) are served by routes/pages.py and drawn by phone/pages.py.
A malformed body is 400 with a code, never a 500.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from decoy_lab.sandbox.checks.guard import check_owner
from decoy_lab.sandbox.core import HTTPProblem, form_fields, is_form, iso, optional_json_body, state_of
from decoy_lab.sandbox.phone import acctopen, appview, pages


def _look(request: Request) -> Any:
    """A read of the owner surface: the owner on this machine only (guard.py)."""
    check_owner(request, changes=False)
    return state_of(request).owner


async def _change(request: Request) -> tuple[Any, dict[str, Any]]:
    """A change on the owner surface: its body, once the request is known to be the owner's.

    Who is asking (peer, Host, Origin, Sec-Fetch-Site) is checked before a byte of the body is
    read, and so is the secret unless it can only come in the body (a form's `token` field); that
    body is read under the Guard's cap for the owner surface (a few KB, guard.body_rule)."""
    check_owner(request, changes=False)
    form = is_form(request)
    if not form:
        check_owner(request, changes=True)
    body = await _body(request)
    token = body.pop("token", "")
    if form:
        check_owner(request, changes=True, form_token=str(token or "") or None)
    return state_of(request).owner, body


async def _body(request: Request) -> dict[str, Any]:
    if is_form(request):
        form = form_fields(await request.body())
        if form is None:
            raise HTTPProblem(400, "INVALID_REQUEST", "the form is not UTF-8")
        return form
    return await optional_json_body(request)


def _json_field(body: dict[str, Any], key: str) -> Any:
    """A field that may come as JSON text from an HTML form (`narrow`, `rows`)."""
    value = body.get(key)
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            raise HTTPProblem(400, "INVALID_REQUEST", f"`{key}` is not JSON", field=key) from None
    return value


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
    return JSONResponse({"pending": _look(request).pending()})


async def connections(request: Request) -> JSONResponse:
    return JSONResponse({"connections": _look(request).connections()})


async def token(request: Request) -> JSONResponse:
    """This run's secret, for a loopback caller that changes things with a form or plain POST."""
    _look(request)
    return JSONResponse({"header": "X-Sandbox-Token", "token": state_of(request).owner_secret})


def _hours(body: dict[str, Any]) -> float | None:
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
    return hours


def _rows(body: dict[str, Any], key: str, *, required: bool) -> list | None:
    rows = _json_field(body, key)
    if rows is None and not required:
        return None
    if not isinstance(rows, list):
        raise HTTPProblem(400, "INVALID_REQUEST", f"`{key}` is a list of permission rows", field=key)
    return rows


async def approve(request: Request) -> Response:
    owner, body = await _change(request)
    ref, narrow, hours = _ref(body), _rows(body, "narrow", required=False), _hours(body)
    if pages.wants_page(request):  # the browser's form: a page saying what was approved
        return pages.decided(request, owner, ref, "approve", lambda: owner.approve(ref, narrow, expires_in_hours=hours))
    return JSONResponse(owner.approve(ref, narrow, expires_in_hours=hours))


async def deny(request: Request) -> Response:
    owner, body = await _change(request)
    ref = _ref(body)
    if pages.wants_page(request):
        return pages.decided(request, owner, ref, "deny", lambda: owner.deny(ref))
    return JSONResponse(owner.deny(ref))


async def revoke(request: Request) -> JSONResponse:
    owner, body = await _change(request)
    return JSONResponse(owner.revoke(_token_id(body), body.get("policy_id")))


async def expire(request: Request) -> JSONResponse:
    owner, body = await _change(request)
    return JSONResponse(owner.expire(_token_id(body)))


async def share(request: Request) -> JSONResponse:
    owner, _ = await _change(request)
    return JSONResponse(_plain(owner.share()))


async def rows(request: Request) -> JSONResponse:
    return JSONResponse({"rows": _plain(_look(request).rows())})


async def app_view(request: Request) -> JSONResponse:
    """Every row as the owner's app sees it; `?id=` one stored row only (a client's verify step);
    `?account=<id>` (or `all`) the account family instead: each record, credential and field."""
    owner = _look(request)
    account = request.query_params.get("account")
    if account is not None:
        return JSONResponse({"accounts": acctopen.account_view(owner.state, None if account == "all" else account)})
    row_id = request.query_params.get("id")
    if row_id is None:
        return JSONResponse({"rows": _plain(owner.app_view())})
    entry = appview.view_of(owner.state, row_id)
    if entry is None:
        raise HTTPProblem(404, "NOT_FOUND", f"no stored row {row_id!r}")
    return JSONResponse({"rows": [entry]})


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise HTTPProblem(400, "INVALID_REQUEST", f"send {{{key!r}: …}}", field=key)
    return value


async def edit(request: Request) -> JSONResponse:
    """`{"id", "text"?, "categories"?, "topic"? (topic:<id> or null), "expected_rev"?}`"""
    owner, body = await _change(request)
    changes: dict[str, Any] = {k: body[k] for k in ("text", "categories", "expected_rev") if k in body}
    if "topic" in body:
        changes["topic"] = body["topic"]
    return JSONResponse(owner.edit(_text(body, "id"), **changes))


async def delete(request: Request) -> JSONResponse:
    owner, body = await _change(request)
    ids = body.get("ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise HTTPProblem(400, "INVALID_REQUEST", 'send {"ids": [row ids]}', field="ids")
    return JSONResponse(owner.delete(ids))


async def rename_topic(request: Request) -> JSONResponse:
    owner, body = await _change(request)
    return JSONResponse(owner.rename_topic(_text(body, "topic_id"), _text(body, "name")))


async def grant(request: Request) -> JSONResponse:
    """`{"token_id", "policy_id", "rows"}` narrows or widens that grant; without `policy_id`,
    `rows` is a new grant beside the others."""
    owner, body = await _change(request)
    rows = _rows(body, "rows", required=True)
    if body.get("policy_id"):
        return JSONResponse(owner.set_grant(_token_id(body), str(body["policy_id"]), rows))
    return JSONResponse(owner.widen(_token_id(body), rows, expires_in_hours=_hours(body)))


async def key_setup(request: Request) -> JSONResponse:
    """GET: is key setup done? POST `{"done": true|false}` finishes it (or puts it back)."""
    if request.method == "GET":
        return JSONResponse({"key_setup": "done" if _look(request).key_ready else "pending"})
    owner, body = await _change(request)
    done = body.get("done", True)
    if not isinstance(done, bool):
        raise HTTPProblem(400, "INVALID_REQUEST", "`done` is true or false", field="done")
    return JSONResponse(owner.set_key_setup(done))


async def accounts(request: Request) -> JSONResponse:
    """GET: the authorized-account list. POST `{"service_name", "id"?}` adds one."""
    if request.method == "GET":
        return JSONResponse({"accounts": _look(request).accounts()})
    owner, body = await _change(request)
    return JSONResponse(owner.add_account(_text(body, "service_name"), body.get("id")))


async def faults(request: Request) -> JSONResponse:
    _, body = await _change(request)
    state = state_of(request)
    from decoy_lab.sandbox.checks.faults import Faults

    try:
        if isinstance(state.faults, Faults):
            state.faults.configure(body)  # the body replaces every setting and reseeds
        else:
            state.faults = Faults.from_settings(body)
    except (TypeError, ValueError) as exc:
        raise HTTPProblem(400, "INVALID_FAULTS", str(exc)) from None
    return JSONResponse({"faults": state.faults.as_json()})


async def clock(request: Request) -> JSONResponse:
    _look(request)
    state = state_of(request)
    adjustable = callable(getattr(state.clock, "advance", None))
    if request.method == "POST":
        if not adjustable:
            raise HTTPProblem(
                409,
                "CLOCK_NOT_ADJUSTABLE",
                "this sandbox runs on the real clock; start it with clock=FakeClock() to move time",
            )
        _, body = await _change(request)
        seconds = body.get("advance")
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
            raise HTTPProblem(400, "INVALID_REQUEST", 'send {"advance": seconds} (a number ≥ 0)')
        state.clock.advance(seconds)  # type: ignore[attr-defined]
    now = state.now()
    return JSONResponse({"now": now, "iso": iso(now), "adjustable": adjustable})


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
    Route("/_sandbox/token", token, methods=["GET"]),
    Route("/_sandbox/edit", edit, methods=["POST"]),
    Route("/_sandbox/delete", delete, methods=["POST"]),
    Route("/_sandbox/rename-topic", rename_topic, methods=["POST"]),
    Route("/_sandbox/grant", grant, methods=["POST"]),
    Route("/_sandbox/key-setup", key_setup, methods=["GET", "POST"]),
    Route("/_sandbox/accounts", accounts, methods=["GET", "POST"]),
    Route("/_sandbox/clock", clock, methods=["GET", "POST"]),
]

"""The accounts: list, create, read, update, delete, and the account encryption key.

The memory contract: "An account end in a relation carries endpoint `account:<id>` with an empty
name; resolve its name from the authorized account list." The list serves `service_name` where
the server was given it in plain text (the owner's surface, a plain decoy create), never a password.

Who may list (the operation's `x-scope: account.read`, and "A scope with no matching permission
authorizes nothing … List endpoints return only what the permissions cover"): a token without the
scope is refused `403 SCOPE_MISSING` (`GRANT_EXPIRED` when a grant that ended held it); with it,
the accounts its permissions cover — an `account.*` row on one `account_id`, one without a
selection, `everything` — and the accounts it created ("What you create is yours"). `acctmem.*`
and `acctmail.*` rows cover none ("An account's details do not bring its email or its memories").

Create: "Send `encrypted_data` … a request without it is refused with `ACCOUNT_BLOB_REQUIRED`", and
"**Also needs `account.create`, live.**" Update: "Identity fields … require an accompanying
`encrypted_data` re-seal … sending them without a blob is refused with 400
`ACCOUNT_BLOB_REQUIRED`", and "409 REV_CONFLICT — … The body carries `error.current_rev`". Delete:
"Soft-delete an account (status becomes `deleted` and it disappears from reads …). Needs
`account.delete` on the account — its own permission … The account's own Decoy email goes with it."
"""

from __future__ import annotations

import base64
import json
import sqlite3
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks import grantstore
from decoy_lab.sandbox.checks.acctbodies import expected_rev, sealed_record
from decoy_lab.sandbox.checks.acctshapes import account_json
from decoy_lab.sandbox.checks.bearer import Agent, agent_from_request
from decoy_lab.sandbox.checks.bodies import uuid_text
from decoy_lab.sandbox.checks.grants import new_id
from decoy_lab.sandbox.core import HTTPProblem, bad_request, iso, json_body, state_of
from decoy_lab.sandbox.phone import schedule
from decoy_lab.sandbox.stores import acctstore as acs

IDENTITY = ("service_name", "service_url", "login_url", "username", "category", "notes", "tags")
SORTS = ("created_at", "updated_at", "service_name")
DEFAULT_LIMIT, MAX_LIMIT = 50, 100


def _bool_param(request: Request, name: str) -> bool | None:
    value = request.query_params.get(name)
    if value is None:
        return None
    if value.lower() not in ("true", "false", "1", "0"):
        raise bad_request("INVALID_REQUEST", f"{name} is true or false", name)
    return value.lower() in ("true", "1")


def _int_param(request: Request, name: str, default: int, top: int) -> int:
    value = request.query_params.get(name)
    if value is None:
        return default
    if not value.isdigit() or not 1 <= int(value) <= top:
        raise bad_request("INVALID_REQUEST", f"{name} is an integer from 1 to {top}", name)
    return int(value)


def _time_param(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    if value is not None and (len(value) < 10 or value[4] != "-"):
        raise bad_request("INVALID_REQUEST", f"{name} is an RFC 3339 date-time", name)
    return value


def _sort_key(a: sqlite3.Row, sort_by: str) -> list:
    value = a[sort_by] if sort_by != "service_name" else (a["service_name"] or "").lower()
    return [value, a["id"]]


def _page(rows: list[sqlite3.Row], request: Request) -> tuple[list[sqlite3.Row], str | None]:
    """`limit`, `cursor`, `order` (asc|desc, default desc) and `sort_by` over rows; (page, next cursor)."""
    sort_by = request.query_params.get("sort_by", "created_at")
    order = request.query_params.get("order", "desc")
    if sort_by not in SORTS or order not in ("asc", "desc"):
        raise bad_request("INVALID_REQUEST", f"sort_by is one of {', '.join(SORTS)}; order asc or desc")
    limit = _int_param(request, "limit", DEFAULT_LIMIT, MAX_LIMIT)
    rows = sorted(rows, key=lambda a: _sort_key(a, sort_by), reverse=order == "desc")
    cursor = request.query_params.get("cursor")
    if cursor:
        try:
            after = json.loads(base64.urlsafe_b64decode(cursor.encode()))
            assert isinstance(after, list) and len(after) == 2
        except Exception:
            raise bad_request("INVALID_CURSOR", "cursor is not one this list gave", "cursor") from None
        keys = [_sort_key(a, sort_by) for a in rows]
        rows = [a for a, k in zip(rows, keys) if (k < after if order == "desc" else k > after)]
    page = rows[:limit]
    if len(rows) <= limit:
        return page, None
    last = json.dumps(_sort_key(page[-1], sort_by)).encode()
    return page, base64.urlsafe_b64encode(last).decode()


def _filtered(request: Request, rows: list[sqlite3.Row]) -> list[sqlite3.Row]:
    status = request.query_params.get("status")
    if status not in (None, "active", "inactive"):
        raise bad_request("INVALID_REQUEST", "status is active or inactive", "status")
    has_decoy = _bool_param(request, "has_decoy")
    search = (request.query_params.get("search") or "").lower()
    after, before = _time_param(request, "date_after"), _time_param(request, "date_before")
    out = []
    for a in rows:
        created = iso(a["created_at"]) or ""
        if (status and a["status"] != status) or (has_decoy is not None and bool(a["decoy_id"]) != has_decoy):
            continue
        if "category" in request.query_params:
            continue  # the category lives inside the sealed record: the server has none to match
        if search and search not in f"{a['agent_label'] or ''}\n{a['service_name'] or ''}".lower():
            continue
        if (after and created < after) or (before and created > before):
            continue
        out.append(a)
    return out


async def list_accounts(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "account.read", "account.read", what="listing accounts")
        rows = [a for a in acs.live_accounts(con) if access.lists(agent, a)]
        page, cursor = _page(_filtered(request, rows), request)
        accounts = [account_json(con, a, agent) for a in page]
    pagination = {"has_more": cursor is not None, "next_cursor": cursor}
    return JSONResponse({"accounts": accounts, "pagination": pagination})


def _flags(body: dict[str, Any]) -> dict[str, Any]:
    """The plain metadata an account write may carry: agent_label, has_password, two_factor_enabled."""
    out: dict[str, Any] = {}
    if "agent_label" in body:
        label = body["agent_label"]
        if label is not None and (not isinstance(label, str) or len(label) > 200):
            raise bad_request("INVALID_REQUEST", "agent_label is text of at most 200 characters", "agent_label")
        out["agent_label"] = label
    for k in ("has_password", "two_factor_enabled"):
        if k in body:
            if not isinstance(body[k], bool):
                raise bad_request("INVALID_REQUEST", f"{k} is true or false", k)
            out[k] = int(body[k])
    return out


def _link_decoy(con: sqlite3.Connection, agent: Agent, now: float, decoy_id: Any) -> sqlite3.Row:
    decoy = acs.get_decoy(con, uuid_text(decoy_id, "decoy_id"))
    if decoy is None:
        raise HTTPProblem(404, "NOT_FOUND", f"no decoy {decoy_id!r}")
    if decoy["account_id"] and acs.get_account(con, decoy["account_id"]) is not None:
        raise HTTPProblem(409, "DECOY_ALREADY_LINKED", "this address is another account's Decoy email")
    if not access.may_edit_decoy(agent, decoy, None):
        raise access.refuse_decoy(con, agent, now, decoy)
    return decoy


async def create_account(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "account.write", "account.create", what="saving an account")
        access.need_create(con, agent, now)
        blob, mode = sealed_record(body.get("encrypted_data"))
        flags = _flags(body)
        decoy = _link_decoy(con, agent, now, body["decoy_id"]) if body.get("decoy_id") is not None else None
        # "linking someone else's decoy does not make the account this connection's"
        mine = decoy is None or access.created(agent, decoy)
        account_id = new_id()
        acs.insert_account(
            con,
            id=account_id,
            encrypted_data=blob,
            blob_mode=mode,
            decoy_id=decoy["id"] if decoy is not None else None,
            created_by_token_id=agent.token_id if mine else None,
            created_at=now,
            updated_at=now,
            **flags,
        )
        if decoy is not None:
            acs.update_decoy(con, decoy["id"], account_id=account_id)
        out = account_json(con, acs.get_account(con, account_id), agent)  # type: ignore[arg-type]
    schedule.note_write(state)
    return JSONResponse(out, status_code=201)


def _account(request: Request, con: sqlite3.Connection) -> sqlite3.Row:
    return access.account_or_404(con, request.path_params["account_id"])


async def get_account(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "account.read", "account.read", what="reading an account")
        account = _account(request, con)
        access.require(con, agent, now, "account.read", account)
        return JSONResponse(account_json(con, account, agent))


def rev_conflict(what: str, current: int) -> HTTPProblem:
    """409 REV_CONFLICT: "The body carries `error.current_rev`" (and, as the field routes carry it,
    `current_rev` at the top)."""
    msg = f"the {what} changed since it was read (rev {current} now): re-read, re-apply, retry"
    err = {"code": "REV_CONFLICT", "message": msg, "current_rev": current}
    return HTTPProblem(409, "REV_CONFLICT", msg, current_rev=current, error=err)


async def update_account(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "account.write", "account.edit", what="updating an account")
        account = _account(request, con)
        access.require(con, agent, now, "account.edit", account)
        values = _flags(body)
        if body.get("encrypted_data") is not None:
            values["encrypted_data"], values["blob_mode"] = sealed_record(body["encrypted_data"])
        elif any(k in body for k in IDENTITY):
            raise bad_request(
                "ACCOUNT_BLOB_REQUIRED",
                "identity fields travel only inside encrypted_data: re-seal the record and send it",
                next(k for k in IDENTITY if k in body),
            )
        if "status" in body:
            if body["status"] not in ("active", "inactive"):
                raise bad_request("INVALID_REQUEST", "status is active or inactive", "status")
            values["status"] = body["status"]
        if body.get("password_changed") is True:
            values["password_last_changed"] = now
        want = expected_rev(body.get("expected_rev"))
        if want is not None and want != account["rev"]:
            raise rev_conflict("account", account["rev"])
        acs.update_account(con, account["id"], rev=account["rev"] + 1, updated_at=now, **values)
        out = account_json(con, _account(request, con), agent)
    schedule.note_write(state)
    return JSONResponse(out)


async def delete_account(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "account.write", "account.delete", what="deleting an account")
        account = _account(request, con)
        if not access.holds(agent, "account.delete", account["id"]):  # the creator's rights stop here
            raise grantstore.refusal(con, agent.token_id, now, "account.delete", {"account_id": account["id"]})
        burned = 0
        for d in con.execute("SELECT id FROM decoys WHERE account_id=? AND status!='burned'", (account["id"],)):
            acs.update_decoy(con, d["id"], status="burned", updated_at=now)
            burned += 1
        acs.update_account(con, account["id"], status="deleted", deleted_at=now, updated_at=now, rev=account["rev"] + 1)
    schedule.note_write(state)
    return JSONResponse({"account_id": account["id"], "deleted": True, "burned_decoys": burned, "unlinked_decoys": 0})


async def account_public_key(request: Request) -> JSONResponse:
    """`x-scope: account.read`, `x-scope-alternatives: [account.write, personal.write]`."""
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(
            con, agent, now, "account.read", "account.read", alternatives=("account.write", "personal.write")
        )
    pk = state.owner.public_key_b64
    if not pk:
        raise HTTPProblem(404, "NO_PUBLIC_KEY", "the owner has not finished key setup on a device yet")
    return JSONResponse({"public_key": pk})


routes = [
    Route("/api/agent/accounts", list_accounts, methods=["GET"]),
    Route("/api/agent/accounts", create_account, methods=["POST"]),
    Route("/api/agent/accounts/public-key", account_public_key, methods=["GET"]),
    Route("/api/agent/accounts/{account_id}", get_account, methods=["GET"]),
    Route("/api/agent/accounts/{account_id}", update_account, methods=["PATCH"]),
    Route("/api/agent/accounts/{account_id}", delete_account, methods=["DELETE"]),
]

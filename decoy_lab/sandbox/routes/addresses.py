"""Decoy addresses as a set: list them, preview a fresh one, burn, pause, their stats and
notification setting.

`GET /api/agent/decoys`: "List decoy identities with filtering, sorting, and cursor pagination"
(`status` active|inactive|all, default active; `search` "Search agent_label"); the addresses this
connection may read — its own, an account grant or `acctmail.*` on their account, `alias.read` for
a Personal Alias, `everything`. `GET …/generate-email`: "The address is RESERVED for 24 hours …
**Needs.** `decoy.read`, and `account.create` (scope `decoy.write`) as well". `DELETE
…/{decoyId}`: "Permanently delete a decoy and all its data. **Irreversible.**" — an account's own
Decoy email "goes only with its account" (403 `ACCOUNT_EMAIL_GOES_WITH_ACCOUNT`), a Personal Alias
with `alias.burn`. `POST …/batch/burn` and `…/batch/pause`: "up to 20 decoys in one call … Ids you
may not touch are listed in `failed` as "Not permitted" and left alone." Stats and notifications:
"404 if the decoy isn't owned by you".

The sandbox's choices (001 names no schema): a batch answers `{succeeded: [ids], failed: [{id,
error}], succeeded_count, failed_count}`, an id that is no address this connection may read is
"Not found"; stats count the mail the sandbox holds — none, so zeros; a burned address is never
handed out again, and a burn answers `burned_at`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks import listing
from decoy_lab.sandbox.checks.acctshapes import decoy_json
from decoy_lab.sandbox.checks.bearer import Agent, agent_from_request
from decoy_lab.sandbox.checks.bodies import uuid_text
from decoy_lab.sandbox.core import HTTPProblem, bad_request, iso, json_body, state_of
from decoy_lab.sandbox.phone import schedule
from decoy_lab.sandbox.stores import acctstore as acs

BATCH_MAX = 20  # "up to 20 decoys in one call"


def _readable(con: sqlite3.Connection, request: Request, agent: Agent) -> sqlite3.Row:
    """The path's address if this connection may read it; else 404 ("isn't owned by you")."""
    return access.decoy_or_404(con, request.path_params["decoy_id"], agent)


async def list_decoys(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    status = request.query_params.get("status", "active")
    if status not in ("active", "inactive", "all"):
        raise bad_request("INVALID_REQUEST", "status is active, inactive or all", "status")
    search = (request.query_params.get("search") or "").lower()
    after, before = listing.time_param(request, "date_after"), listing.time_param(request, "date_before")
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "decoy.read", "acctmail.read", what="listing addresses")
        rows = []
        for d in acs.live_decoys(con):
            created = iso(d["created_at"]) or ""
            if not access.may_read_decoy(agent, d, access.decoy_account(con, d)):
                continue
            if (status != "all" and d["status"] != status) or (search and search not in (d["label"] or "").lower()):
                continue
            if (after and created < after) or (before and created > before):
                continue
            rows.append(d)
        page, cursor = listing.page(rows, request, ("created_at", "updated_at"))
        decoys = [decoy_json(con, d, agent, now) for d in page]
    return JSONResponse({"decoys": decoys, "pagination": listing.pagination(cursor)})


async def generate_email(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "decoy.read", "acctmail.read", what="previewing an address")
        access.need_create(con, agent, now)  # "a reservation is only ever consumed by a mint"
        email = acs.new_address(con)
        acs.reserve(con, email, agent.token_id, now)
    return JSONResponse({"email": email})


def _burnable(agent: Agent, decoy: sqlite3.Row) -> bool:
    return access.may_burn_decoy(agent, decoy)


async def burn(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "decoy.write", "acctmail.edit", what="burning an address")
        decoy = access.decoy_or_404(con, request.path_params["decoy_id"])
        account = access.decoy_account(con, decoy)
        if not access.may_edit_decoy(agent, decoy, account) and not _burnable(agent, decoy):
            if not access.may_read_decoy(agent, decoy, account):
                raise HTTPProblem(404, "NOT_FOUND", "no such decoy")
            raise access.refuse_decoy(con, agent, now, decoy, "alias.burn" if access.is_alias(decoy) else None)
        if not access.is_alias(decoy):
            raise access.goes_with_account()
        if not _burnable(agent, decoy):
            raise access.refuse_decoy(con, agent, now, decoy, "alias.burn")
        acs.burn_decoy(con, decoy["id"], now)
        for a in con.execute("SELECT id FROM accounts WHERE decoy_id=?", (decoy["id"],)).fetchall():
            acs.update_account(con, a["id"], decoy_id=None, updated_at=now)  # unlinked: the address is gone
    schedule.note_write(state)
    return JSONResponse({"decoy_id": decoy["id"], "deleted": True, "burned_at": iso(now)})


def _ids(body: dict[str, Any]) -> list[str]:
    ids = body.get("decoy_ids")
    if not isinstance(ids, list) or not 1 <= len(ids) <= BATCH_MAX:
        raise bad_request("INVALID_REQUEST", f"decoy_ids is a list of 1 to {BATCH_MAX} ids", "decoy_ids")
    return [uuid_text(i, "decoy_ids[]") for i in ids]


async def _batch(request: Request, action: str) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    succeeded: list[str] = []
    failed: list[dict[str, str]] = []
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "decoy.write", "acctmail.edit", what=f"{action}ing addresses")
        for decoy_id in dict.fromkeys(_ids(body)):
            decoy = acs.get_decoy(con, decoy_id)
            account = access.decoy_account(con, decoy) if decoy is not None else None
            if decoy is None or not access.may_read_decoy(agent, decoy, account):
                failed.append({"id": decoy_id, "error": "Not found"})
            elif action == "burn" and _burnable(agent, decoy):
                acs.burn_decoy(con, decoy_id, now)
                con.execute("UPDATE accounts SET decoy_id=NULL WHERE decoy_id=?", (decoy_id,))
                succeeded.append(decoy_id)
            elif action == "pause" and access.may_edit_decoy(agent, decoy, account):
                acs.update_decoy(con, decoy_id, status="inactive", updated_at=now)
                succeeded.append(decoy_id)
            else:
                failed.append({"id": decoy_id, "error": "Not permitted"})
    if succeeded:
        schedule.note_write(state)
    return JSONResponse(
        {"succeeded": succeeded, "failed": failed, "succeeded_count": len(succeeded), "failed_count": len(failed)}
    )


async def burn_batch(request: Request) -> JSONResponse:
    return await _batch(request, "burn")


async def pause_batch(request: Request) -> JSONResponse:
    return await _batch(request, "pause")


async def stats(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "decoy.read", "acctmail.read", what="reading an address's stats")
        decoy = _readable(con, request, agent)
    zero = {"total_messages": 0, "unread_messages": 0, "last_message_at": None}
    return JSONResponse({"decoy_id": decoy["id"], **zero, "messages_7d": 0, "messages_30d": 0, "total_sent": 0})


async def get_notifications(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "decoy.read", "acctmail.read", what="reading notifications")
        decoy = _readable(con, request, agent)
        return JSONResponse({"decoy_id": decoy["id"], "notify_all_messages": acs.notify_all(con, decoy["id"])})


async def set_notifications(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    value = body.get("notify_all_messages")
    if not isinstance(value, bool):
        raise bad_request("INVALID_REQUEST", "notify_all_messages is true or false", "notify_all_messages")
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "decoy.write", "acctmail.edit", what="changing notifications")
        decoy = _readable(con, request, agent)
        access.require_edit_decoy(con, agent, now, decoy, access.decoy_account(con, decoy))
        acs.set_notify_all(con, decoy["id"], value)
    return JSONResponse({"decoy_id": decoy["id"], "notify_all_messages": value})


routes = [
    Route("/api/agent/decoys", list_decoys, methods=["GET"]),
    Route("/api/agent/decoys/generate-email", generate_email, methods=["GET"]),
    Route("/api/agent/decoys/batch/burn", burn_batch, methods=["POST"]),
    Route("/api/agent/decoys/batch/pause", pause_batch, methods=["POST"]),
    Route("/api/agent/decoys/{decoy_id}", burn, methods=["DELETE"]),
    Route("/api/agent/decoys/{decoy_id}/stats", stats, methods=["GET"]),
    Route("/api/agent/decoys/{decoy_id}/notifications", get_notifications, methods=["GET"]),
    Route("/api/agent/decoys/{decoy_id}/notifications", set_notifications, methods=["PATCH"]),
]

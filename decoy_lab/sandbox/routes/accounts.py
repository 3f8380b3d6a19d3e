"""The accounts: list, create, read, update, delete, and the account encryption key.

The memory contract: "An account end in a relation carries endpoint `account:<id>` with an empty
name; resolve its name from the authorized account list." The list serves `service_name` where
the server was given it in plain text (the owner's surface, a plain decoy create), never a password;
a name sealed with the address comes as this connection's own `metadata_seal` ("returned to this
connection as `metadata_seal` on … the account reads"; acctshapes.py says to whom).

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

import sqlite3
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks import grantstore, listing
from decoy_lab.sandbox.checks.acctbodies import expected_rev, flags, rev_conflict, sealed_record, status_value
from decoy_lab.sandbox.checks.acctshapes import account_json
from decoy_lab.sandbox.checks.bearer import agent_from_request
from decoy_lab.sandbox.checks.faults import faulty
from decoy_lab.sandbox.checks.grants import new_id
from decoy_lab.sandbox.core import HTTPProblem, bad_request, iso, json_body, state_of
from decoy_lab.sandbox.phone import schedule
from decoy_lab.sandbox.stores import acctstore as acs

IDENTITY = ("service_name", "service_url", "login_url", "username", "category", "notes", "tags")
SORTS = ("created_at", "updated_at", "service_name")


def _filtered(request: Request, rows: list[sqlite3.Row]) -> list[sqlite3.Row]:
    status = request.query_params.get("status")
    if status is not None:
        status_value(status)
    has_decoy = listing.bool_param(request, "has_decoy")
    search = (request.query_params.get("search") or "").lower()
    after, before = listing.time_param(request, "date_after"), listing.time_param(request, "date_before")
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


def _sort_key(a: sqlite3.Row, sort_by: str) -> list:
    value = a[sort_by] if sort_by != "service_name" else (a["service_name"] or "").lower()
    return [value, a["id"]]


async def list_accounts(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "account.read", "account.read", what="listing accounts")
        rows = [a for a in acs.live_accounts(con) if access.lists(agent, a)]
        page_rows, cursor = listing.page(_filtered(request, rows), request, SORTS, _sort_key)
        accounts = [account_json(con, a, agent, now) for a in page_rows]
    return JSONResponse({"accounts": accounts, "pagination": listing.pagination(cursor)})


async def create_account(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "account.write", "account.create", what="saving an account")
        access.need_create(con, agent, now)
        blob, mode = sealed_record(body.get("encrypted_data"))
        metadata = flags(body)
        decoy = access.link_decoy(con, agent, now, body["decoy_id"]) if body.get("decoy_id") is not None else None
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
            **metadata,
        )
        if decoy is not None and not access.is_alias(decoy):
            acs.update_decoy(con, decoy["id"], account_id=account_id)  # a Personal Alias stays one, linked
        out = account_json(con, acs.get_account(con, account_id), agent, now)  # type: ignore[arg-type]
    schedule.note_write(state)
    return JSONResponse(out, status_code=201)


BATCH_MAX = 25  # "Create up to **25 sealed accounts in one call**"


def _batch_item(item: Any) -> tuple[str, dict[str, Any]]:
    """One row of a batch: its VAULT record and metadata, or HTTPProblem for this row alone."""
    if not isinstance(item, dict):
        raise bad_request("INVALID_REQUEST", "each item is an object with encrypted_data")
    blob, mode = sealed_record(item.get("encrypted_data"))
    if mode != "vault":  # "every item must carry `encrypted_data` (a base64 **VAULT** SealedBlob …)"
        raise bad_request("VAULT_BLOB_REQUIRED", "a batch takes VAULT SealedBlobs only", "encrypted_data")
    return blob, flags({k: item[k] for k in ("agent_label", "has_password", "two_factor_enabled") if k in item})


async def create_batch(request: Request) -> JSONResponse:
    """ "Results are **per-item**: one malformed row fails alone, the rest are created … (no silent
    drops)"; without `account.create` "the whole batch is refused … and nothing is created"."""
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_scope(con, agent, now, "account.write", "account.create", what="saving accounts")
        access.need_create(con, agent, now)
        items = body.get("accounts")
        if not isinstance(items, list) or not 1 <= len(items) <= BATCH_MAX:
            raise bad_request("INVALID_REQUEST", f"accounts is a list of 1 to {BATCH_MAX} items", "accounts")
        results: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            try:
                blob, metadata = _batch_item(item)
            except HTTPProblem as p:
                results.append({"index": index, "status": "failed", "error": f"{p.code}: {p.message}"})
                continue
            account_id = new_id()
            acs.insert_account(
                con,
                id=account_id,
                encrypted_data=blob,
                blob_mode="vault",
                created_by_token_id=agent.token_id,
                created_at=now,
                updated_at=now,
                **metadata,
            )
            results.append({"index": index, "status": "created", "id": account_id, "created_at": iso(now)})
    created = sum(r["status"] == "created" for r in results)
    if created:
        schedule.note_write(state)
    return JSONResponse({"results": results, "created_count": created, "failed_count": len(results) - created})


def _account(request: Request, con: sqlite3.Connection) -> sqlite3.Row:
    return access.account_or_404(con, request.path_params["account_id"])


async def get_account(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        account = access.path_account(
            request, con, agent, now, "account.read", "account.read", what="reading an account"
        )
        return JSONResponse(account_json(con, account, agent, now))


async def update_account(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        account = access.path_account(
            request, con, agent, now, "account.write", "account.edit", what="updating an account"
        )
        values = flags(body)
        if body.get("encrypted_data") is not None:
            values["encrypted_data"], values["blob_mode"] = sealed_record(body["encrypted_data"])
        elif any(k in body for k in IDENTITY):
            raise bad_request(
                "ACCOUNT_BLOB_REQUIRED",
                "identity fields travel only inside encrypted_data: re-seal the record and send it",
                next(k for k in IDENTITY if k in body),
            )
        if "status" in body:
            values["status"] = status_value(body["status"])
        if body.get("password_changed") is True:
            values["password_last_changed"] = now
        want = expected_rev(body.get("expected_rev"))
        if want is not None and want != account["rev"]:
            msg = f"the account changed since it was read (rev {account['rev']} now): re-read, re-apply, retry"
            raise rev_conflict(msg, account["rev"])
        acs.update_account(con, account["id"], rev=account["rev"] + 1, updated_at=now, **values)
        out = account_json(con, _account(request, con), agent, now)
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
        own = [
            d["id"]
            for d in con.execute("SELECT id FROM decoys WHERE account_id=? AND status!='burned'", (account["id"],))
        ]
        linked = acs.get_decoy(con, account["decoy_id"]) if account["decoy_id"] else None
        alias = linked if linked is not None and access.is_alias(linked) else None
        for decoy_id in own:
            acs.burn_decoy(con, decoy_id, now)
        if alias is not None and access.may_burn_decoy(agent, alias):
            acs.burn_decoy(con, alias["id"], now)
            own.append(alias["id"])
            alias = None
        # "otherwise it is unlinked from the account (both directions) and stays live"
        acs.update_account(
            con, account["id"], status="deleted", deleted_at=now, updated_at=now, rev=account["rev"] + 1, decoy_id=None
        )
    schedule.note_write(state)
    out = {"account_id": account["id"], "deleted": True, "burned_decoys": len(own)}
    return JSONResponse({**out, "unlinked_decoys": int(alias is not None)})


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
    Route("/api/agent/accounts/batch", faulty(create_batch), methods=["POST"]),
    Route("/api/agent/accounts/{account_id}", get_account, methods=["GET"]),
    Route("/api/agent/accounts/{account_id}", update_account, methods=["PATCH"]),
    Route("/api/agent/accounts/{account_id}", delete_account, methods=["DELETE"]),
]

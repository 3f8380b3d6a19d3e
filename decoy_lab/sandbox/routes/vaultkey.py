"""The vault-key surfaces of the account family: the wrapped vault key, an address's metadata
recipients, and the queue of decoy edits as the owner's own surfaces work it.

`GET /api/agent/vault-key`: "Returns the account vault key wrapped to your agent public key …
present only for an `everything` grant … **A scoped connection gets `404 no_vault_key_grant`, and
that is its answer.**" with `recovery: read_sealed_copies`, `read_with`, `key_comes_with:
full_access` and `do_not: [pair_again, retry]`; "When it ended by its time limit, the 404 also
carries `code: GRANT_EXPIRED`, `expired_at`, `recovery: request_access`, `can_request: true` and
`request_endpoint`".

`GET /api/agent/decoys/{decoyId}/metadata-recipients`, `GET /api/agent/decoy-edits`,
`POST /api/agent/decoy-edits/{id}/applied` and `…/rejected`: "a connection that holds the **vault
key** … Any other agent gets `403 VAULT_KEY_REQUIRED` by design". The pending list is "oldest
first"; each edit carries its `recipients` ("also seal the decoy's new details to each of the
edit's `recipients`"). Applied: "Only for an edit that needed NO change to the decoy's details …
`rev` is the decoy's current `rev` … Once only: if the edit is already resolved the call answers
`409 ALREADY_RESOLVED` with its `status`." Rejected: "`reason` is one of a fixed set of codes …
Anything else is a 400."

The sandbox's choices (001 gives no schema for these): a recipient is `{token_id, name,
public_key}`, every live connection with a key that may read the address but the caller; a
pending edit is `{id, edit_id, decoy_id, account_id, token_id, sealed_patch, base_rev, created_at,
recipients}`; `applied` with a `rev` that is not the decoy's current one is `409 REV_CONFLICT`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks import acctaccess as access
from decoy_lab.sandbox.checks import grantstore
from decoy_lab.sandbox.checks.acctbodies import rev_conflict
from decoy_lab.sandbox.checks.acctshapes import EDIT_TTL, edit_json
from decoy_lab.sandbox.checks.bearer import Agent, agent_from_request
from decoy_lab.sandbox.core import HTTPProblem, bad_request, iso, json_body, state_of
from decoy_lab.sandbox.phone import keeper
from decoy_lab.sandbox.stores import acctstore as acs

REJECT_REASONS = ("patch_unopenable", "patch_invalid", "no_supported_keys", "decoy_unreadable", "decoy_not_found")
READ_WITH = [
    {
        "method": "GET",
        "path": "/api/agent/sealed-secrets",
        "reads": "every password and personal record this connection is granted, sealed to its key",
    },
    {
        "method": "POST",
        "path": "/api/agent/unlock",
        "body": {"target": {"kind": "account", "id": ""}},
        "reads": "one record by id (kind personal or account)",
    },
]


def _everything_ended_at(con: sqlite3.Connection, agent: Agent, now: float) -> float | None:
    ends = [
        p["expires_at"]
        for p in con.execute(
            "SELECT expires_at, rows FROM policies WHERE token_id=? AND revoked_at IS NULL"
            " AND expires_at IS NOT NULL AND expires_at<=?",
            (agent.token_id, now),
        )
        if any("everything" in r.permissions for r in grantstore.rows_of([p]))
    ]
    return max(ends) if ends else None


async def vault_key(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        if not access.has_everything(agent):
            msg = (
                "This connection does not hold the vault key, and pairing again will not give it one: the vault key "
                "comes only with `everything`, which the owner approves in the Decoy app. Read the copies sealed to "
                "this connection's key instead."
            )
            extra: dict[str, Any] = {
                "error_description": msg,
                "recovery": "read_sealed_copies",
                "read_with": READ_WITH,
                "key_comes_with": "full_access",
                "do_not": ["pair_again", "retry"],
            }
            ended = _everything_ended_at(con, agent, now)
            if ended is not None:
                extra.update(
                    code="GRANT_EXPIRED",
                    expired_at=iso(ended),
                    recovery="request_access",
                    can_request=True,
                    request_endpoint="/api/agent/grant-request",
                    permission_request={"permissions": ["everything"]},
                )
            code = extra.pop("code", "no_vault_key_grant")  # "the 404 also carries `code: GRANT_EXPIRED`"
            refusal = HTTPProblem(404, code, msg, **extra)
            refusal.extra["error"] = "no_vault_key_grant"
            raise refusal
        if not agent.public_key:
            raise HTTPProblem(422, "NO_AGENT_PUBLIC_KEY", "pair with an agent_public_key: the key is wrapped to it")
    return JSONResponse({"wrapped_vault_key": keeper.wrapped_vault_key(state, agent.public_key)})


def recipients_json(con: sqlite3.Connection, decoy: sqlite3.Row, agent: Agent, now: float) -> list[dict[str, Any]]:
    return [
        {"token_id": a.token_id, "name": a.name, "public_key": a.public_key}
        for a in keeper.recipients(con, decoy, now, but=agent.token_id)
    ]


async def metadata_recipients(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_vault_key(con, agent, now)
        decoy = access.decoy_or_404(con, request.path_params["decoy_id"])
        return JSONResponse({"recipients": recipients_json(con, decoy, agent, now)})


async def pending_edits(request: Request) -> JSONResponse:
    state = state_of(request)
    now = state.now()
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_vault_key(con, agent, now)
        edits = []
        for e in acs.pending_edits(con):
            decoy = acs.get_decoy(con, e["decoy_id"])
            if decoy is None or now - e["created_at"] > EDIT_TTL:
                continue
            edits.append(
                {
                    "id": e["id"],
                    "edit_id": e["id"],
                    "decoy_id": e["decoy_id"],
                    "account_id": e["account_id"],
                    "token_id": e["token_id"],
                    "sealed_patch": e["sealed_patch"],
                    "base_rev": e["base_rev"],
                    "created_at": iso(e["created_at"]),
                    "recipients": recipients_json(con, decoy, agent, now),
                }
            )
    return JSONResponse({"edits": edits})


def _open_edit(con: sqlite3.Connection, request: Request, now: float) -> sqlite3.Row:
    edit = acs.get_edit(con, request.path_params["edit_id"])
    if edit is None:
        raise HTTPProblem(404, "EDIT_NOT_FOUND", "no such decoy edit")
    status = edit_json(edit, now)["status"]
    if status != "pending":
        refusal = HTTPProblem(409, "ALREADY_RESOLVED", f"the edit is already {status}; nothing changed")
        refusal.extra["status"] = status
        raise refusal
    return edit


async def mark_applied(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    rev = body.get("rev")
    if not isinstance(rev, int) or isinstance(rev, bool) or rev < 1:
        raise bad_request("INVALID_REQUEST", "rev is the decoy's current rev (an integer from 1)", "rev")
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_vault_key(con, agent, now)
        edit = _open_edit(con, request, now)
        decoy = acs.get_decoy(con, edit["decoy_id"])
        if decoy is None:
            raise HTTPProblem(404, "NOT_FOUND", "the edit's decoy is gone: mark it rejected (decoy_not_found)")
        if rev != decoy["rev"]:
            raise rev_conflict(f"rev is not the decoy's current rev ({decoy['rev']})", decoy["rev"])
        acs.update_edit(con, edit["id"], status="applied", applied_rev=rev, resolved_at=now)
        out = edit_json(acs.get_edit(con, edit["id"]), now)  # type: ignore[arg-type]
    return JSONResponse(out)


async def mark_rejected(request: Request) -> JSONResponse:
    state = state_of(request)
    body = await json_body(request)
    now = state.now()
    reason = body.get("reason")
    if reason not in (*REJECT_REASONS, "expired"):
        raise bad_request("INVALID_REQUEST", f"reason is one of {', '.join(REJECT_REASONS)}, expired", "reason")
    with state.store.tx() as con:
        agent = agent_from_request(request, con)
        access.need_vault_key(con, agent, now)
        edit = _open_edit(con, request, now)
        if reason == "expired":
            acs.update_edit(con, edit["id"], status="expired", resolved_at=now)
        else:
            acs.update_edit(con, edit["id"], status="rejected", reject_reason=reason, resolved_at=now)
        out = edit_json(acs.get_edit(con, edit["id"]), now)  # type: ignore[arg-type]
    return JSONResponse(out)


routes = [
    Route("/api/agent/vault-key", vault_key, methods=["GET"]),
    Route("/api/agent/decoys/{decoy_id}/metadata-recipients", metadata_recipients, methods=["GET"]),
    Route("/api/agent/decoy-edits", pending_edits, methods=["GET"]),
    Route("/api/agent/decoy-edits/{edit_id}/applied", mark_applied, methods=["POST"]),
    Route("/api/agent/decoy-edits/{edit_id}/rejected", mark_rejected, methods=["POST"]),
]

"""Legacy space storage: /api/agent/context/spaces, /grantees, /rows (GET/POST/PUT), /rows/delete.

One Me space and one space per account, each with its own 32-byte space key (`skid` its key
id); rows are VAULT blobs under the space key whose plaintext binds `space_id` and `row_id`.
Coverage: the Me space needs `memory.read` (any selection), an account space `acctmem.read`
on that account. Agents append rows.

Editing (`PUT`): the spec states two rules, and both are enforced. The PUT itself: "only rows
this agent wrote (and the owner hasn't since edited)" — any other row is `404`, as "a row the
owner has edited belongs to the owner and is `404` to you". The rows description: it "takes
`memory.edit` … on it, whoever saved it" and "saving a row gives no access to it" — read here as
"even its writer needs memory.edit", the one reading that keeps both sentences true. Edit on
every memory (or `acctmem.edit` on the account) edits in place; edit on only some categories or
topics gets `409 MEMORY_MOVING` with `retry_after_seconds` and `current_rev`, nothing changes,
and the owner's phone is asked to move the row to its own key (legacy_rows.py). Once moved, the row is
a memory in the per-memory store and this route answers 404 for it.

Deleting (`rows/delete`) likewise states two rules, and both are enforced: the route deletes rows
"that you hold `memory.delete` or `acctmem.delete` on", and the rows listing says "`mine` is true
for rows your token wrote — the only rows you may delete". A row is deleted only when it is `mine`
AND the permission covers it; a selective permission puts it under `moving`. Every other id is
`refused`: another connection's row (nothing this connection can ask for unlocks it: the owner
deletes it from their device), a missing one, or its own row without the permission — only that
last one carries a `remediation`, the grant request that unlocks deleting it, as memories/delete
does. A row the owner has edited is refused too: the spec says only of PUT that it "belongs to the
owner", but deleting it would discard the owner's edit, so the same reading holds here.
"""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks.access_reasons import (
    agent_of,
    insufficient,
    live_agents,
    owner_public_key,
    permission_request,
    space_covered,
)
from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.checks.bodies import (
    delete_ids,
    edit_fields,
    envelope,
    kid_text,
    no_plaintext_body,
    row_batch,
    uuid_text,
    vault_blob,
)
from decoy_lab.sandbox.checks.faults import faulty
from decoy_lab.sandbox.core import HTTPProblem, bad_request, iso, need_fields, now_of, state_of
from decoy_lab.sandbox.phone import legacy_rows
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.sandbox.stores import spacestore as ss

MOVING_RETRY = 5  # the phone answers its push within about this (core.DEFAULT_AUTO_SHARE_AFTER)


def _space_json(con: sqlite3.Connection, s: ss.Space, agent: Agent) -> dict:
    wrap = ss.space_wrap(con, s.id, agent.token_id)
    usable = wrap is not None and wrap[0] == ms.key_fp(agent.public_key)
    wrapped_key = wrap[1] if wrap is not None and usable else None
    return {
        "id": s.id,
        "kind": s.kind,
        "account_id": s.account_id,
        "skid": s.skid,
        "wrapped_key": wrapped_key,
    }


def _kind_and_account(kind: Any, account_id: Any, where: str) -> tuple[str, str | None]:
    if kind not in ("me", "account"):
        raise bad_request("INVALID_REQUEST", 'kind must be "me" or "account"', "kind")
    if kind == "account":
        if account_id is None:
            raise bad_request("INVALID_REQUEST", "account_id is required when kind is account", "account_id")
        return kind, uuid_text(account_id, "account_id")
    return kind, None


def _probe(kind: str, account_id: str | None) -> ss.Space:
    return ss.Space("", kind, account_id, "", "", None, 0.0)


def _need_cover(agent: Agent, kind: str, account_id: str | None) -> None:
    if not space_covered(agent, _probe(kind, account_id)):
        if kind == "me":
            raise insufficient("memory.read", "this space needs memory.read")
        raise insufficient(
            "memory.read", "this account's space needs acctmem.read on it", reason=f"account:{account_id}"
        )


async def list_spaces(request: Request) -> JSONResponse:
    state = state_of(request)
    agent = await agent_of(request)
    read = agent.access.read
    with state.store.tx() as con:
        spaces = [_space_json(con, s, agent) for s in ss.all_spaces(con) if space_covered(agent, s)]
    return JSONResponse(
        {
            "spaces": spaces,
            "me_granted": bool(read.all or read.categories or read.topics),
            "account_ids": None if read.account_wildcard else sorted(read.accounts),
        }
    )


async def create_space(request: Request) -> JSONResponse:
    state = state_of(request)
    agent = await agent_of(request)
    body = await no_plaintext_body(request)
    kind, account_id = _kind_and_account(body.get("kind"), body.get("account_id"), "")
    need_fields(body, "skid", "own_wrap", "owner_wrap")
    skid = kid_text(body["skid"], "skid")
    own_wrap = envelope(body["own_wrap"], "own_wrap", "agent_envelope", agent.public_key)
    owner_wrap = envelope(body["owner_wrap"], "owner_wrap", "owner_envelope", owner_public_key(state))
    _need_cover(agent, kind, account_id)
    now = now_of(state)
    with state.store.tx() as con:
        agents = live_agents(con, now)
        existing = ss.find_space(con, kind, account_id)
        if existing is not None:
            raise HTTPProblem(
                409,
                "SPACE_EXISTS",
                "this space already exists: re-read GET /api/agent/context/spaces and use its key",
                space_id=existing.id,
            )
        space = ss.Space(str(uuid.uuid4()), kind, account_id, skid, owner_wrap, agent.token_id, now)
        ss.insert_space(con, space)
        ss.put_space_wrap(con, space.id, agent.token_id, ms.key_fp(agent.public_key), own_wrap)
        fanned = 0
        gws = body.get("grantee_wraps") or []
        if not isinstance(gws, list):
            raise bad_request("INVALID_REQUEST", "grantee_wraps must be an array", "grantee_wraps")
        for i, w in enumerate(gws):
            if not isinstance(w, dict) or not isinstance(w.get("token_id"), str):
                raise bad_request(
                    "INVALID_REQUEST", f"grantee_wraps[{i}] needs token_id and wrapped_key", f"grantee_wraps[{i}]"
                )
            recipient = agents.get(w["token_id"])
            if recipient is None or recipient.token_id == agent.token_id or not space_covered(recipient, space):
                continue  # wraps for agents the grant does not cover are dropped
            wk = envelope(
                w.get("wrapped_key"), f"grantee_wraps[{i}].wrapped_key", "agent_envelope", recipient.public_key
            )
            ss.put_space_wrap(con, space.id, recipient.token_id, ms.key_fp(recipient.public_key), wk)
            fanned += 1
        ms.log_change(con, "context_space", space.id, "created", now)
        out = _space_json(con, space, agent)
    return JSONResponse({"space": out, "fanned_out": fanned}, status_code=201)


async def space_grantees(request: Request) -> JSONResponse:
    state = state_of(request)
    agent = await agent_of(request)
    kind, account_id = _kind_and_account(request.query_params.get("kind"), request.query_params.get("account_id"), "")
    _need_cover(agent, kind, account_id)
    probe = _probe(kind, account_id)
    with state.store.tx() as con:
        agents = live_agents(con, now_of(state))
    return JSONResponse(
        {
            "owner_public_key": owner_public_key(state),
            "grantees": [
                {"token_id": a.token_id, "public_key": a.public_key}
                for a in agents.values()
                if a.token_id != agent.token_id and a.public_key and space_covered(a, probe)
            ],
        }
    )


def _mine(row: ss.SpaceRow, agent: Agent) -> bool:
    """ "`mine` is true for rows your token wrote"."""
    return row.author_token == agent.token_id


def _space_for(con: sqlite3.Connection, agent: Agent, space_id: str) -> ss.Space:
    space = ss.get_space(con, space_id)
    if space is None:
        raise HTTPProblem(404, "NOT_FOUND", "no such space")
    if not space_covered(agent, space):
        _need_cover(agent, space.kind, space.account_id)
    return space


async def list_rows(request: Request) -> JSONResponse:
    state = state_of(request)
    agent = await agent_of(request)
    space_id = uuid_text(request.query_params.get("space_id"), "space_id")
    with state.store.tx() as con:
        space = _space_for(con, agent, space_id)
        rows = [
            {
                "id": r.id,
                "skid": r.skid,
                "rev": r.rev,
                "ciphertext": r.ciphertext,
                "author_kind": r.author_kind,
                "mine": _mine(r, agent),
                "created_at": iso(r.created_at),
                "updated_at": iso(r.updated_at),
            }
            for r in ss.space_rows(con, space.id)
        ]
    return JSONResponse({"space_id": space.id, "skid": space.skid, "rows": rows})


async def create_rows(request: Request) -> JSONResponse:
    state = state_of(request)
    agent = await agent_of(request)
    body = await no_plaintext_body(request)
    space_id = uuid_text(body.get("space_id"), "space_id")
    rows = row_batch(body)
    parsed = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise bad_request("INVALID_REQUEST", f"rows[{i}] must be an object", f"rows[{i}]")
        parsed.append(
            (
                uuid_text(r.get("id"), f"rows[{i}].id"),
                kid_text(r.get("skid"), f"rows[{i}].skid"),
                vault_blob(r.get("ciphertext"), f"rows[{i}].ciphertext"),
            )
        )
    now = now_of(state)
    created, existing = [], []
    with state.store.tx() as con:
        space = _space_for(con, agent, space_id)
        for i, (_rid, skid, _ct) in enumerate(parsed):
            if skid != space.skid:
                raise bad_request(
                    "SKID_MISMATCH",
                    f"rows[{i}].skid {skid} is not the space's current key id {space.skid}",
                    f"rows[{i}].skid",
                )
    for rid, skid, ct in parsed:
        with state.store.tx() as con:
            if ss.get_space_row(con, rid) is not None:
                existing.append(rid)
                continue
            ss.insert_space_row(con, ss.SpaceRow(rid, space_id, skid, ct, 1, "agent", agent.token_id, 0, now, now))
            ms.log_change(con, "context_row", rid, "created", now, space_id=space_id)
            created.append(rid)
    return JSONResponse({"created": created, "existing": existing}, status_code=201)


def _verb_on_space(agent: Agent, space: ss.Space, verb: str) -> str:
    """ "yes", "moving" (a selective grant: the phone must move the row first) or "no"."""
    sel = getattr(agent.access, verb)
    if space.kind == "account":
        return "yes" if sel.account_wildcard or space.account_id in sel.accounts else "no"
    if sel.all:
        return "yes"
    return "moving" if sel.categories or sel.topics else "no"


async def update_row(request: Request) -> JSONResponse:
    state = state_of(request)
    agent = await agent_of(request)
    body = await no_plaintext_body(request)
    rid, rev, ct = edit_fields(body)
    now = now_of(state)
    with state.store.tx() as con:
        row = ss.get_space_row(con, rid)
        space = ss.get_space(con, row.space_id) if row else None
        if row is None or space is None or not space_covered(agent, space) or row.owner_edited or not _mine(row, agent):
            # "only rows this agent wrote (and the owner hasn't since edited)"; "a row the owner has
            # edited belongs to the owner and is `404` to you"
            raise HTTPProblem(
                404,
                "NOT_FOUND",
                "no row with this id that this connection wrote (and the owner has "
                "not edited since) is in a space it is granted",
            )
        allowed = _verb_on_space(agent, space, "write")
        if allowed == "no":
            raise insufficient(
                "memory.edit",
                "editing a legacy row needs memory.edit on every memory (or acctmem.edit on its account)",
                reason=f"account:{space.account_id}" if space.kind == "account" else None,
            )
        if rev != row.rev:
            raise HTTPProblem(409, "REV_CONFLICT", "the row changed since it was read", current_rev=row.rev)
        if allowed == "moving":
            legacy_rows.ask(state, [rid], now)
            raise HTTPProblem(
                409,
                "MEMORY_MOVING",
                "the owner's phone is asked to move this row to its own key; retry after retry_after_seconds",
                retry_after_seconds=MOVING_RETRY,
                current_rev=row.rev,
            )
        ss.update_space_row(con, rid, ct, row.rev + 1, now)
        ms.log_change(con, "context_row", rid, "updated", now, space_id=space.id)
    return JSONResponse({"id": rid, "rev": row.rev + 1, "updated_at": iso(now)})


async def delete_rows(request: Request) -> JSONResponse:
    state = state_of(request)
    agent = await agent_of(request)
    ids = delete_ids(await no_plaintext_body(request))
    now = now_of(state)
    deleted, refused, moving, remediation = [], [], [], {}
    with state.store.tx() as con:
        for rid in dict.fromkeys(ids):
            row = ss.get_space_row(con, rid)
            space = ss.get_space(con, row.space_id) if row else None
            if (
                row is None
                or space is None
                or not space_covered(agent, space)
                or not _mine(row, agent)
                or row.owner_edited
            ):
                # "the only rows you may delete" are `mine`, and the permission must cover them too (module doc);
                # missing, not granted and not yours look the same
                refused.append(rid)
                continue
            allowed = _verb_on_space(agent, space, "delete")
            if allowed == "yes":
                ss.delete_space_row(con, rid)
                ms.log_change(con, "context_row", rid, "destroyed", now, space_id=space.id)
                deleted.append(rid)
            elif allowed == "moving":
                moving.append(rid)
            else:
                refused.append(rid)
                remediation[rid] = permission_request(
                    "memory.delete", f"account:{space.account_id}" if space.kind == "account" else None
                )
    out: dict[str, Any] = {"deleted": deleted, "refused": refused}
    if remediation:
        out["remediation"] = remediation
    if moving:
        legacy_rows.ask(state, moving, now)
        out.update(moving=moving, retry_after_seconds=MOVING_RETRY)
    return JSONResponse(out)


routes: list[Route] = [
    Route("/api/agent/context/spaces", list_spaces, methods=["GET"]),
    Route("/api/agent/context/spaces", faulty(create_space), methods=["POST"]),
    Route("/api/agent/context/grantees", space_grantees, methods=["GET"]),
    Route("/api/agent/context/rows", list_rows, methods=["GET"]),
    Route("/api/agent/context/rows", faulty(create_rows), methods=["POST"]),
    Route("/api/agent/context/rows", faulty(update_row), methods=["PUT"]),
    Route("/api/agent/context/rows/delete", faulty(delete_rows), methods=["POST"]),
]

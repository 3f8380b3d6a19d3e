"""GET /api/agent/sync?cursor= and /api/agent/sync/head — the change feed, ids only.

Buckets: `context_memory` (the per-memory store), `context_space` and `context_row` (legacy
spaces). Each id appears in exactly one bucket per answer (created then updated → created;
anything then destroyed → destroyed; created and destroyed inside the window → left out).
Narrowed to the token's grants: a memory id only when the token reads it now (or is its
author); a destroyed memory only to its former holders (the tombstone); a legacy id only in
a space the token is covered for, and a destroyed one only to a token that sees every space.
A memory that becomes readable to a connection later (the owner's phone or memory-wraps shares
its key) is logged as `updated`, so a feed-driven cache converges. `cursor=0` replays the
retained window; a cursor below the prune floor is 410 (tests move the floor with
`memstore.prune`); one past any state the store can hold is 400 INVALID_CURSOR.
"""

from __future__ import annotations

import re
import sqlite3

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks.access_reasons import agent_of, is_author, live_via, space_covered, usable_wrap
from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.core import HTTPProblem, bad_request, state_of
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.sandbox.stores import spacestore as ss

PAGE = 500
MAX_CURSOR = 2**63 - 1  # the largest change seq the store can hold
_CURSOR = re.compile(r"^\d+$")


def _sees_memory(con: sqlite3.Connection, agent: Agent, item_id: str) -> bool:
    row = ms.get_memory(con, item_id)
    if row is None:
        return False
    if is_author(agent, row) and agent.access.save:
        return True
    wrap = usable_wrap(ms.get_wrap(con, row.id, agent.token_id), row, agent)
    return bool(live_via(agent, row, wrap))


def _sees_space(con: sqlite3.Connection, agent: Agent, space_id: str | None) -> bool:
    space = ss.get_space(con, space_id) if space_id else None
    return space is not None and space_covered(agent, space)


def _sees_every_space(agent: Agent) -> bool:
    read = agent.access.read
    return bool((read.all or read.categories or read.topics) and read.account_wildcard)


def _visible(con: sqlite3.Connection, agent: Agent, c: ms.Change) -> bool:
    if c.op == "destroyed":
        if c.bucket == "context_memory":
            return agent.token_id in (c.holders or [])
        return _sees_every_space(agent)
    if c.bucket == "context_memory":
        return _sees_memory(con, agent, c.item_id)
    if c.bucket == "context_space":
        return _sees_space(con, agent, c.item_id)
    return _sees_space(con, agent, c.space_id)


def coalesce(changes: list[ms.Change]) -> list[tuple[str, ms.Change]]:
    """Fold ordered changes so each id lands in one bucket: (op, its last change), in first-seen order."""
    state: dict[tuple[str, str], tuple[str, ms.Change]] = {}
    created: set[tuple[str, str]] = set()
    for c in changes:
        k = (c.bucket, c.item_id)
        if c.op == "created":
            created.add(k)
            state[k] = ("created", c)
        elif c.op == "updated":
            state[k] = ("created" if k in created else "updated", c)
        elif c.op == "destroyed":
            if k in created:
                state.pop(k, None)
            else:
                state[k] = ("destroyed", c)
    return list(state.values())


def buckets(items: list[tuple[str, ms.Change]]) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for op, c in items:
        out.setdefault(c.bucket, {"created": [], "updated": [], "destroyed": []})[op].append(c.item_id)
    return out


async def sync_changes(request: Request) -> JSONResponse:
    state = state_of(request)
    agent = await agent_of(request)
    cursor = request.query_params.get("cursor")
    if cursor is None or not _CURSOR.match(cursor):
        raise bad_request(
            "INVALID_CURSOR", 'cursor is required: a non-negative integer ("0" replays the retained window)', "cursor"
        )
    cur = int(cursor)
    if cur > MAX_CURSOR:
        raise bad_request(
            "INVALID_CURSOR",
            "cursor is beyond any state this server issued; re-list, then re-anchor at /api/agent/sync/head",
            "cursor",
        )
    with state.store.tx() as con:
        floor = ms.prune_floor(con)
        if cur and cur < floor:
            raise HTTPProblem(
                410,
                "CURSOR_PRUNED",
                f"cursor {cur} predates the pruned floor {floor}: re-list "
                "everything, then re-anchor at /api/agent/sync/head",
                floor=str(floor),
            )
        page = ms.changes_after(con, max(cur, floor if cur == 0 else cur), PAGE + 1)
        more = len(page) > PAGE
        page = page[:PAGE]
        mine = [(op, c) for op, c in coalesce(page) if _visible(con, agent, c)]
        last = page[-1].seq if page else max(cur, ms.head(con))
    return JSONResponse({"state": str(last), "hasMore": more, "changes": buckets(mine)})


async def sync_head(request: Request) -> JSONResponse:
    state = state_of(request)
    await agent_of(request)
    with state.store.tx() as con:
        return JSONResponse({"head": str(ms.head(con))})


routes: list[Route] = [
    Route("/api/agent/sync", sync_changes, methods=["GET"]),
    Route("/api/agent/sync/head", sync_head, methods=["GET"]),
]

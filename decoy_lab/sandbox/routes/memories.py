"""Per-memory read routes: `GET public-key`, `GET memory-grantees`, `GET memories`.

A read answers every row this connection may open now, with its `via` reasons, and the
`preparing` / `failed` report of what is owed to it (waiting.py); the first read that finds
something owed asks the owner's phone (schedule.py), which answers on its own schedule
(sharepass.py). The writes are in memwrites.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from decoy_lab.gcpause import gc_paused
from decoy_lab.sandbox.checks import bearer, readcache
from decoy_lab.sandbox.checks.access_reasons import Reach, agent_of, is_author, owner_public_key
from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.checks.faults import faulty
from decoy_lab.sandbox.core import HTTPProblem, iso, now_of, state_of
from decoy_lab.sandbox.phone import schedule, sharepass, waiting


async def public_key(request: Request) -> JSONResponse:
    """GET /api/agent/public-key — the owner's RSA public key (sealing material, no grant needed)."""
    await agent_of(request)
    pk = owner_public_key(state_of(request))
    if not pk:
        raise HTTPProblem(404, "no_public_key", "this account has not completed key setup on a device yet")
    return JSONResponse({"public_key": pk})


async def memory_grantees(request: Request) -> JSONResponse:
    """GET memory-grantees — owner key, this connection's reach, and eligible live connections."""
    state = state_of(request)
    agent = await agent_of(request)
    now = now_of(state)
    with state.store.tx() as con:
        agents = bearer.live_agents(con, now)
    grantees = [
        {
            "token_id": a.token_id,
            "public_key": a.public_key,
            "connection_id": a.connection_id,
            "selectors": a.access.read.as_json(),
        }
        for a in agents
        if a.token_id != agent.token_id and a.public_key and not a.access.read.is_empty()
    ]
    return JSONResponse(
        {
            "owner_public_key": owner_public_key(state),
            "self": {
                "token_id": agent.token_id,
                "selectors": agent.access.read.as_json(),
                "write_selectors": agent.access.write.as_json(),
            },
            "grantees": grantees,
        }
    )


def served_row(r: Reach, agent: Agent) -> dict:
    row = r.row
    return {
        "id": row.id,
        "kid": row.kid,
        "rev": row.rev,
        "ciphertext": row.ciphertext,
        "wrapped_key": r.wrap.wrapped_key if r.wrap else None,
        "via": r.via,
        "mine": is_author(agent, row),
        "author_kind": row.author_kind,
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
    }


STREAM_ROWS = 256  # rows per chunk of a large answer: the client starts opening them meanwhile


def encode(obj: Any) -> bytes:
    """JSON as the API sends it (compact UTF-8, what JSONResponse writes)."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


async def list_memories(request: Request) -> Response:
    """GET memories — every row this connection may open now, plus the preparing/failed report.

    Rows, wraps and the report come from one transaction. The rows as judged and encoded are kept
    (readcache) until a row, a wrap or this connection's access changes: an unchanged read sends
    them again, and a read after a change judges and encodes only the rows it touched. A large
    array is encoded and sent a chunk at a time (10,000 rows are 13 MB: the client opens the
    first ones meanwhile). The report is always worked out afresh: it follows the clock."""

    state = state_of(request)
    agent = await agent_of(request)
    now = now_of(state)
    if not agent.public_key:  # nothing can ever be wrapped to a keyless connection: nothing is owed
        return JSONResponse({"memories": []})
    sharepass.maybe_share_on_read(state, now)
    cache = readcache.of(state)
    with gc_paused(), state.store.tx() as con:  # one row object per stored row: no cycles to find
        stamp = readcache.stamp(con, agent)
        found, last = cache.get(agent.token_id, stamp)
        if found is None:
            rows, its_wraps = cache.rows.memories(con), cache.rows.wraps(con, agent.token_id)
            listing = readcache.judge(last, stamp, agent, rows, its_wraps)
        else:
            listing = found
        report = waiting.report(con, agent, listing.waiting, listing.wraps, now)
    if listing.waiting and "failed_others" not in report:
        # the first read that finds something owed asks the phone at once; after `failed` only the
        # once-a-day read that asks again (it answers `preparing`) does: "stopped asking on its own"
        schedule.nudge(state, now)
    elif report.get("failed_unknown"):
        schedule.ask_for_unknown(state, now)
    elif report.get("preparing_unknown"):
        schedule.ask_for_preparing_unknown(state, agent, now)
    tail = b"," + encode(report)[1:] if report else b"}"
    served = listing.served

    def chunks() -> Iterator[bytes]:  # orjson: rows hold only strings, ints and bools; ~10x json's speed
        for start in range(0, len(served), STREAM_ROWS):
            yield b",".join([row_json(j, agent) for j in served[start : start + STREAM_ROWS]])

    if len(served) <= STREAM_ROWS:
        if found is None:
            cache.put(agent.token_id, listing)
        return Response(b'{"memories":[' + b"".join(chunks()) + b"]" + tail, media_type="application/json")

    async def streamed() -> AsyncIterator[bytes]:  # on the event loop: no thread hop per chunk
        yield b'{"memories":['
        for i, part in enumerate(chunks()):
            yield b"," + part if i else part
        if found is None:  # every row encoded: kept for the next read
            cache.put(agent.token_id, listing)
        yield b"]" + tail

    return StreamingResponse(streamed(), media_type="application/json")


def row_json(j: readcache.Judged, agent: Agent) -> bytes:
    """A served row's JSON, encoded once for as long as its row and wrap are unchanged.

    Kept as a copy: the bytes orjson returns sit in the buffer it grew for them, ~8 KiB, and a
    kept one keeps it — 100,000 kept rows held ~750 MB for their ~145 MB of JSON. The copy is
    its own length, and orjson's buffer is freed at once for the next row to use."""
    if j.json is None:
        j.json = bytes(memoryview(orjson.dumps(served_row(j.reach, agent))))
    return j.json


routes: list[Route] = [
    Route("/api/agent/public-key", public_key, methods=["GET"]),
    Route("/api/agent/context/memory-grantees", faulty(memory_grantees), methods=["GET"]),
    Route("/api/agent/context/memories", faulty(list_memories), methods=["GET"]),
]

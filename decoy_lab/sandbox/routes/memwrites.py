"""Per-memory write routes: POST memories, PUT memories, memories/delete, memory-wraps.

The server never decrypts, so every rule here is decided on what it can see: ids, key ids,
revisions, the layouts of the blobs, who wrote a row, which token holds which wrap and for
which `via` reasons, and each connection's live grants. Where the spec states a rule it is
enforced, so a client that breaks it is refused here as it would be by Decoy.

Choices where the spec is silent or loose (documented, and read by the tests):
- `self` is a live reason for the author connection while it holds `memory.save` ("what it
  saved is its own to read and edit while it holds it"). A row's own wrap is kept for exactly
  the `self_via` reasons the saver holds (decoy_lab.memory sends `["self", …]`; with none it keeps no
  wrap, and the owner's phone shares it back later); without `self_via`, for `self` and the
  server-visible reasons it holds.
- The author counts as a writer of its own memory's labels (it "changes text, categories or
  topic"), so it may share into and remove them with `memory-wraps` and a rotation.
- A rotation by anyone but the author is 403 AUTHOR_ONLY (nothing to ask for): the memory
  contract says "agent-initiated rotation is author-only", where the PUT operation names only
  `memory.edit`. memory-wraps follows its operation ("Needs `memory.edit` on the memory", each
  wrap kept only for a reason the caller writes), where the contract's table says "author only":
  the operation's write limit is the narrower, checkable rule, so a non-author writer may share
  into exactly the places it can write, and nowhere else.
- Unknown keys that do not look like plaintext are ignored; plaintext-looking keys anywhere
  are 400 PLAINTEXT_REJECTED. Every row of a POST is validated before any row is written.
- Delete: the author (any time), or `memory.delete` on a reason it reads the memory through.
- Its author's PUT or memory-wraps after `memory.save` ended is 403 GRANT_EXPIRED with the
  `permission_request` (INSUFFICIENT_GRANT when the grant was revoked): "After it ends, calls
  answer `403 GRANT_EXPIRED` with `permission_request`"; the memory is its own, so no 404.
- `removed_reasons` holds labels only (`category:`, `topic:`, `account:`): `all`, `self` and an
  `and:` reason are not labels, no edit removes them, so naming one is 400 and a holder reading
  by one is always owed a wrap of the new key (409 HOLDERS_MISSING otherwise).
- A PUT whose `kid` is absent or unchanged is a plain edit: any `owner_wrap`, `self_wrap` or
  `grantee_wraps` in it are ignored (new wraps for an unchanged key go to `memory-wraps`).
- A reason is live only if the stored wrap records it and a live grant still holds it; a new
  grant reaches a row once the owner's phone records that reason (meanwhile: `preparing`).
- Wraps are kept per recipient token and the recipient key they were made for: after a
  reconnect with a new key the old wraps are never served.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Set
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from decoy_lab.sandbox.checks.access_reasons import (
    Reach,
    admit,
    agent_of,
    can_delete,
    can_edit,
    holds,
    insufficient,
    is_author,
    is_label,
    live_agents,
    memory_reasons,
    owner_public_key,
    permission_request,
    reach,
    rotated_self_reasons,
    self_reasons,
    store_wrap,
    usable_wrap,
    visible_or_404,
    writes,
)
from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.checks.bodies import (
    RowIn,
    WrapIn,
    delete_ids,
    edit_fields,
    envelope,
    kid_text,
    no_plaintext_body,
    parse_row,
    parse_wraps,
    row_batch,
    str_list,
    uuid_text,
)
from decoy_lab.sandbox.checks.faults import faulty
from decoy_lab.sandbox.core import HTTPProblem, bad_request, iso, need_fields, now_of, state_of
from decoy_lab.sandbox.phone import schedule
from decoy_lab.sandbox.stores import memstore as ms

# ── save ───────────────────────────────────────────────────────────────────────────────────


def save_permission_error(con: sqlite3.Connection, agent: Agent, now: float) -> HTTPProblem:
    """The spec's 403 for saving without memory.save (GRANT_EXPIRED when that grant ended)."""
    exc = insufficient(
        "memory.save",
        'Saving memories needs the "Save memories" permission — it adds to the '
        "memory store every connected agent reads.",
        con=con,
        agent=agent,
        now=now,
    )
    exc.extra.update(
        kind="memory",
        request_action="create",
        remediation={"tool": "request_access", "args": {"kind": "memory", "action": "create"}},
    )
    return exc


async def save_memories(request: Request) -> JSONResponse:
    """POST memories — each row lands with its wraps or not at all; the batch is not atomic."""

    state = state_of(request)
    agent = await agent_of(request)
    body = await no_plaintext_body(request)
    rows = row_batch(body)
    if not agent.access.save:
        with state.store.tx() as con:
            raise save_permission_error(con, agent, now_of(state))
    owner_pk = owner_public_key(state)
    if not owner_pk:
        raise HTTPProblem(409, "OWNER_KEY_MISSING", "the owner has not finished key setup in the app; save later")
    if not agent.public_key:
        raise HTTPProblem(
            409,
            "AGENT_KEY_MISSING",
            "this connection registered no agent public key, so no self_wrap "
            "can be for it: pair again with agent_public_key",
        )
    now = now_of(state)
    with state.store.tx() as con:
        agents = live_agents(con, now)
    parsed = [parse_row(r, i, agent, owner_pk, agents) for i, r in enumerate(rows)]
    created: list[str] = []
    existing: list[str] = []
    counts: dict[str, int] = {}
    for p in parsed:
        with state.store.tx() as con:  # one transaction per row: a row is atomic with its wraps
            row = ms.get_memory(con, p.id)
            if row is not None:
                existing.append(p.id)
                if is_author(agent, row) and row.kid == p.kid:
                    fill_missing(con, row, agent, agents, p, now)
                continue
            row = ms.MemoryRow(
                p.id, p.kid, 1, p.ciphertext, p.owner_wrap, "agent", agent.token_id, agent.connection_id, now, now, now
            )
            ms.insert_memory(con, row)
            n, reasons = put_grantee_wraps(con, row, agent, agents, p.grantee_wraps, now, check_write=False)
            own = self_reasons(agent, row, p.self_via, reasons)
            if own:  # "with none it keeps no wrap"
                store_wrap(con, row, agent, p.self_wrap, own, now)
            ms.log_change(con, "context_memory", row.id, "created", now)
            created.append(p.id)
            counts[p.id] = n
    schedule.note_write(state)
    return JSONResponse({"created": created, "existing": existing, "grantee_wraps": counts}, status_code=201)


def put_grantee_wraps(
    con: sqlite3.Connection,
    row: ms.MemoryRow,
    caller: Agent,
    agents: dict[str, Agent],
    wraps: list[WrapIn],
    now: float,
    *,
    check_write: bool,
    existing: Set[str] = frozenset(),
    removed: Set[str] = frozenset(),
    only_missing: bool = False,
) -> tuple[int, set[str]]:
    """Store the admitted grantee wraps; returns (how many were stored, their reasons)."""
    n, reasons, seen = 0, set(), set()
    for w in wraps:
        if w.token_id in seen:
            continue
        seen.add(w.token_id)
        via = admit(w, caller, agents, row, check_write=check_write, existing=existing, removed=removed)
        if not via:
            continue
        recipient = agents[w.token_id]
        if only_missing and usable_wrap(ms.get_wrap(con, row.id, w.token_id), row, recipient):
            continue
        store_wrap(con, row, recipient, w.wrapped_key, via, now)
        n += 1
        reasons.update(via)
    return n, reasons


def fill_missing(
    con: sqlite3.Connection, row: ms.MemoryRow, agent: Agent, agents: dict[str, Agent], p: RowIn, now: float
) -> None:
    """The author's resend of the same id and key: fill in any wrap an earlier attempt missed."""
    _, reasons = put_grantee_wraps(con, row, agent, agents, p.grantee_wraps, now, check_write=False, only_missing=True)
    own = self_reasons(agent, row, p.self_via, reasons)
    if own and usable_wrap(ms.get_wrap(con, row.id, agent.token_id), row, agent) is None:
        store_wrap(con, row, agent, p.self_wrap, own, now)


def _editable(con: sqlite3.Connection, agent: Agent, row_id: str, now: float, refusal: str) -> Reach:
    """The memory this connection reads and may edit, or 404 / 403 (with `refusal` and the grant that
    would unlock it)."""
    r = visible_or_404(con, agent, row_id, now)
    if not can_edit(agent, r.row, r.via):
        raise insufficient("memory.edit", refusal, reason=r.via[0] if r.via else None, con=con, agent=agent, now=now)
    return r


# ── edit and rotate ────────────────────────────────────────────────────────────────────────


async def edit_memory(request: Request) -> JSONResponse:
    """PUT memories — a new revision; with a new kid, a key rotation (author only)."""

    state = state_of(request)
    agent = await agent_of(request)
    body = await no_plaintext_body(request)
    row_id, rev, ciphertext = edit_fields(body)
    new_kid = kid_text(body["kid"], "kid") if body.get("kid") is not None else None
    now = now_of(state)
    with state.store.tx() as con:
        agents = live_agents(con, now)
        r = _editable(
            con,
            agent,
            row_id,
            now,
            "editing this memory needs memory.edit on a reason this connection reads it through",
        )
        row = r.row
        if rev != row.rev:
            raise HTTPProblem(
                409, "REV_CONFLICT", "the memory changed since it was read; re-read and re-apply", current_rev=row.rev
            )
        answer: dict[str, Any] = {"id": row.id}
        if new_kid is None or new_kid == row.kid:
            ms.update_memory(
                con, row.id, ciphertext=ciphertext, rev=row.rev + 1, now=now, editor_connection=agent.connection_id
            )
        else:
            answer.update(rotate(con, agent, agents, r, body, ciphertext, new_kid, now))
        ms.log_change(con, "context_memory", row.id, "updated", now)
        answer.update(rev=row.rev + 1, updated_at=iso(now))
    schedule.note_write(state)
    return JSONResponse(answer)


def rotate(
    con: sqlite3.Connection,
    agent: Agent,
    agents: dict[str, Agent],
    r: Reach,
    body: dict,
    ciphertext: str,
    new_kid: str,
    now: float,
) -> dict:
    """A new key: owner and self wraps required, every current holder wrapped (or read only by a
    removed label), every wrap of the old key dropped — all in this one transaction."""
    row = r.row
    if not is_author(agent, row):
        raise HTTPProblem(403, "AUTHOR_ONLY", "a key rotation (a new kid) is for the memory's author only")
    need_fields(body, "owner_wrap", "self_wrap", lead="a new kid is a key rotation: ")
    owner_wrap = envelope(body["owner_wrap"], "owner_wrap", "owner_envelope", None)
    self_wrap = envelope(body["self_wrap"], "self_wrap", "agent_envelope", agent.public_key)
    self_via = str_list(body["self_via"], "self_via") if body.get("self_via") is not None else None
    removed = _removed_labels(body, agent, row)
    wraps_in = parse_wraps(body.get("grantee_wraps"), "grantee_wraps", agents)
    old = ms.wraps_of(con, row.id)
    had = memory_reasons(old, row)
    dropped = removed or set()
    given = {
        w.token_id
        for w in wraps_in
        if admit(w, agent, agents, row, check_write=True, existing=had - dropped, removed=dropped)
    }
    missing = _holders_missing(old, agent, agents, row, given, removed)
    if missing:
        raise HTTPProblem(
            409,
            "HOLDERS_MISSING",
            "the new key leaves out connections that read this memory now; "
            "wrap it to each one in `missing` and send again",
            missing=missing,
            current_rev=row.rev,
        )
    removed = removed or set()
    ms.delete_wraps(con, row.id)
    ms.update_memory(
        con,
        row.id,
        ciphertext=ciphertext,
        rev=row.rev + 1,
        now=now,
        kid=new_kid,
        owner_wrap=owner_wrap,
        editor_connection=agent.connection_id,
    )
    updated = ms.get_memory(con, row.id)
    assert updated is not None  # updated in this same transaction
    row = updated
    n, _ = put_grantee_wraps(
        con, row, agent, agents, wraps_in, now, check_write=True, existing=had - removed, removed=removed
    )
    keep = [v for v in r.via if v not in removed]
    own = rotated_self_reasons(agent, row, keep, self_via)
    if own:
        store_wrap(con, row, agent, self_wrap, own, now)
    return {"kid": new_kid, "grantee_wraps": n}


def _removed_labels(body: dict, agent: Agent, row: ms.MemoryRow) -> set[str] | None:
    """The labels a rotation says it removes (`removed_reasons`; None when not given), each a
    label the caller may write."""
    removed_given = body.get("removed_reasons")
    removed: set[str] | None = set(str_list(removed_given, "removed_reasons")) if removed_given is not None else None
    for v in removed or ():
        if not is_label(v):
            raise bad_request(
                "INVALID_REQUEST",
                f"removed_reasons lists the labels an edit removes (category:…, "
                f"topic:…, account:…); {v!r} is not a label, so no edit removes it",
                "removed_reasons",
            )
        if not writes(agent, v, row):
            raise insufficient("memory.edit", f"removing the label {v!r} needs memory.edit on it", reason=v)
    return removed


def _holders_missing(
    old: list[ms.Wrap],
    agent: Agent,
    agents: dict[str, Agent],
    row: ms.MemoryRow,
    given: set[str],
    removed: set[str] | None,
) -> list[dict]:
    """Connections that read the row now under the old key, are not wrapped to the new one, and
    read it by some reason the rotation does not remove (HOLDERS_MISSING)."""
    missing = []
    for w in old:
        holder = agents.get(w.token_id)
        if holder is None or holder.token_id == agent.token_id or usable_wrap(w, row, holder) is None:
            continue
        via = [v for v in w.via if holds(holder, v, row)]
        if not via or w.token_id in given:
            continue
        # Without removed_reasons, only reasons the caller holds write on count as removed
        # (its write grants, not its authorship: a save-only author must name what it removes).
        gone = removed if removed is not None else {v for v in via if is_label(v) and agent.access.write.allows_via(v)}
        if any(v not in gone for v in via):
            missing.append({"token_id": holder.token_id, "public_key": holder.public_key, "via": via})
    return missing


# ── share a key, delete ────────────────────────────────────────────────────────────────────


async def share_key(request: Request) -> JSONResponse:
    """POST memory-wraps — add wraps of the current key for reasons the recipient holds and the
    caller writes (or the memory already has, or `all`)."""

    state = state_of(request)
    agent = await agent_of(request)
    body = await no_plaintext_body(request)
    need_fields(body, "row_id", "kid", "wraps")
    row_id = uuid_text(body["row_id"], "row_id")
    kid = kid_text(body["kid"], "kid")
    now = now_of(state)
    with state.store.tx() as con:
        agents = live_agents(con, now)
        wraps_in = parse_wraps(body["wraps"], "wraps", agents)
        r = _editable(con, agent, row_id, now, "sharing this memory's key needs memory.edit on it")
        row = r.row
        if kid != row.kid:
            raise HTTPProblem(409, "KID_CONFLICT", "the memory's key changed; re-read it before sharing", kid=row.kid)
        had = memory_reasons(ms.wraps_of(con, row.id), row)
        added, changed = 0, False
        for w in wraps_in:
            via = admit(w, agent, agents, row, check_write=True, existing=had)
            if not via:
                continue
            recipient = agents[w.token_id]
            cur = usable_wrap(ms.get_wrap(con, row.id, w.token_id), row, recipient)
            if cur is not None:
                grown = list(dict.fromkeys(cur.via + via))
                if grown != cur.via:
                    ms.set_wrap_via(con, row.id, w.token_id, grown)
                    changed = True
                continue
            store_wrap(con, row, recipient, w.wrapped_key, via, now)
            added += 1
        if added or changed:  # newly readable to someone: the sync feed carries it
            ms.log_change(con, "context_memory", row.id, "updated", now)
    schedule.note_write(state)
    return JSONResponse({"added": added})


async def delete_memories(request: Request) -> JSONResponse:
    """POST memories/delete — per id: deleted (author or memory.delete holder) or refused."""

    state = state_of(request)
    agent = await agent_of(request)
    ids = delete_ids(await no_plaintext_body(request))
    now = now_of(state)
    deleted, refused, remediation = [], [], {}
    with state.store.tx() as con:
        for row_id in dict.fromkeys(ids):
            row = ms.get_memory(con, row_id)
            r = reach(con, agent, row) if row is not None else None
            if row is None or r is None or not (r.readable or is_author(agent, row)):
                refused.append(row_id)  # missing and not yours look the same
                continue
            if not can_delete(agent, row, r.via):
                refused.append(row_id)
                remediation[row_id] = permission_request("memory.delete", r.via[0] if r.via else None)
                continue
            holders = [w.token_id for w in ms.wraps_of(con, row_id)]
            if row.author_token:
                holders.append(row.author_token)
            ms.delete_memory(con, row_id)
            ms.log_change(con, "context_memory", row_id, "destroyed", now, holders=holders)
            deleted.append(row_id)
    schedule.note_write(state)
    out: dict[str, Any] = {"deleted": deleted, "refused": refused}
    if remediation:
        out["remediation"] = remediation
    return JSONResponse(out)


routes: list[Route] = [
    Route("/api/agent/context/memories", faulty(save_memories), methods=["POST"]),
    Route("/api/agent/context/memories", faulty(edit_memory), methods=["PUT"]),
    Route("/api/agent/context/memories/delete", faulty(delete_memories), methods=["POST"]),
    Route("/api/agent/context/memory-wraps", faulty(share_key), methods=["POST"]),
]

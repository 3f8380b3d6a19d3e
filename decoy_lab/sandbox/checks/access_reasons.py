"""Access reasons on the server's side: who may read, write or delete a stored row, and why.

The server sees no labels, so a reason is live only if the stored wrap records it and a live
grant still holds it ("rechecks reasons … on every read"); `self` is the author connection while
it holds `memory.save`. A refusal carries the `permission_request` that would fix it. The
choices where the spec is silent are listed in memwrites.py.
"""

from __future__ import annotations

import inspect
import sqlite3
from collections.abc import Iterable, Set
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from decoy_lab.sandbox.checks import bearer, grants, grantstore
from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.checks.bodies import WrapIn
from decoy_lab.sandbox.core import HTTPProblem, SandboxState
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.sandbox.stores import spacestore as ss

# ── refusals ───────────────────────────────────────────────────────────────────────────────


def selection_for(permission: str, reason: str | None) -> tuple[str, dict | None]:
    """The permission and the one selection that grant `permission` on access reason `reason`."""
    if reason and reason.startswith("category:"):
        return permission, {"datatypes": [reason.split(":", 1)[1]]}
    if reason and reason.startswith("topic:"):
        return permission, {"about": [reason]}
    if reason and reason.startswith("account:"):
        return permission.replace("memory.", "acctmem."), {"account_id": reason.split(":", 1)[1]}
    return permission, None


def insufficient(
    permission: str,
    message: str,
    reason: str | None = None,
    *,
    con: sqlite3.Connection | None = None,
    agent: Agent | None = None,
    now: float | None = None,
) -> HTTPProblem:
    """403 INSUFFICIENT_GRANT with the `permission_request` body that would fix it (grants.py);
    403 GRANT_EXPIRED instead when a grant that ended would have allowed it (given con/agent/now)."""

    name, selection = selection_for(permission, reason)
    try:
        grantstore.permission_request(name, selection)
    except grants.RequestError:
        name, selection = permission, None
    if con is not None and agent is not None and now is not None:
        exc = grantstore.refusal(con, agent.token_id, now, name, selection, message=message)
    else:
        exc = grantstore.insufficient(name, selection, message=message)
    exc.extra.setdefault("remediation", {"tool": "request_access", "args": exc.extra.get("permission_request")})
    return exc


def permission_request(permission: str, reason: str | None = None) -> dict:
    """The grant-request body for `permission` scoped to one access reason (one selection)."""

    name, selection = selection_for(permission, reason)
    try:
        return grantstore.permission_request(name, selection)
    except grants.RequestError:
        return grantstore.permission_request(permission)


# ── reasons ────────────────────────────────────────────────────────────────────────────────


def is_author(agent: Agent, row: ms.MemoryRow) -> bool:
    return row.author_kind == "agent" and row.author_connection == agent.connection_id


def holds(agent: Agent, reason: str, row: ms.MemoryRow) -> bool:
    """Does the agent hold this read reason on this row now? `self` = its author with memory.save."""
    if reason == "self":
        return is_author(agent, row) and bool(agent.access.save)
    return bool(agent.access.read.allows_via(reason))


def writes(agent: Agent, reason: str, row: ms.MemoryRow) -> bool:
    """May the agent write (label with, share into, remove) this reason on this row?"""
    if is_author(agent, row) and agent.access.save:
        return True
    return reason != "self" and bool(agent.access.write.allows_via(reason))


def usable_wrap(wrap: ms.Wrap | None, row: ms.MemoryRow, agent: Agent) -> ms.Wrap | None:
    """The wrap only if it is of the row's current key and for the agent's current public key."""
    if wrap is None or wrap.kid != row.kid or wrap.key_fp != ms.key_fp(agent.public_key):
        return None
    return wrap


def live_via(agent: Agent, row: ms.MemoryRow, wrap: ms.Wrap | None) -> list[str]:
    """The wrap's reasons rechecked against live grants ("rechecks reasons … on every read").
    A reason the wrap does not record is not added: a new grant reaches the row once the owner's
    phone records it (until then the row is `preparing`)."""
    if wrap is None:
        return []
    return [v for v in wrap.via if holds(agent, v, row)]


def owed_reason(agent: Agent, row: ms.MemoryRow) -> str | None:
    """A reason the server can see that the agent should hold a key to this row: `self`, `all`,
    or a granted topic's own entity row. Labels inside ciphertext are invisible here."""
    if holds(agent, "self", row):
        return "self"
    if agent.access.read.all:
        return "all"
    if f"topic:{row.id}" in agent.access.read.topics:
        return f"topic:{row.id}"
    return None


def memory_reasons(wraps: Iterable[ms.Wrap], row: ms.MemoryRow) -> set[str]:
    """The reasons the memory already has: every non-self reason on a wrap of its current key."""
    return {v for w in wraps if w.kid == row.kid for v in w.via if v != "self"}


LABEL_PREFIXES = ("category:", "topic:", "account:")


def is_label(reason: str) -> bool:
    """A reason an edit can remove: a category, a topic or an account (never `all`, `self` or `and:`)."""
    return reason.startswith(LABEL_PREFIXES)


def can_edit(agent: Agent, row: ms.MemoryRow, via: list[str]) -> bool:
    """memory.edit on a reason it reads the memory through, or its own memory while it holds save."""
    if is_author(agent, row) and agent.access.save:
        return True
    return any(v != "self" and agent.access.write.allows_via(v) for v in via)


def can_delete(agent: Agent, row: ms.MemoryRow, via: list[str]) -> bool:
    if is_author(agent, row):
        return True
    return any(v != "self" and agent.access.delete.allows_via(v) for v in via)


# ── what one agent reaches ─────────────────────────────────────────────────────────────────


@dataclass
class Reach:
    """What one agent can do with one row right now."""

    row: ms.MemoryRow
    wrap: ms.Wrap | None  # usable wrap, if any
    via: list[str] = field(default_factory=list)  # live reasons on the usable wrap

    @property
    def readable(self) -> bool:
        return self.wrap is not None and bool(self.via)


def reach(con: sqlite3.Connection, agent: Agent, row: ms.MemoryRow) -> Reach:
    wrap = usable_wrap(ms.get_wrap(con, row.id, agent.token_id), row, agent)
    return Reach(row, wrap, live_via(agent, row, wrap))


def judged(agent: Agent, row: ms.MemoryRow, wrap: ms.Wrap | None) -> tuple[Reach, str | None]:
    """One stored row for this agent: its Reach (served when readable) and, when it is not
    readable, the reason a key to it is owed (None: nothing is owed)."""
    r = Reach(row, usable_wrap(wrap, row, agent))
    r.via = live_via(agent, row, r.wrap)
    return r, None if r.readable else owed_reason(agent, row)


def live_agents(con: sqlite3.Connection, now: float) -> dict[str, Agent]:
    return {a.token_id: a for a in bearer.live_agents(con, now)}


def visible_or_404(con: sqlite3.Connection, agent: Agent, row_id: str, now: float | None = None) -> Reach:
    """The row as this agent reaches it; 404 for a missing id and for one it cannot see alike.
    Its own memory after `memory.save` ended (or was taken away) is no secret to its author: 403
    GRANT_EXPIRED (or INSUFFICIENT_GRANT) with the `permission_request` that gives it back."""
    row = ms.get_memory(con, row_id)
    if row is not None:
        r = reach(con, agent, row)
        if r.readable or (is_author(agent, row) and agent.access.save):
            return r
        if is_author(agent, row):
            raise insufficient(
                "memory.save",
                "this connection saved this memory, but it no longer holds "
                '"Save memories", which makes what it saved its own to read and edit',
                con=con,
                agent=agent,
                now=now,
            )
    raise HTTPProblem(404, "NOT_FOUND", "no memory with this id is visible to this connection")


async def agent_of(request: Request) -> Any:
    agent = bearer.agent_from_request(request)
    if inspect.isawaitable(agent):
        agent = await agent
    return agent


def owner_public_key(state: SandboxState) -> str | None:
    owner = getattr(state, "owner", None)
    return getattr(owner, "public_key_b64", None) if owner is not None else None


# ── wraps kept ─────────────────────────────────────────────────────────────────────────────


def admit(
    w: WrapIn,
    caller: Agent,
    agents: dict[str, Agent],
    row: ms.MemoryRow,
    *,
    check_write: bool,
    existing: Set[str] = frozenset(),
    removed: Set[str] = frozenset(),
) -> list[str]:
    """The reasons a grantee wrap is kept for: ones its recipient holds now (never `self`, never
    for the caller itself), minus removed labels, and with `check_write` only ones the caller
    writes, the memory already has, or `all`."""
    recipient = agents.get(w.token_id)
    if recipient is None or recipient.token_id == caller.token_id:
        return []
    out = []
    for v in w.via:
        if v == "self" or v in removed or not recipient.access.read.allows_via(v):
            continue
        if check_write and not (v == "all" or v in existing or writes(caller, v, row)):
            continue
        out.append(v)
    return out


def self_reasons(agent: Agent, row: ms.MemoryRow, self_via: list[str] | None, extra: Iterable[str]) -> list[str]:
    """The reasons the saver's own wrap is kept for. With `self_via`: exactly those it holds
    ("its own wrap is kept for these only, and with none it keeps no wrap"); without it: `self`
    (its own memory while it holds save) and the reasons the server can see it holds — every
    memory, the row's own topic, and the reasons on its admitted grantee wraps."""
    if self_via is not None:
        return [v for v in dict.fromkeys(self_via) if holds(agent, v, row)]
    out = ["self"] if holds(agent, "self", row) else []
    # `topic:<row id>` only under a grant naming that topic: then the row is the topic's own
    # entity row. Under `all` it is not a reason the server can see (most rows are no topic).
    own_topic = [f"topic:{row.id}"] if f"topic:{row.id}" in agent.access.read.topics else []
    for v in (["all"] if agent.access.read.all else []) + own_topic + list(extra):
        if v != "self" and v not in out and agent.access.read.allows_via(v):
            out.append(v)
    return out


def rotated_self_reasons(agent: Agent, row: ms.MemoryRow, reads_by: list[str], self_via: list[str] | None) -> list[str]:
    """A rotation: "The caller's own wrap keeps the reasons it reads the memory by, plus any in
    `self_via` it holds"."""
    out = ["self"] if holds(agent, "self", row) else []
    for v in list(reads_by) + list(self_via or []):
        if v not in out and holds(agent, v, row):
            out.append(v)
    return out


def store_wrap(
    con: sqlite3.Connection, row: ms.MemoryRow, agent: Agent, wrapped_key: str, via: list[str], now: float
) -> None:
    ms.put_wrap(con, ms.Wrap(row.id, agent.token_id, ms.key_fp(agent.public_key), row.kid, wrapped_key, via, now))


# ── legacy spaces ──────────────────────────────────────────────────────────────────────────


def space_covered(agent: Agent, space: ss.Space) -> bool:
    """A legacy space is covered by `memory.read` (Me) or `acctmem.read` on its account."""
    read = agent.access.read
    if space.kind == "me":
        return bool(read.all or read.categories or read.topics)
    return bool(read.account_wildcard or (space.account_id in read.accounts))

"""The owner's phone's sharing pass: wrap each row's key to every connection it now reaches.

`run_sharing_pass(state)` does what the Decoy app does in the background: for each stored row it
opens it as the owner (opening.py) and wraps the key to every live connection whose grants now
reach it (all, category, topic — a topic's own entity row, a link whose non-user ends are all
granted, as an `and:` reason — account), recording `via`. Rows it cannot open are reported with
the reason. Legacy space keys are converged the same way, and legacy rows it was asked to move
get their own keys first (moves.py). Afterwards every live connection is marked `shared_complete`.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from decoy_lab import memory
from decoy_lab.errors import CryptoError, WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.core import SandboxState, iso
from decoy_lab.sandbox.phone import moves, schedule
from decoy_lab.sandbox.phone.opening import Unopenable, approval, author_name, label_set, open_kept
from decoy_lab.sandbox.rules import auth
from decoy_lab.sandbox.rules.auth import Agent
from decoy_lab.sandbox.rules.reach import space_covered
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.sandbox.stores import spacestore as ss
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey


@dataclass
class ShareReport:
    """What one pass did: wraps added or re-reasoned, per connection, and rows it could not open."""

    at: float
    rows: int = 0
    opened: int = 0
    shared: int = 0
    updated: int = 0
    spaces_shared: int = 0
    per_connection: dict[str, int] = field(default_factory=dict)
    unreadable: list[Unopenable] = field(default_factory=list)
    unapproved: list[dict] = field(default_factory=list)

    text: str = ""

    def summary(self) -> str:
        return (
            f"{self.rows} rows, {self.opened} opened, {self.shared} new wraps, {self.updated} re-reasoned, "
            f"{len(self.unreadable)} the owner's app cannot open, {len(self.unapproved)} with unapproved labels"
        )

    def as_dict(self) -> dict:
        return {
            "at": iso(self.at),
            "rows": self.rows,
            "opened": self.opened,
            "shared": self.shared,
            "updated": self.updated,
            "spaces_shared": self.spaces_shared,
            "per_connection": dict(self.per_connection),
            "unreadable": [u.as_dict() for u in self.unreadable],
            "unapproved": list(self.unapproved),
            "text": self.text,
        }

    def __repr__(self) -> str:
        return f"<ShareReport {self.summary()}>"


def reasons(agent: Agent, row: ms.MemoryRow, plain: memory.Plain) -> list[str]:
    """Why this connection should read this row now, by its labels and live grants."""
    out = memory.reasons_for(agent.access.read, plain)
    if row.author_kind == "agent" and row.author_connection == agent.connection_id and agent.access.save:
        out = ["self", *out]
    return out


def run_sharing_pass(state: SandboxState) -> ShareReport:
    """Open every row as the owner and wrap its key to each connection that should read it.
    Legacy rows the phone was asked to move are moved first, so their new keys are shared here."""

    moves.move_asked(state)
    now = float(state.clock())
    owner_key = state.owner.key
    report = ShareReport(at=now)
    kept: dict = {}
    with state.store.tx() as con:
        agents = [a for a in auth.live_agents(con, now) if a.public_key]
        wraps, approved = ms.all_wraps(con), ms.all_approved_labels(con)
        for row in ms.all_memories(con):
            report.rows += 1
            opened = open_kept(row, owner_key, state.phone.opened, kept)  # unchanged: not opened again
            if isinstance(opened, Unopenable):
                opened.author = author_name(con, row)
                report.unreadable.append(opened)
                continue
            report.opened += 1
            plain, problem = approval(con, row, opened.plain)
            if problem is not None:
                report.unapproved.append({"id": row.id, "problem": problem})
            elif row.edited_by_author:
                ms.set_approved_labels(con, row.id, row.rev, label_set(plain), known=approved)
            have = {w.token_id: w for w in wraps.get(row.id, [])}
            before = report.shared + report.updated
            for agent in agents:
                via = reasons(agent, row, plain)
                if not via:
                    continue
                cur = have.get(agent.token_id)
                if cur is not None and cur.kid == row.kid and cur.key_fp == ms.key_fp(agent.public_key):
                    if cur.via != via:
                        ms.set_wrap_via(con, row.id, agent.token_id, via)
                        report.updated += 1
                    continue
                assert agent.public_key is not None  # live_agents were filtered on it
                wrapped = wire.b64encode(sealing.wrap_to_agent(opened.key, agent.public_key))
                ms.put_wrap(
                    con, ms.Wrap(row.id, agent.token_id, ms.key_fp(agent.public_key), row.kid, wrapped, via, now)
                )
                report.shared += 1
                report.per_connection[agent.token_id] = report.per_connection.get(agent.token_id, 0) + 1
            if report.shared + report.updated > before:  # newly readable: the sync feed carries it
                ms.log_change(con, "context_memory", row.id, "updated", now)
        ms.set_unopenable(con, [(u.id, u.problem, u.reason) for u in report.unreadable], now)
        report.spaces_shared = _converge_spaces(con, agents, owner_key)
        for agent in agents:
            ms.set_shared_complete(con, agent.token_id, now)
    report.text = report.summary()
    state.phone.nudged_at = None
    state.phone.opened = kept
    state.phone.last_share = report
    return report


def maybe_share_on_read(state: SandboxState, now: float) -> ShareReport | None:
    """The phone answering its push: a pass when one is due (schedule.due), else None."""
    return run_sharing_pass(state) if schedule.due(state, now) else None


def _converge_spaces(con: sqlite3.Connection, agents: list, owner_key: AgentKey) -> int:
    n = 0
    for space in ss.all_spaces(con):
        try:
            key = sealing.unwrap_as_owner(space.owner_wrap, owner_key)
        except (CryptoError, WireFormatError):
            continue
        for agent in agents:
            if not space_covered(agent, space):
                continue
            cur = ss.space_wrap(con, space.id, agent.token_id)
            if cur is not None and cur[0] == ms.key_fp(agent.public_key):
                continue
            ss.put_space_wrap(
                con,
                space.id,
                agent.token_id,
                ms.key_fp(agent.public_key),
                wire.b64encode(sealing.wrap_to_agent(key, agent.public_key)),
            )
            n += 1
    return n

"""The owner's phone's sharing pass: wrap each row's key to every connection it now reaches.

`run_sharing_pass(state)` does what the Decoy app does in the background: for each stored row it
opens it as the owner (opening.py) and wraps the key to every live connection whose grants now
reach it (all, category, topic — a topic's own entity row, a link whose non-user ends are all
granted, as an `and:` reason — account), recording `via`. Rows it cannot open are reported with
the reason. Legacy space keys are converged the same way, and legacy rows it was asked to move
get their own keys first (legacy_rows.py). Afterwards every live connection is marked `shared_complete`.

A pass runs five seconds after any write, on the sandbox's event loop, so it costs what changed,
not the vault: rows no write touched since the last pass (and no change of owner key or of a live
connection's key, name or access) are taken as that pass left them (`Settled`), and rows it looks
at again are opened again only when their stored bytes changed (opening.open_kept).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from html import escape
from typing import Any

from decoy_lab import memory
from decoy_lab.errors import CryptoError, WireFormatError
from decoy_lab.recipes import sealing
from decoy_lab.sandbox.checks import bearer, readcache
from decoy_lab.sandbox.checks.access_reasons import space_covered
from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.core import SandboxState, iso
from decoy_lab.sandbox.phone import legacy_rows, schedule
from decoy_lab.sandbox.phone.opening import Unopenable, approval, author_name, label_set, open_kept
from decoy_lab.sandbox.stores import memstore as ms
from decoy_lab.sandbox.stores import spacestore as ss
from decoy_lab.wire import layouts as wire
from decoy_lab.wire.crypto import AgentKey


@dataclass
class ShareReport:
    """What one pass did: wraps added or re-reasoned, per connection, and rows it could not open.
    Shown as a few lines of words (`lines`, `to_text`), and as HTML in a notebook."""

    at: float
    rows: int = 0
    opened: int = 0
    shared: int = 0
    updated: int = 0
    spaces_shared: int = 0
    per_connection: dict[str, int] = field(default_factory=dict)
    unreadable: list[Unopenable] = field(default_factory=list)
    unapproved: list[dict] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # token id -> the connection's name

    text: str = ""

    def summary(self) -> str:
        return (
            f"{self.rows} rows, {self.opened} opened, {self.shared} new wraps, {self.updated} re-reasoned, "
            f"{len(self.unreadable)} the owner's app cannot open, {len(self.unapproved)} with unapproved labels"
        )

    def headline(self) -> str:
        """One sentence that the lines under it bear out: what was looked at, what opened, what was shared."""
        if not self.rows:
            return "The owner's phone found no rows to share."
        opened = "all opened" if self.opened == self.rows else f"{self.opened} opened"
        cannot = f", {len(self.unreadable)} the owner's app cannot open" if self.unreadable else ""
        return (
            f"The owner's phone looked at {_n(self.rows, 'row')} ({opened}{cannot}): {_n(self.shared, 'new key wrap')}."
        )

    def lines(self) -> list[str]:
        """The pass in words, one fact a line, connections by name."""
        out = [
            f"{self.names.get(token, 'connection ' + token[:8])}: {_n(n, 'new key wrap')}"
            for token, n in self.per_connection.items()
        ]
        if self.updated:
            out.append(f"{_n(self.updated, 'wrap')} re-reasoned (a grant changed why a connection reads the row)")
        if self.spaces_shared:
            out.append(f"{_n(self.spaces_shared, 'legacy space key')} shared")
        for u in self.unreadable:
            out.append(f"cannot open {u.id[:8]}: {u.reason}" + (f" (written by {u.author})" if u.author else ""))
        for entry in self.unapproved:
            out.append(f"not shared by its labels {str(entry.get('id'))[:8]}: {entry.get('problem')}")
        if self.rows and not out:
            out.append("every connection already held the keys its grants reach")
        return out

    def to_text(self) -> str:
        return "\n".join([self.headline(), *(f"  {line}" for line in self.lines())])

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython's text view
        p.text(self.to_text())

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{escape(line)}</li>" for line in self.lines())
        return f"<div class='decoy-share-report'><b>{escape(self.headline())}</b><ul>{items}</ul></div>"

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


def _n(count: int, one: str) -> str:
    return f"{count} {one}{'' if count == 1 else 's'}"


def reasons(agent: Agent, row: ms.MemoryRow, plain: memory.Plain) -> list[str]:
    """Why this connection should read this row now, by its labels and live grants."""
    out = memory.reasons_for(agent.access.read, plain)
    if row.author_kind == "agent" and row.author_connection == agent.connection_id and agent.access.save:
        out = ["self", *out]
    return out


@dataclass
class Settled:
    """What the last pass left: a row nothing has touched since (no write to it or its wraps),
    under the same owner key and live connections, comes out of the next pass as it did, so it is
    not looked at again. `outcome`: row id -> its Unopenable or unapproved entry, or None."""

    generation: int
    looked_at: tuple
    outcome: dict


def _looked_at(owner_key: AgentKey, agents: list[Agent]) -> tuple:
    """Everything a row's outcome depends on besides the row, its wraps and its accepted labels
    (which only a pass writes)."""
    live = tuple(
        (a.token_id, a.connection_id, a.name, a.public_key, a.access.read, bool(a.access.save)) for a in agents
    )
    return owner_key.public_key_b64, live


def _to_look_at(settled: Settled | None, con: sqlite3.Connection, looked_at: tuple) -> set[str] | None:
    """The rows touched since the last pass, or None when every row must be looked at."""
    if settled is None or settled.looked_at != looked_at or ms.generation(con) < settled.generation:
        return None
    return set(ms.touched_since(con, settled.generation))


def run_sharing_pass(state: SandboxState) -> ShareReport:
    """Open every row as the owner and wrap its key to each connection that should read it (rows
    untouched since the last pass are taken as it left them: Settled). Legacy rows the phone was
    asked to move are moved first, so their new keys are shared here."""

    legacy_rows.move_asked(state)
    now = float(state.clock())
    owner_key = state.owner.key
    report = ShareReport(at=now)
    kept: dict = {}
    outcome: dict = {}
    with state.store.tx() as con:
        rows = readcache.of(state).rows.memories(con)  # first, before this transaction writes
        agents = [a for a in bearer.live_agents(con, now) if a.public_key]
        report.names = {a.token_id: a.name for a in agents}
        looked_at = _looked_at(owner_key, agents)
        settled = state.phone.settled
        todo = _to_look_at(settled, con, looked_at)
        if todo is None:
            wraps, approved = ms.all_wraps(con), ms.all_approved_labels(con)
        else:
            wraps, approved = {rid: ms.wraps_of(con, rid) for rid in todo}, None
        for row in rows:
            report.rows += 1
            if todo is not None and row.id not in todo:
                assert settled is not None
                _as_before(report, settled.outcome.get(row.id))
                outcome[row.id] = settled.outcome.get(row.id)
                if row.id in state.phone.opened:
                    kept[row.id] = state.phone.opened[row.id]
                continue
            opened = open_kept(row, owner_key, state.phone.opened, kept)  # unchanged: not opened again
            outcome[row.id] = _share_row(con, row, opened, agents, wraps.get(row.id, []), report, approved)
        ms.set_unopenable(con, [(u.id, u.problem, u.reason) for u in report.unreadable], now)
        report.spaces_shared = _converge_spaces(con, agents, owner_key)
        for agent in agents:
            ms.set_shared_complete(con, agent.token_id, now)
        state.phone.settled = Settled(ms.generation(con), looked_at, outcome)
    report.text = report.summary()
    state.phone.nudged_at = None
    state.phone.opened = kept
    state.phone.last_share = report
    return report


def _as_before(report: ShareReport, was: Any) -> None:
    """Count a row untouched since the last pass as that pass found it."""
    if isinstance(was, Unopenable):
        report.unreadable.append(was)
        return
    report.opened += 1
    if was is not None:
        report.unapproved.append(was)


def _share_row(
    con: sqlite3.Connection,
    row: ms.MemoryRow,
    opened: Any,
    agents: list[Agent],
    its_wraps: list[ms.Wrap],
    report: ShareReport,
    approved: dict | None,
) -> Any:
    """Wrap one opened row's key to each connection that should read it; its outcome (Settled)."""
    now = report.at
    if isinstance(opened, Unopenable):
        opened.author = author_name(con, row)
        report.unreadable.append(opened)
        return opened
    report.opened += 1
    plain, problem = approval(con, row, opened.plain)
    unapproved = None
    if problem is not None:
        unapproved = {"id": row.id, "problem": problem}
        report.unapproved.append(unapproved)
    elif row.edited_by_author:
        ms.set_approved_labels(con, row.id, row.rev, label_set(plain), known=approved)
    have = {w.token_id: w for w in its_wraps}
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
        ms.put_wrap(con, ms.Wrap(row.id, agent.token_id, ms.key_fp(agent.public_key), row.kid, wrapped, via, now))
        report.shared += 1
        report.per_connection[agent.token_id] = report.per_connection.get(agent.token_id, 0) + 1
    if report.shared + report.updated > before:  # newly readable: the sync feed carries it
        ms.log_change(con, "context_memory", row.id, "updated", now)
    return unapproved


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

"""What a read says while keys are owed: the `preparing` / `failed` / `*_unknown` report.

Built on the spec's schedule from the state's clock. A connection granted `everything` is the
one that "holds the vault key" (`everything` is the whole-vault key's grant), so it has no first
day of asks: `failed_unknown` at once.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.core import iso
from decoy_lab.sandbox.phone.schedule import DAY, key_time, unknown_base
from decoy_lab.sandbox.stores import memstore as ms

ASK_DAYS = 7


def retry_after(elapsed: float) -> int:
    """5 s in the first 15 minutes, 60 in the first hour, 300 in the first 4 hours, then 3600."""
    if elapsed < 15 * 60:
        return 5
    if elapsed < 3600:
        return 60
    if elapsed < 4 * 3600:
        return 300
    return 3600


def owed_at(agent: Agent, row: ms.MemoryRow, why: str) -> float:
    """When this row came to be owed to this connection's current key."""
    t = max(row.key_at, key_time(agent))
    if why != "self" and agent.newest_grant_at:
        t = max(t, float(agent.newest_grant_at))
    return t


PREPARING_SENTENCE = (
    "These memories are saved and are being shared with this connection by the owner's phone: "
    "read again after retry_after_seconds and carry on with what you can read. Do not save them "
    "again, report them missing or pair again."
)


FAILED_SENTENCE = (
    "Decoy has stopped asking the owner's phone on its own for these memories. Carry on without "
    "them; they read normally once the phone shares them, and a later read may ask once more."
)


UNKNOWN_PREPARING_SENTENCE = (
    "This connection holds a grant on a category, a topic or an account and nothing has "
    "been shared with its current key under it yet. Decoy is asking the owner's phone; it "
    "cannot tell whether any such memories exist. Do not pair again."
)


UNKNOWN_FAILED_SENTENCE = (
    "Nothing has been shared under this connection's category, topic or account grants, "
    "and Decoy is not asking the owner's phone for it on its own. It cannot tell whether "
    "anything exists to share."
)


CAP = 500


def report(
    con: sqlite3.Connection,
    agent: Agent,
    waiting: list[tuple[ms.MemoryRow, str]],
    wraps: dict[str, ms.Wrap],
    now: float,
) -> dict:
    """The `preparing` … `do_not` fields of a memories read for this connection."""
    out: dict[str, Any] = {}
    retry: list[int] = []
    failed_state = False
    done = ms.shared_complete_at(con, agent.token_id)
    if done is not None:
        # The phone finished a pass after these came to be owed and shared nothing for them: its labels
        # do not reach this connection (an account memory under `all`, say). A row it could not open
        # stays owed: the phone never decided about it.
        cannot = ms.unopenable_ids(con)
        waiting = [
            (row, why) for row, why in waiting if why == "self" or row.id in cannot or owed_at(agent, row, why) > done
        ]
    if waiting:
        newest = max(owed_at(agent, row, why) for row, why in waiting)
        elapsed = now - newest
        mine = [row.id for row, why in waiting if why == "self"]
        others = sum(1 for _, why in waiting if why != "self")
        if elapsed < ASK_DAYS * DAY:
            out.update(preparing=mine[:CAP], preparing_others=others)
            retry.append(retry_after(elapsed))
        else:
            last = max(newest + ASK_DAYS * DAY, ms.last_read_ask(con, agent.token_id) or 0.0)
            if now - last >= DAY:  # this read asks the phone once more
                ms.record_read_ask(con, agent.token_id, now)
                out.update(preparing=mine[:CAP], preparing_others=others)
                retry.append(30)
            else:
                failed_state = True
                out.update(
                    failed=mine[:CAP],
                    failed_others=others,
                    recovery="stopped_asking",
                    recovery_description=FAILED_SENTENCE,
                )
        if len(mine) > CAP:
            out.update(preparing_capped=True, preparing_total=len(waiting))
    unknown = _unknown_state(con, agent, wraps, now)
    if unknown is not None:
        kind, base = unknown
        if kind == "shared_complete":
            out.update(shared_complete=True, shared_complete_at=iso(base))
        elif kind == "preparing":
            out["preparing_unknown"] = True
            retry.append(retry_after(now - base))
        else:
            out["failed_unknown"] = True
            if failed_state or retry:
                out["failed_unknown_description"] = UNKNOWN_FAILED_SENTENCE
            else:
                out.update(recovery="stopped_asking", recovery_description=UNKNOWN_FAILED_SENTENCE)
    if retry:
        out.update(retry_after_seconds=min(retry), waiting_on="owner_phone")
        if not failed_state:
            known = bool(out.get("preparing") or out.get("preparing_others"))
            out.update(
                recovery="read_again_later",
                recovery_description=PREPARING_SENTENCE if known else UNKNOWN_PREPARING_SENTENCE,
                do_not=["pair_again", "report_missing"] if known else ["pair_again"],
            )
    return out


def _unknown_state(
    con: sqlite3.Connection, agent: Agent, wraps: dict[str, ms.Wrap], now: float
) -> tuple[str, float] | None:
    """("preparing" | "failed" | "shared_complete", since) for grants the server cannot see into."""
    read = agent.access.read
    if not (read.categories or read.topics or read.accounts or read.account_wildcard):
        return None
    fp = ms.key_fp(agent.public_key)
    if any(w.key_fp == fp and any(v != "self" for v in w.via) for w in wraps.values()):
        return None  # something has been shared with its current key under a grant
    base = unknown_base(agent)
    done = ms.shared_complete_at(con, agent.token_id)
    if done is not None and done >= base:
        return ("shared_complete", done)
    if holds_vault_key(agent):  # "there is no first day of asks: … `failed_unknown: true` at once"
        return ("failed", base)
    return ("preparing", base) if now - base < DAY else ("failed", base)


def holds_vault_key(agent: Agent) -> bool:
    """A connection granted `everything` holds the whole-vault key."""
    return any("everything" in r.permissions for r in getattr(agent, "rows", ()))

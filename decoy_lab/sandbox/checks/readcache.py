"""A connection's encoded memories list, kept until anything it depends on changes.

Reading 10,000 memories spends most of its time building the same rows and encoding the same JSON
when nothing changed since the last read. What the `memories` array holds depends only on:

- the stored rows and wraps: `memstore.generation`, which SQLite triggers move on every insert,
  update or delete, however it is made (a fault test writing SQL directly included);
- who asks: the token, its connection (authorship), its current public key (which wraps are
  usable), and what it holds right now to read and save (grants expire with no write at all, so
  the live access is part of the key, not a version number).

The `preparing` / `failed` report depends on the clock as well, so it is worked out on every read
from the cached waiting rows; only the rows as judged and encoded and what the report needs are kept.

After a change, a read judges and encodes again only the rows that changed (`judge`): a row's
answer depends on its stored row, this connection's wrap of it and the access above, and
`RowCache` hands out new objects for exactly the rows and wraps a change touched, so a row whose
row and wrap are the very objects judged last time, under the same access, comes out the same.
At 100,000 rows, 1 % edited, that is 1,000 rows judged and encoded instead of 100,000.

Underneath, `RowCache` keeps every stored memory row and each connection's wraps as last read,
and brings them up to date from `memory_touched` (the ids SQLite triggers record for every
change, however it is made): a read after a few changes fetches those rows again, not all 10,000
(13 MB of text out of SQLite costs ~35 ms; a few rows, well under one).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from decoy_lab.sandbox.checks.access_reasons import Reach, judged
from decoy_lab.sandbox.checks.bearer import Agent
from decoy_lab.sandbox.core import SandboxState
from decoy_lab.sandbox.stores import memstore as ms

MAX_ENTRIES = 16  # connections whose last answer is kept; the oldest is dropped first


@dataclass
class Judged:
    """One stored row as judged for one connection: with the row and wrap objects RowCache gave,
    its Reach (served when readable), why a key to it is owed when it is not (None: nothing is
    owed), and its JSON once encoded."""

    row: ms.MemoryRow
    wrap: ms.Wrap | None
    reach: Reach
    why: str | None
    json: bytes | None = None


@dataclass
class Listing:
    """One connection's read at one generation: every stored row judged, in served order."""

    stamp: tuple
    rows: list[Judged]
    wraps: dict  # memory id -> this token's Wrap (the report looks at them)
    afresh: int  # rows judged anew for it (the others were taken from the listing before)

    @cached_property
    def served(self) -> list[Judged]:
        return [j for j in self.rows if j.reach.readable]

    @cached_property
    def waiting(self) -> list[tuple[ms.MemoryRow, str]]:
        """[(MemoryRow, why)] rows owed to this connection that it cannot open yet."""
        return [(j.row, j.why) for j in self.rows if j.why is not None]  # `why` is None when readable

    @cached_property
    def by_id(self) -> dict[str, Judged]:
        return {j.row.id: j for j in self.rows}


def judge(
    previous: Listing | None, stamp: tuple, agent: Agent, rows: list[ms.MemoryRow], wraps: dict[str, ms.Wrap]
) -> Listing:
    """Every row judged for `agent` at `stamp`: taken from `previous` (this connection's last
    listing) when it judged the same row and wrap objects under the same access, else afresh."""
    before = previous.by_id if previous is not None and previous.stamp[1:] == stamp[1:] else {}
    out, afresh = [], 0
    for row in rows:
        wrap = wraps.get(row.id)
        was = before.get(row.id)
        if was is None or was.row is not row or was.wrap is not wrap:
            was, afresh = Judged(row, wrap, *judged(agent, row, wrap)), afresh + 1
        out.append(was)
    return Listing(stamp, out, wraps, afresh)


def stamp(con: sqlite3.Connection, agent: Agent) -> tuple[Any, ...]:
    """Everything a listing depends on besides the clock (see the module docstring)."""
    return (
        ms.generation(con),
        agent.token_id,
        agent.connection_id,
        ms.key_fp(agent.public_key),
        agent.access.read,
        bool(agent.access.save),
    )


class RowCache:
    """The stored rows and wraps as last read, brought up to date by the ids changes touched.
    Read it only in a transaction that has written no row or wrap before (list_memories): what
    it takes in is then committed, and a generation that went back (a restored file) resets it."""

    FULL_AFTER = 2000  # touched ids past which one query of everything is cheaper

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gen: int | None = None
        self._rows: dict[str, ms.MemoryRow] = {}
        self._ordered: list[ms.MemoryRow] | None = None
        self._wraps: dict[str, tuple[int, dict[str, ms.Wrap]]] = {}  # token -> (generation, wraps)

    def memories(self, con: sqlite3.Connection) -> list[ms.MemoryRow]:
        """`memstore.all_memories(con)`, the same rows in the same order (oldest first, then id)."""
        with self._lock:
            gen = ms.generation(con)
            ids = ms.touched_since(con, self._gen) if self._gen is not None and gen > self._gen else []
            if self._gen is None or gen < self._gen or len(ids) > self.FULL_AFTER:
                self._rows = {r.id: r for r in ms.all_memories(con)}
                self._ordered = None
            elif ids:
                for rid in ids:
                    row = ms.get_memory(con, rid)
                    if row is None:
                        self._rows.pop(rid, None)
                    else:
                        self._rows[rid] = row
                self._ordered = None
            self._gen = gen
            if self._ordered is None:  # a new list: one handed out earlier stays as it was
                self._ordered = sorted(self._rows.values(), key=lambda r: (r.created_at, r.id))
            return self._ordered

    def wraps(self, con: sqlite3.Connection, token_id: str) -> dict[str, ms.Wrap]:
        """`memstore.wraps_for_token(con, token_id)`: memory id -> this token's wrap."""
        with self._lock:
            gen = ms.generation(con)
            was, wraps = self._wraps.get(token_id, (None, {}))
            ids = ms.touched_since(con, was) if was is not None and gen > was else []
            if was is None or gen < was or len(ids) > self.FULL_AFTER:
                wraps = ms.wraps_for_token(con, token_id)
            elif ids:
                wraps = dict(wraps)  # a new dict: one handed out earlier stays as it was
                for mid in ids:
                    wrap = ms.get_wrap(con, mid, token_id)
                    if wrap is None:
                        wraps.pop(mid, None)
                    else:
                        wraps[mid] = wrap
            self._wraps[token_id] = (gen, wraps)
            return wraps

    def clear(self) -> None:
        with self._lock:
            self._gen, self._rows, self._ordered, self._wraps = None, {}, None, {}


class ReadCache:
    def __init__(self, max_entries: int = MAX_ENTRIES):
        self._entries: OrderedDict[str, Listing] = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries
        self.hits = self.misses = 0
        self.rows = RowCache()

    def get(self, token_id: str, current: tuple) -> tuple[Listing | None, Listing | None]:
        """(the listing kept for `current`, if any; else the connection's last one, if any)."""
        with self._lock:
            found = self._entries.get(token_id)
            if found is None or found.stamp != current:
                self.misses += 1
                return None, found
            self._entries.move_to_end(token_id)
            self.hits += 1
            return found, None

    def put(self, token_id: str, listing: Listing) -> None:
        with self._lock:
            self._entries[token_id] = listing
            self._entries.move_to_end(token_id)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every kept answer and row (a read after it reads everything from SQLite)."""
        with self._lock:
            self._entries.clear()
        self.rows.clear()


def of(state: SandboxState) -> ReadCache:
    """The sandbox's one cache (kept with its state)."""
    if state.read_cache is None:
        state.read_cache = ReadCache()
    return state.read_cache

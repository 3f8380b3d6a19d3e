"""A connection's encoded memories list, kept until anything it depends on changes.

Reading 10,000 memories spends most of its time building the same rows and encoding the same JSON
when nothing changed since the last read. What the `memories` array holds depends only on:

- the stored rows and wraps: `memstore.generation`, which SQLite triggers move on every insert,
  update or delete, however it is made (a fault test writing SQL directly included);
- who asks: the token, its connection (authorship), its current public key (which wraps are
  usable), and what it holds right now to read and save (grants expire with no write at all, so
  the live access is part of the key, not a version number).

The `preparing` / `failed` report depends on the clock as well, so it is worked out on every read
from the cached waiting rows; only the array and what the report needs are kept.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from . import memstore as ms
from .auth import Agent
from .core import SandboxState

MAX_ENTRIES = 16  # connections whose last answer is kept; the oldest is dropped first


@dataclass(frozen=True)
class Listing:
    """One connection's read at one generation."""

    stamp: tuple
    memories_json: bytes  # the encoded `memories` array, `[...]`
    waiting: list  # [(MemoryRow, why)] rows owed to this connection that it cannot open yet
    wraps: dict  # memory id -> this token's Wrap (the report looks at them)


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


class ReadCache:
    def __init__(self, max_entries: int = MAX_ENTRIES):
        self._entries: OrderedDict[str, Listing] = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries
        self.hits = self.misses = 0

    def get(self, token_id: str, current: tuple) -> Listing | None:
        with self._lock:
            found = self._entries.get(token_id)
            if found is None or found.stamp != current:
                self.misses += 1
                return None
            self._entries.move_to_end(token_id)
            self.hits += 1
            return found

    def put(self, token_id: str, listing: Listing) -> None:
        with self._lock:
            self._entries[token_id] = listing
            self._entries.move_to_end(token_id)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def of(state: SandboxState) -> ReadCache:
    """The sandbox's one cache (kept with its state)."""
    if state.read_cache is None:
        state.read_cache = ReadCache()
    return state.read_cache

"""cache.py: nothing of a cache file that does not authenticate is used — not even its clear head.

Issue 24 (finding 3): rewriting only the cursor in the head gave `CacheIgnored`, yet the forged
cursor was sent to /api/agent/sync first and the answer kept: the new file carried it, and later
reopens rebuilt the vault from stale rows ("nothing changed since" a cursor past every change).
Now the head is checked (a MAC under the cache key) before its cursor goes anywhere; a rejected
file is a cold load, anchored at /api/agent/sync/head.
"""

from __future__ import annotations

import warnings

import httpx
import orjson
import pytest

from decoy_lab import Connection, Sandbox, memory
from decoy_lab.store import cache
from decoy_lab.store.cache import MAGIC, CacheIgnored
from decoy_lab.store.profiles import ProfileStore

MEMORIES, SYNC, HEAD = "/api/agent/context/memories", "/api/agent/sync", "/api/agent/sync/head"
FORGED = str(2**62)  # past every change the sandbox will log: "nothing changed since" forever


@pytest.fixture(scope="module")
def demo():
    with Sandbox.start() as sandbox:
        sandbox.state.device_interval = 0
        yield sandbox


@pytest.fixture
def store(tmp_path):
    return ProfileStore(tmp_path / "cfg", use_keyring=False)


class Recorded:
    """A resumed connection whose requests (path and cursor) are recorded."""

    def __init__(self, store: ProfileStore):
        self.requests: list[tuple[str, str | None]] = []
        hook = lambda r: self.requests.append((r.url.path, r.url.params.get("cursor")))  # noqa: E731
        self.conn = Connection.resume("p", store=store, http=httpx.Client(event_hooks={"request": [hook]}))

    def load(self):
        self.requests.clear()
        try:
            return self.conn.load()
        finally:
            cache.settle()

    @property
    def paths(self) -> list[str]:
        return [p for p, _ in self.requests]

    @property
    def cursors(self) -> list[str | None]:
        return [c for p, c in self.requests if p == SYNC]


def forge_cursor(path, cursor: str) -> None:
    """Rewrite only the cursor in the file's clear head (its length field follows); every other
    byte stays as written."""
    blob = path.read_bytes()
    start = len(MAGIC) + 4
    size = int.from_bytes(blob[len(MAGIC) : start], "big")
    head = head_of(path)
    assert head["cursor"] is not None and head["cursor"] != cursor
    head["cursor"] = cursor
    forged = orjson.dumps(head)
    path.write_bytes(MAGIC + len(forged).to_bytes(4, "big") + forged + blob[start + size :])


def head_of(path) -> dict:
    blob = path.read_bytes()
    start = len(MAGIC) + 4
    return orjson.loads(blob[start : start + int.from_bytes(blob[len(MAGIC) : start], "big")])


def texts(vault) -> dict[str, str]:
    return {m.id: m.text for m in vault.models if isinstance(m, memory.Memory)}


def truth(store) -> dict[str, str]:
    """What a cold load with no cache reads now."""
    cache.clear(store.cache_path("p"))
    fresh = Connection.resume("p", store=store)
    try:
        return texts(fresh.load())
    finally:
        fresh.close()
        cache.settle()


def test_a_forged_cursor_is_never_sent_and_the_reopens_after_it_show_the_truth(demo, store):
    conn = Connection.pair(demo.url, name="cache head", on_link=lambda *a: None, profile="p", store=store)
    demo.owner.share()
    edited = conn.save("Takes the 7:10 train.")
    deleted = conn.save("Keeps the spare key under the mat.")
    conn.load()
    cache.settle()
    path = store.cache_path("p")
    forge_cursor(path, FORGED)

    conn.edit(edited, text="Takes the 8:15 train.")
    conn.delete(deleted)
    added = conn.save("Waters the ferns on Sundays.")

    again = Recorded(store)
    with pytest.warns(CacheIgnored, match="ignored and removed"):
        vault = again.load()
    assert FORGED not in again.cursors, "the forged cursor was sent to the server"
    assert HEAD in again.paths and MEMORIES in again.paths, "a cold load, anchored afresh"
    seen = texts(vault)
    assert vault.read == len(vault.served), "every row opened afresh: nothing of the file was used"
    assert seen[edited] == "Takes the 8:15 train." and deleted not in seen and seen[added].startswith("Waters")
    assert head_of(path)["cursor"] != FORGED, "the cursor kept is one the server gave for this read"

    # later reopens (new processes: the cache is opened each time) follow the server's cursor
    conn.edit(edited, text="Takes the 9:30 train.")
    conn.delete(added)
    added2 = conn.save("Reads on Sunday mornings.")
    for _ in range(2):
        later = Recorded(store)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            vault = later.load()
        assert FORGED not in later.cursors
        seen = texts(vault)
        assert seen[edited] == "Takes the 9:30 train.", "an edit made after the forgery is seen"
        assert added not in seen and deleted not in seen and seen[added2] == "Reads on Sunday mornings."
        later.conn.close()
    assert later.paths.count(MEMORIES) == 0 and vault.read == 0, "the last reopen: nothing changed"
    again.conn.close()
    assert truth(store) == seen
    conn.close()

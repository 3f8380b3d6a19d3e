"""`Connection.load`: one streamed GET of every row, read as it arrives, asked again after an
unknown outcome; with a saved profile, through its sealed cache and the sync feed (store/cache.py,
rules/syncfeed.py); then the legacy space rows and, when something refers to one, account names."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from decoy_lab.gcpause import gc_paused
from decoy_lab.rules import legacy, syncfeed
from decoy_lab.store import cache
from decoy_lab.transport.api import expect_object
from decoy_lab.transport.routes import MEMORIES
from decoy_lab.vault.read import Vault, read_vault
from decoy_lab.vault.waiting import WAITING_MEMBERS

Connection = Any  # client/connection.py imports this module, never the reverse
Progress = Callable[[int, int], None] | None


def load(conn: Connection, progress: Progress) -> Vault:
    s = conn.session
    local = conn.local_cache()
    read = functools.partial(read_retried, conn, progress=progress, fingerprints=local is not None)
    with gc_paused():  # thousands of long-lived, cycle-free objects: collector scans only cost
        vault = _without_cache(conn, read) if local is None else _through_cache(conn, local, read)
    vault.skipped_spaces = s.skipped_spaces
    if vault.accounts_named():  # names only when a memory or a link refers to an account
        vault.account_names = conn.account_names()
    s.vault = vault
    s.forget_listed_topics()  # topics made since the last load are listed by the server now
    return vault


def _without_cache(conn: Connection, read: Callable[[], Vault]) -> Vault:
    vault = read()
    vault.space_rows = legacy.load_spaces(conn.session)
    return vault


def _through_cache(conn: Connection, local: cache.VaultCache, read: Callable[..., Vault]) -> Vault:
    """Cached rows + sync: a reopen opens only what changed (cache.py)."""
    s = conn.session
    return local.load(
        first=s.vault is None or cache.rebuilt(s.vault),
        changes_since=lambda cursor: syncfeed.changes_since(s.get, cursor),
        anchor=lambda: syncfeed.anchor(s.get),
        read=read,
        key_cache=s.key_cache,
        space_rows=lambda: legacy.load_spaces(s),
        # only what /policies said in this process counts: a saved version may be stale
        access_version=conn._access.version if conn._access is not None else None,
    )


def read_retried(
    conn: Connection, opening: cache.Opening | None = None, *, progress: Progress, fingerprints: bool
) -> Vault:
    """One full read, asked again (bounded, with backoff) after an unknown outcome."""
    return conn.session.retry.run(lambda: read(conn, opening, progress=progress, fingerprints=fingerprints))


def read(conn: Connection, opening: cache.Opening | None, *, progress: Progress, fingerprints: bool) -> Vault:
    """One full read: rows opened while the rest downloads, unchanged ones from `opening`."""
    with conn._api.stream_array(MEMORIES, "memories", fingerprints=fingerprints) as answer:
        snapshot = opening.snapshot() if opening is not None else None  # the cache, once rows come
        if snapshot is not None:
            answer.parser.known = snapshot.by_fingerprint
        vault = _read_rows(conn, answer, progress, snapshot.reuse if snapshot is not None else None)
    expect_object(vault.answer, f"GET {MEMORIES}", **WAITING_MEMBERS)  # counted and shown next
    vault.fingerprints = answer.fingerprints
    return vault


def _read_rows(conn: Connection, answer: Any, progress: Progress, cached: Callable | None) -> Vault:
    s = conn.session
    return read_vault(
        answer,
        conn.agent_key,
        rest=lambda: answer.rest,
        key_cache=s.key_cache,
        workers=conn.workers,
        previous=s.vault,
        progress=progress,
        cached=cached,
    )

"""`Loader`: a connection's load — one streamed GET of every row, read as it arrives, asked again
after an unknown outcome; with a saved profile, through its sealed cache and the sync feed
(store/cache.py, protocol/syncfeed.py); then the legacy space rows and, when something refers to
one, account names."""

from __future__ import annotations

from collections.abc import Callable

from decoy_lab.client.grants import Grants
from decoy_lab.client.saved import Saved
from decoy_lab.gcpause import gc_paused
from decoy_lab.protocol import account_names, legacy, syncfeed
from decoy_lab.protocol.session import Session
from decoy_lab.store import cache
from decoy_lab.transport.api import expect_object
from decoy_lab.transport.routes import MEMORIES
from decoy_lab.vault.read import Vault, read_vault
from decoy_lab.vault.waiting import WAITING_MEMBERS

Progress = Callable[[int, int], None] | None


class Loader:
    """Loads for one connection: its session, what it keeps (`saved`: the cache), what it holds
    (`grants`: the access version a cached load is checked against), `workers` reading rows."""

    def __init__(self, session: Session, saved: Saved, grants: Grants, workers: int | None = None):
        self.session, self.saved, self.grants = session, saved, grants
        self.workers = workers

    def load(self, progress: Progress = None) -> Vault:
        s = self.session
        local = self.saved.local_cache()
        fingerprints = local is not None

        def read(opening: cache.Opening | None = None) -> Vault:
            return s.retry.run(lambda: self._read(opening, progress=progress, fingerprints=fingerprints))

        with gc_paused():  # thousands of long-lived, cycle-free objects: collector scans only cost
            vault = self._without_cache(read) if local is None else self._through_cache(local, read)
        vault.skipped_spaces = s.skipped_spaces
        if vault.accounts_named():  # names only when a memory or a link refers to an account
            vault.account_names = account_names.account_names(s)
        s.vault = vault
        s.forget_listed_topics()  # topics made since the last load are listed by the server now
        return vault

    def _without_cache(self, read: Callable[[], Vault]) -> Vault:
        vault = read()
        vault.space_rows = legacy.load_spaces(self.session)
        return vault

    def _through_cache(self, local: cache.VaultCache, read: Callable[..., Vault]) -> Vault:
        """Cached rows + sync: a reopen opens only what changed (cache.py)."""
        s, held = self.session, self.grants.held
        return local.load(
            first=s.vault is None or cache.rebuilt(s.vault),
            changes_since=lambda cursor: syncfeed.changes_since(s.get, cursor),
            anchor=lambda: syncfeed.anchor(s.get),
            read=read,
            key_cache=s.key_cache,
            space_rows=lambda: legacy.load_spaces(s),
            # only what /policies said in this process counts: a saved version may be stale
            access_version=held.version if held is not None else None,
        )

    def _read(self, opening: cache.Opening | None, *, progress: Progress, fingerprints: bool) -> Vault:
        """One full read: rows opened while the rest downloads, unchanged ones from `opening`."""
        s = self.session
        with s.api.stream_array(MEMORIES, "memories", fingerprints=fingerprints) as answer:
            snapshot = opening.snapshot() if opening is not None else None  # the cache, once rows come
            if snapshot is not None:
                answer.parser.known = snapshot.by_fingerprint
            vault = read_vault(
                answer,
                s.agent_key,
                rest=lambda: answer.rest,
                key_cache=s.key_cache,
                workers=self.workers,
                previous=s.vault,
                progress=progress,
                cached=snapshot.reuse if snapshot is not None else None,
            )
        expect_object(vault.answer, f"GET {MEMORIES}", **WAITING_MEMBERS)  # counted and shown next
        vault.keep_fingerprints(answer.fingerprints)
        return vault

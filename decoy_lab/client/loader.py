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
from decoy_lab.vault.reuse import Reuse
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
        with gc_paused():  # thousands of long-lived, cycle-free objects: collector scans only cost
            vault = self._without_cache(progress) if local is None else self._through_cache(local, progress)
        vault.skipped_spaces = s.skipped_spaces
        if vault.accounts_named():  # names only when a memory or a link refers to an account
            vault.account_names = account_names.account_names(s)
        s.vault = vault
        s.forget_listed_topics()  # topics made since the last load are listed by the server now
        return vault

    def _without_cache(self, progress: Progress) -> Vault:
        vault = self._read(Reuse(self.session.vault), progress, by_text=False)
        vault.space_rows = legacy.load_spaces(self.session)
        return vault

    def _through_cache(self, local: cache.VaultCache, progress: Progress) -> Vault:
        """Cached rows + sync: a reopen opens only what changed (cache.py). The file is opened
        while the feed is asked; nothing changed → the vault rebuilt from it, no GET, no RSA."""
        s, held = self.session, self.grants.held
        # the access version /policies gave in this process: a saved one may be stale
        version = held.version if held is not None else None
        with local.open(first=s.vault is None or cache.rebuilt(s.vault), key_cache=s.key_cache) as opening:
            changed, cursor = None, None
            asked = opening.cursor_if_unchanged(version)
            if asked is not None:
                changed, cursor = syncfeed.changes_since(s.get, asked)
                if changed is False:
                    if (snap := opening.snapshot()) is not None:
                        return local.carry_map(snap.vault(legacy.load_spaces(s)))
                    cursor = None  # the sealed part did not open: a cold load, anchored afresh
            # the cursor is taken before the read: a change made meanwhile is seen again next time, never lost
            cursor = cursor if cursor is not None else syncfeed.anchor(s.get)
            vault = self._read(Reuse(s.vault, opening.snapshot), progress, by_text=True)
            snap = opening.snapshot()  # its keys restored before the space rows, even if no row came
        vault.space_rows = legacy.load_spaces(s)
        return local.keep(vault, dict(s.key_cache), cursor=cursor, access_version=version, snapshot=snap)

    def _read(self, reuse: Reuse, progress: Progress, *, by_text: bool) -> Vault:
        """One full read, asked again after an unknown outcome: rows opened while the rest
        downloads, those an earlier load read taken from `reuse`; `by_text`: the stream reader
        fingerprints each row's text and hands out what `reuse` knows by it, unparsed."""
        s = self.session

        def once() -> Vault:
            with s.api.stream_array(MEMORIES, "memories", known=reuse if by_text else None) as answer:
                vault = read_vault(
                    answer,
                    s.agent_key,
                    rest=lambda: answer.rest,
                    key_cache=s.key_cache,
                    reuse=reuse,
                    workers=self.workers,
                    progress=progress,
                )
            expect_object(vault.answer, f"GET {MEMORIES}", **WAITING_MEMBERS)  # counted and shown next
            vault.keep_fingerprints(answer.fingerprints)
            return vault

        return s.retry.run(once)
